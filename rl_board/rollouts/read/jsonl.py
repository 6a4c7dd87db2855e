"""Rollout JSONL -> Arrow, fast when lines are clean and exact when they are not.

A block of complete lines goes to ``pyarrow.json`` (both cores, straight to
columns). If the block fails as a whole (one bad line, a string ``step``, a
BOM ...), it is cut into pieces that are retried the same way, and only the
pieces that still fail are read line by line with ujson, where every line is
either normalised into a sample or reported with its line number and a reason
(records.py).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.json as pj

from rl_board import config
from rl_board.formats import schema as S
from rl_board.lazy import pc
from rl_board.rollouts.read.records import (
    BOM,
    BadLine,
    deep_lines,
    logged_name,
    parse_line,
    records_to_table,
    unify_tables,
)

_PARSE_OPTIONS = pj.ParseOptions(explicit_schema=S.PARSE_SCHEMA, unexpected_field_behavior="infer")
# pyarrow splits a block into parse tasks of this size, one per core at a time.
_PIECE_LINES = 256
# A line that does not start with "{" is never a sample, and pyarrow.json
# crashes the process (SIGSEGV, pyarrow 26) on some of them, e.g. " null".
_FIRST_NOT_OBJECT = re.compile(rb"[ \t\r\n]*[^{ \t\r\n]")
_LATER_NOT_OBJECT = re.compile(rb"\n[ \t\r]*[^{ \t\r\n]")


@dataclass
class ParsedBlock:
    """Samples of a block of lines, and what could not be used."""

    table: pa.Table
    bad: list[tuple[int, str]] = field(default_factory=list)
    warnings: list[tuple[int, str]] = field(default_factory=list)
    blank: int = 0
    lines: int | None = None  # how many lines the block had, when the parser counted them anyway


def parse_block(data: bytes, *, first_line: int) -> ParsedBlock:
    """Parse complete lines numbered from ``first_line`` (1-based)."""
    n_lines = data.count(b"\n")
    if first_line == 1 and data.startswith(BOM):
        data = data[len(BOM) :]
    table = fast_parse(data)
    if table is not None and table.num_rows == n_lines:
        lines = pa.array(range(first_line, first_line + n_lines), pa.int64())
        return drop_missing_step(with_lines(table, lines))
    return _parse_pieces(data, first_line)


def fast_parse(data: bytes) -> pa.Table | None:
    """Columns from pyarrow.json, or None if any line needs the careful path.

    pyarrow copies invalid UTF-8 into string columns unchecked; a full
    validation of the text columns sends such blocks down the line path.
    A deeply nested line would crash pyarrow (SIGSEGV) and is never given to it.
    """
    if not_all_objects(data) or deep_lines(data):
        return None
    try:
        table = pj.read_json(io.BytesIO(data), read_options=read_options(), parse_options=_PARSE_OPTIONS)
        for column in table.columns:
            if has_text(column.type):
                column.validate(full=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return table if token_strings_whole(table) else None


def token_strings_whole(table: pa.Table) -> bool:
    """No null item inside ``response_tokens`` (the careful path refuses one: a token is a string)."""
    if S.RESPONSE_TOKENS not in table.column_names:
        return True
    column = table.column(S.RESPONSE_TOKENS)
    return all(chunk.values.null_count == 0 for chunk in column.chunks) if column.num_chunks else True


def read_options() -> pj.ReadOptions:
    """pyarrow.json splits a block into parse tasks of ``Sizes.json_block_bytes``, one per core at a time."""
    return pj.ReadOptions(block_size=config.sizes().json_block_bytes)


def not_all_objects(data: bytes) -> bool:
    """Whether some line does not start with "{" (never a sample; some crash pyarrow.json)."""
    return bool(_FIRST_NOT_OBJECT.match(data) or _LATER_NOT_OBJECT.search(data))


def with_lines(table: pa.Table, lines: pa.Array) -> pa.Table:
    """Append the line numbers as ``_line``; a logged ``_line`` key is kept as ``_line_logged``."""
    if S.LINE in table.column_names:
        taken = set(table.column_names)
        table = table.rename_columns(
            [logged_name(n, taken) if n == S.LINE else n for n in table.column_names]
        )
    return table.append_column(S.LINE, lines)


def has_text(kind: pa.DataType) -> bool:
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return True
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return has_text(kind.value_type)
    if pa.types.is_struct(kind):
        return any(has_text(f.type) for f in kind)
    return False


def drop_missing_step(table: pa.Table) -> ParsedBlock:
    """pyarrow reads a line without ``step`` as a null step: report those."""
    steps = table.column(S.STEP)
    if steps.null_count == 0:
        return ParsedBlock(table)
    missing = steps.is_null()
    lines = table.column(S.LINE).filter(missing).to_pylist()
    bad = [(line, "missing 'step'") for line in lines]
    return ParsedBlock(table.filter(pc.invert(missing)), bad=bad)


def _parse_pieces(data: bytes, first_line: int) -> ParsedBlock:
    lines = data.split(b"\n")[:-1]
    numbered = [(first_line + i, raw) for i, raw in enumerate(lines) if raw.strip()]
    result = ParsedBlock(pa.table({}), blank=len(lines) - len(numbered))
    tables = []
    for start in range(0, len(numbered), _PIECE_LINES):
        piece = numbered[start : start + _PIECE_LINES]
        table = fast_parse(b"\n".join(raw for _, raw in piece) + b"\n")
        if table is not None and table.num_rows == len(piece):
            lines_col = pa.array([n for n, _ in piece], pa.int64())
            part = drop_missing_step(with_lines(table, lines_col))
        else:
            part = _parse_lines(piece)
        tables.append(part.table)
        result.bad += part.bad
        result.warnings += part.warnings
    result.table = unify_tables(tables)
    return result


def _parse_lines(piece: list[tuple[int, bytes]]) -> ParsedBlock:
    records: list[dict[str, Any]] = []
    bad: list[tuple[int, str]] = []
    warnings: list[tuple[int, str]] = []
    for number, raw in piece:
        try:
            record, note = parse_line(raw)
        except BadLine as exc:
            bad.append((number, str(exc)))
            continue
        if note:
            warnings.append((number, note))
        record[S.LINE] = number
        records.append(record)
    return ParsedBlock(records_to_table(records), bad=bad, warnings=warnings)
