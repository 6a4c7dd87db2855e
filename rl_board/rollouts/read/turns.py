"""The reading stage that makes a sample a trajectory: its turns kept in one shape, and why it ended.

Run by ``contract.finish`` on every path, after the format's own ``adapt``:

- a ``messages`` column (chat messages from the log, or from a format) is
  brought to one shape (``formats.trajectory.normalize``): tool calls flat,
  each tool result matched to its call, failed calls marked;
- a sample with no messages whose text carries a chat template's markers or
  their stripped role lines (verl's agent-loop dumps, SkyRL, AReaL, TRL tool
  runs) is split into its turns (``formats.chat_text``) unless the columns
  show it holds only its prompt's turns and one answer: such a sample keeps
  its text, and its turns are told from it when asked
  (``rollouts.trajectories``), so a single-turn run pays nothing here;
- ``finish_reason`` is put in one vocabulary (``formats.trajectory``), the logged
  word kept beside it as ``finish_reason_logged`` on the rows where it differs
  (so a row reads the same whichever rows share its block). Where none was
  logged, a trajectory that ends on calls nothing answered was stopped by its
  loop's limit: the format says which (``Format.open_calls_end``).

How the turns were found is counted in the table's schema metadata
(``TURNS_KEY``), so the Fields panel can say it (and why text was kept whole).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pyarrow as pa

from rl_board.formats import chat_text, trajectory
from rl_board.formats import schema as S
from rl_board.lazy import pc

TURNS_KEY = b"rl_board.turns"  # {"how": {"chatml": n, ...}, "kept whole": {reason: n}}
FINISH_LOGGED = "finish_reason_logged"


def complete(table: pa.Table, open_calls_end: str = "") -> pa.Table:
    """The table with its trajectories in one shape (see the module docstring)."""
    found: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    completed = _messages(table, found, kept)
    if completed is not None:
        messages, open_ends = completed
        table = table.set_column(table.schema.get_field_index(S.MESSAGES), S.MESSAGES, messages)
    table = _finish_reasons(table)
    if open_calls_end and completed is not None:
        table = _cut_by_limit(table, open_calls_end, open_ends)
    if found or kept:
        meta = dict(table.schema.metadata or {})
        meta[TURNS_KEY] = json.dumps({"how": dict(found), "kept whole": dict(kept)}).encode()
        table = table.replace_schema_metadata(meta)
    return table


def _messages(table: pa.Table, found: Counter[str], kept: Counter[str]) -> tuple[pa.Array, list[bool]] | None:
    """The ``messages`` column normalized and completed from text, and per row whether its trajectory ends on
    calls nothing answered (``trajectory.ends_on_open_calls``, told while the messages are at hand); None when
    nothing changes."""
    logged = table.column(S.MESSAGES)
    candidates = _text_candidates(table, logged)
    if logged.null_count == table.num_rows and not pc.any(candidates).as_py():
        return None
    prompts, responses = table.column(S.PROMPT), table.column(S.RESPONSE)
    out: list[str | None] = []
    open_ends: list[bool] = []
    for i, (raw, maybe) in enumerate(zip(logged.to_pylist(), candidates.to_pylist(), strict=True)):
        normal: list[dict[str, Any]] | None = None
        if raw is not None:
            listed = trajectory.parsed(raw)
            normal = None if listed is None else trajectory.normalize(listed)
            found["logged messages"] += listed is not None
        elif maybe:
            normal = _from_text(prompts[i].as_py(), responses[i].as_py(), found, kept)
        out.append(raw if normal is None else trajectory.to_json(normal))
        open_ends.append(normal is not None and trajectory.ends_on_open_calls(normal))
    return pa.array(out, pa.string()), open_ends


def _text_candidates(table: pa.Table, logged: pa.ChunkedArray) -> pa.Array:
    """Rows with no logged messages whose text may hold more turns than a prompt and one answer (one look over
    whole columns, ``chat_text.may_hold_turns``, before any is split)."""
    maybe = chat_text.may_hold_turns(table.column(S.PROMPT), table.column(S.RESPONSE))
    return (
        pc.and_(pc.is_null(logged), maybe).combine_chunks()
        if isinstance(logged, pa.ChunkedArray)
        else pc.and_(pc.is_null(logged), maybe)
    )


def _from_text(
    prompt: str | None, response: str | None, found: Counter[str], kept: Counter[str]
) -> list[dict[str, Any]] | None:
    """Messages split from the text, normalized, else None (the text says why it was kept whole)."""
    split = chat_text.split_sample(prompt, response)
    if not split.how:
        kept[split.note or chat_text.PLAIN] += 1
        return None
    found[split.how] += 1
    return trajectory.normalize(split.messages)


def _finish_reasons(table: pa.Table) -> pa.Table:
    """``finish_reason`` in one vocabulary; the logged word kept as ``finish_reason_logged`` where it
    differs."""
    column = table.column(S.FINISH_REASON)
    if column.null_count == table.num_rows:
        return table
    logged = column.to_pylist()
    words = [trajectory.finish_reason(v) for v in logged]
    table = table.set_column(
        table.schema.get_field_index(S.FINISH_REASON), S.FINISH_REASON, pa.array(words, pa.string())
    )
    differs = [None if v is None or w == v else str(v) for w, v in zip(words, logged, strict=True)]
    if (
        any(d is not None for d in differs) and FINISH_LOGGED not in table.column_names
    ):  # per row: blocks agree
        table = table.append_column(FINISH_LOGGED, pa.array(differs, pa.string()))
    return table


def _cut_by_limit(table: pa.Table, reason: str, open_ends: list[bool]) -> pa.Table:
    """``reason`` as the finish of each trajectory with none logged that ends on calls nothing answered."""
    finish = table.column(S.FINISH_REASON).to_pylist()
    changed = False
    for i, (word, open_end) in enumerate(zip(finish, open_ends, strict=True)):
        if word is None and open_end:
            finish[i], changed = reason, True
    if not changed:
        return table
    return table.set_column(
        table.schema.get_field_index(S.FINISH_REASON), S.FINISH_REASON, pa.array(finish, pa.string())
    )


def read_how(schema: pa.Schema) -> tuple[dict[str, int], dict[str, int]]:
    """How the turns of a table were found, and why text was kept whole (counts), from its metadata."""
    raw = (schema.metadata or {}).get(TURNS_KEY)
    if raw is None:
        return {}, {}
    try:
        data = json.loads(raw)
        return dict(data.get("how", {})), dict(data.get("kept whole", {}))
    except (ValueError, AttributeError):
        return {}, {}
