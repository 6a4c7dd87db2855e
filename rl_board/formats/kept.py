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
from collections.abc import Hashable, Sequence
from typing import Any

import pyarrow as pa

from rl_board.formats import schema as S

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
    """
    names = table.column_names
    if GROUP not in names or ADVANTAGE not in names or not table.num_rows:
        return table
    kind = table.schema.field(ADVANTAGE).type
    if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
        return table
    advantages = table.column(ADVANTAGE).to_pylist()
    zero = [a is not None and math.isfinite(a) and abs(a) <= ZERO_TOLERANCE for a in advantages]
    keys = group_keys(table)
    flat = all_true_per_group(keys, zero)
    judged = [k is not None and a is not None for k, a in zip(keys, advantages, strict=True)]
    return marked(
        table,
        [not f if j else None for f, j in zip(flat, judged, strict=True)],
        [ZERO_ADVANTAGE if j and f else None for f, j in zip(flat, judged, strict=True)],
    )


def group_keys(table: pa.Table) -> list[Hashable | None]:
    """Each row's group within its step (None for a row without a group)."""
    groups = table.column(GROUP).to_pylist()
    steps = table.column(STEP).to_pylist() if STEP in table.column_names else [None] * len(groups)
    return [None if g is None else (s, str(g)) for s, g in zip(steps, groups, strict=True)]


def all_true_per_group(keys: Sequence[Hashable | None], flags: Sequence[bool]) -> list[bool]:
    """For each row: whether ``flags`` holds for every row of its group (False for a row without a group)."""
    every: dict[Hashable, bool] = {}
    for k, flag in zip(keys, flags, strict=True):
        if k is not None:
            every[k] = every.get(k, True) and flag
    return [k is not None and every[k] for k in keys]


def marked(table: pa.Table, kept: list[bool | None], reasons: list[str | None]) -> pa.Table:
    """``kept`` and ``dropped_reason`` set where given (None leaves a row as it was); a row a format already
    marked not kept keeps its own reason. A log's own ``kept`` column that is not booleans is left alone."""
    if KEPT in table.column_names and not pa.types.is_boolean(table.schema.field(KEPT).type):
        return table
    old_kept = _column(table, KEPT)
    old_reason = _column(table, DROPPED)
    new_kept, new_reason = [], []
    for before, why, now, reason in zip(old_kept, old_reason, kept, reasons, strict=True):
        if now is None or before is False:
            new_kept.append(before)
            new_reason.append(why)
        else:
            new_kept.append(now)
            new_reason.append(reason)
    return with_kept(table, new_kept, new_reason)


def with_kept(table: pa.Table, kept: list[bool | None], reasons: list[str | None]) -> pa.Table:
    """The table with these ``kept`` and ``dropped_reason`` columns (replacing any it had)."""
    table = _replaced(table, KEPT, pa.array(kept, pa.bool_()))
    return _replaced(table, DROPPED, pa.array(reasons, pa.string()))


def _column(table: pa.Table, name: str) -> list[Any]:
    return table.column(name).to_pylist() if name in table.column_names else [None] * table.num_rows


def _replaced(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    if name in table.column_names:
        return table.set_column(table.schema.get_field_index(name), name, values)
    return table.append_column(name, values)
