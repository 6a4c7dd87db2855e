"""The stages every parse path shares, so a file reads the same whichever path its bytes take.

A block's raw table comes from a fast path (pyarrow.json, simdjson, a Parquet
read, under the format's renames) or from the careful record path (one line at
a time, naming every refusal). Either way it then goes through:

- ``conform`` (fast paths; the careful path does the same per record in
  ``records.normalise``): every known field in its parse type, chat message
  lists rendered as text with the conversation kept in ``messages``;
- ``finish``: the step from the file name where a line has none, lines without
  a step refused, the reward composed from a field map's sum, the format's own
  ``adapt``, groups with zero advantage marked not kept (``formats.kept``), the
  trajectories in one shape (``turns``), and one rule for the warnings about
  missing responses and rewards.

The property test in ``tests/unit/test_parse_contract.py`` holds the paths equal.
"""

from __future__ import annotations

import pyarrow as pa

from rl_board.formats import Format, Reading, conversation, fieldmap, kept, rewards
from rl_board.formats import schema as S
from rl_board.lazy import pc
from rl_board.rollouts.read import turns
from rl_board.rollouts.read.jsonl import ParsedBlock, drop_missing_step

_CHAT = (S.PROMPT, S.RESPONSE)
TOKEN_IDS = "response_token_ids"  # a response logged as token ids only


def conform(table: pa.Table) -> pa.Table:
    """Every parse-schema field present with its type (cast), then the log's other columns in their order.

    Raises an Arrow error when a column cannot take its type; the caller then takes the careful path.
    """
    table = _chats_as_text(table)
    columns, fields = [], []
    for fld in S.PARSE_SCHEMA:
        if fld.name in table.column_names:
            columns.append(table.column(fld.name).cast(fld.type))
        else:
            columns.append(pa.nulls(table.num_rows, fld.type))
        fields.append(fld)
    for name in table.column_names:
        if name not in S.KNOWN_FIELDS:
            columns.append(table.column(name))
            fields.append(table.schema.field(name))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=table.schema.metadata))


def _chats_as_text(table: pa.Table) -> pa.Table:
    """Prompt or response columns of chat messages (TRL's conversational tables) as text plus ``messages``."""
    listed = [
        n
        for n in (*_CHAT, S.MESSAGES)
        if n in table.column_names and pa.types.is_list(table.schema.field(n).type)
    ]
    if not listed:
        return table
    names = table.column_names
    values = {
        n: table.column(n).to_pylist() if n in names else [None] * table.num_rows
        for n in (*_CHAT, S.MESSAGES)
    }
    rows = [conversation.as_fields(p, r, m) for p, r, m in zip(*values.values(), strict=True)]
    for k, name in enumerate((*_CHAT, S.MESSAGES)):
        column = [row[k] for row in rows]
        if name in names:
            table = table.set_column(names.index(name), name, pa.array(column))
        elif any(v is not None for v in column):
            table = table.append_column(name, pa.array(column, pa.string()))
    return table


def finish(parsed: ParsedBlock, *, fmt: Format, reading: Reading, named_step: int | None) -> ParsedBlock:
    """The shared end of every path (see the module docstring); ``parsed.table`` has ``_line``."""
    table = parsed.table
    if named_step is not None and table.column(S.STEP).null_count:
        table = table.set_column(
            table.schema.get_field_index(S.STEP),
            S.STEP,
            pc.fill_null(table.column(S.STEP), pa.scalar(named_step, pa.int64())),
        )
    stepped = drop_missing_step(table)
    out = ParsedBlock(
        stepped.table,
        bad=sorted(parsed.bad + stepped.bad),
        warnings=list(parsed.warnings),
        blank=parsed.blank,
        lines=parsed.lines,
    )
    if not out.table.num_rows:
        return out
    terms = fieldmap.reward_terms(reading.fields.get(fieldmap.REWARD, ""))
    if terms:
        out.table = rewards.with_reward(out.table, terms, "field map")
    adapted = fmt.adapt(out.table, reading.options)
    out.table = turns.complete(kept.zero_advantage(adapted.table), open_calls_end=fmt.open_calls_end)
    lines = out.table.column(S.LINE)
    out.warnings += [(lines[row].as_py(), note) for row, note in adapted.notes]
    out.warnings = sorted(out.warnings + missing_response_or_reward(out.table))
    return out


def missing_response_or_reward(table: pa.Table) -> list[tuple[int, str]]:
    """One warning per sample without a response or a reward (null, or NaN: a row no function scored).

    A response logged as token ids only (open-instruct, prime-rl's token exports) is a response: a tokenizer
    shows it.
    """
    out = []
    lines = table.column(S.LINE)
    for name in (S.RESPONSE, S.REWARD):
        column = table.column(name)
        missing = column.is_null()
        if name == S.RESPONSE and TOKEN_IDS in table.column_names:
            missing = pc.and_(missing, table.column(TOKEN_IDS).is_null())
        if name == S.REWARD:
            missing = pc.or_(missing, pc.fill_null(pc.is_nan(column), False))
        out += [(line, f"no {name} in this sample") for line in lines.filter(missing).to_pylist()]
    return out
