"""Kept and discarded: whether a logged rollout counted in training, and why not.

Trainers generate more than they train on: prime-rl writes every episode to
``all/`` and the trained-on ones to ``effective/``, NeMo-RL masks some samples
out of the loss, episodes that failed are dropped, and a GRPO group whose
rewards were all equal has zero advantage everywhere, so it teaches nothing.
rl-board shows such rollouts instead of hiding them: each gets ``kept``
(False: not trained on, or contributed nothing) and ``dropped_reason``.
Where the log says nothing about it, both stay empty.

A format marks what its records say (an error, a mask, membership of
``effective/``); the zero-advantage rule below is one table rule for every
format that logs a group and an advantage, run by the reading stage after the
format's ``adapt``. It sees one block of a file at a time: a group whose rows
a block boundary splits is judged on the rows of each part. The trainers that
log advantages write a group's samples together (TRL, open-instruct, prime-rl
``effective/``), and an all-zero group is all zero in every part, so this can
differ only when a mixed group's part happens to hold only zero advantages.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from rl_board import columns
from rl_board.formats import schema as S
from rl_board.lazy import pc

KEPT, DROPPED = S.KEPT, S.DROPPED_REASON
GROUP, ADVANTAGE, STEP, REWARD = "group", "advantage", S.STEP, S.REWARD
ZERO_ADVANTAGE = "zero advantage: the group's rewards were all equal"
ZERO_TOLERANCE = 1e-6  # an advantage this small is zero (float32 arithmetic on equal rewards)


def error_reason(kind: Any, message: Any) -> str:
    """``error: <type>: <message>``, short enough for a table cell."""
    text = ": ".join(str(p).strip() for p in (kind, message) if p not in (None, ""))
    text = " ".join(text.split())
    return f"error: {text[:160] + '…' if len(text) > 160 else text}" if text else "error"


def zero_advantage(table: pa.Table) -> pa.Table:
    """Rows of a group (per step) whose advantages are all zero marked not kept, with ``ZERO_ADVANTAGE``.

    Applied where the table has a ``group`` and a numeric ``advantage``: the other rows of those tables are
    kept (unless a format already said otherwise). A row without a group or an advantage is not judged.
    Whole columns: a row by row pass took ~1 us a row, on every block of every format that logs both.
    """
    names = table.column_names
    if GROUP not in names or ADVANTAGE not in names or not table.num_rows:
        return table
    kind = table.schema.field(ADVANTAGE).type
    if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
        return table
    # (an integer past 2**53 is cast near enough)
    advantages = pc.cast(table.column(ADVANTAGE), pa.float64(), safe=False)
    present = columns.to_numpy(pc.is_valid(advantages))
    values = columns.to_numpy(pc.fill_null(advantages, math.nan))
    with np.errstate(invalid="ignore"):
        zero = present & np.isfinite(values) & (np.abs(values) <= ZERO_TOLERANCE)
    codes = group_codes(table)
    grouped = codes >= 0
    flat = np.zeros(len(codes), dtype=bool)  # every row of its group zero
    if grouped.any():
        not_zero = np.bincount(codes[grouped], weights=~zero[grouped])
        flat[grouped] = not_zero[codes[grouped]] == 0
    return marked(table, grouped & present, flat)


def group_codes(table: pa.Table) -> np.ndarray:
    """Each row's group within its step as a number from 0 (equal for rows of one group of one step); -1
    for a row without a group. Group ids are compared as text, as a log may write ``7`` or ``"7"``."""
    group = value_codes(_as_text(table.column(GROUP)), nulls=False)
    step = value_codes(table.column(STEP), nulls=True) if STEP in table.column_names else np.zeros_like(group)
    pairs = step * (int(group.max(initial=-1)) + 1) + group
    out = np.full(len(group), -1, dtype=np.int64)
    grouped = group >= 0
    out[grouped] = np.unique(pairs[grouped], return_inverse=True)[1].reshape(-1)  # numbered densely
    return out


def value_codes(column: pa.ChunkedArray | pa.Array, *, nulls: bool) -> np.ndarray:
    """Dictionary codes of a column's values; a null is a value of its own (``nulls``) or -1."""
    whole = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    encoded = pc.dictionary_encode(whole, null_encoding="encode" if nulls else "mask")
    return columns.to_numpy(pc.fill_null(encoded.indices, -1)).astype(np.int64)


def marked(table: pa.Table, judged: np.ndarray, flat: np.ndarray) -> pa.Table:
    """The judged rows marked kept unless ``flat`` (not kept, ``ZERO_ADVANTAGE``); the other rows, and a
    row a format already marked not kept (with its own reason), stay as they were. A log's own ``kept``
    column that is not booleans is left alone."""
    if KEPT in table.column_names and not pa.types.is_boolean(table.schema.field(KEPT).type):
        return table
    names, n = table.column_names, table.num_rows
    before = table.column(KEPT).combine_chunks() if KEPT in names else pa.nulls(n, pa.bool_())
    why = _as_text(table.column(DROPPED)) if DROPPED in names else pa.nulls(n, pa.string())
    refused = columns.to_numpy(pc.fill_null(pc.invert(before), False))  # a format said no
    now = pa.array(judged & ~refused)
    reasons = pc.if_else(pa.array(flat), pa.scalar(ZERO_ADVANTAGE), pa.scalar(None, pa.string()))
    table = _replaced(table, KEPT, pc.if_else(now, pa.array(~flat), before))
    return _replaced(table, DROPPED, pc.if_else(now, reasons, why))


def with_kept(table: pa.Table, kept: list[bool | None], reasons: list[str | None]) -> pa.Table:
    """The table with these ``kept`` and ``dropped_reason`` columns (replacing any it had)."""
    table = _replaced(table, KEPT, pa.array(kept, pa.bool_()))
    return _replaced(table, DROPPED, pa.array(reasons, pa.string()))


def _as_text(column: pa.ChunkedArray) -> pa.Array:
    """A column as one string array: text as it is, anything else cast, or written out by Python where
    Arrow has no cast (a list or a struct as a group id, a log's own reasons as raw bytes)."""
    whole = column.combine_chunks()
    if pa.types.is_string(whole.type):
        return whole
    try:
        return pc.cast(whole, pa.string())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return pa.array([None if v is None else str(v) for v in whole.to_pylist()], pa.string())


def _replaced(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    if name in table.column_names:
        return table.set_column(table.schema.get_field_index(name), name, values)
    return table.append_column(name, values)
