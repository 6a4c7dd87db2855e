"""Rollout JSONL -> Arrow, fast when lines are clean and exact when they are not.

A block of complete lines goes to ``pyarrow.json`` (both cores, straight to
columns). If the block fails as a whole (one bad line, a string ``step``, a
BOM ...), it is cut into pieces that are retried the same way, and only the
pieces that still fail are read line by line with ujson, where every line is
either normalised into a sample or reported with its line number and a reason.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import ujson

from rl_board.data import schema as S

_PARSE_OPTIONS = pj.ParseOptions(explicit_schema=S.PARSE_SCHEMA, unexpected_field_behavior="infer")
# pyarrow splits a block into parse tasks of this size, one per core at a time.
_READ_OPTIONS = pj.ReadOptions(block_size=4 * 1024 * 1024)
_PIECE_LINES = 256
_INT_TEXT = re.compile(r"\s*-?\d+\s*")
# A line that does not start with "{" is never a sample, and pyarrow.json
# crashes the process (SIGSEGV, pyarrow 26) on some of them, e.g. " null".
_FIRST_NOT_OBJECT = re.compile(rb"[ \t\r\n]*[^{ \t\r\n]")
_LATER_NOT_OBJECT = re.compile(rb"\n[ \t\r]*[^{ \t\r\n]")
_BOM = b"\xef\xbb\xbf"


@dataclass
class ParsedBlock:
    """Samples of a block of lines, and what could not be used."""

    table: pa.Table
    bad: list[tuple[int, str]] = field(default_factory=list)
    warnings: list[tuple[int, str]] = field(default_factory=list)
    blank: int = 0


class BadLine(ValueError):
    """A line that cannot become a sample; the message is shown to users."""


def iter_blocks(
    stream: BinaryIO, *, start: int, block_bytes: int
) -> Iterator[tuple[bytes, int]]:
    """Yield blocks of complete lines from ``start`` with the offset after each.

    The bytes after the last newline are a line still being written: they are
    not yielded, so a reader resumes there next time.
    """
    stream.seek(start)
    carry = b""
    offset = start
    while True:
        chunk = stream.read(block_bytes)
        if not chunk:
            return
        data = carry + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            continue
        block, carry = data[: cut + 1], data[cut + 1 :]
        offset += len(block)
        yield block, offset


def parse_block(data: bytes, *, first_line: int) -> ParsedBlock:
    """Parse complete lines numbered from ``first_line`` (1-based)."""
    n_lines = data.count(b"\n")
    if first_line == 1 and data.startswith(_BOM):
        data = data[len(_BOM) :]
    table = _fast_parse(data)
    if table is not None and table.num_rows == n_lines:
        lines = pa.array(range(first_line, first_line + n_lines), pa.int64())
        return _drop_missing_step(table.append_column(S.LINE, lines))
    return _parse_pieces(data, first_line)


def _fast_parse(data: bytes) -> pa.Table | None:
    """Columns from pyarrow.json, or None if any line needs the careful path.

    pyarrow copies invalid UTF-8 into string columns unchecked; a full
    validation of the text columns sends such blocks down the line path.
    """
    if _FIRST_NOT_OBJECT.match(data) or _LATER_NOT_OBJECT.search(data):
        return None
    try:
        table = pj.read_json(io.BytesIO(data), read_options=_READ_OPTIONS, parse_options=_PARSE_OPTIONS)
        for column in table.columns:
            if _has_text(column.type):
                column.validate(full=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return table


def _has_text(kind: pa.DataType) -> bool:
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return True
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _has_text(kind.value_type)
    if pa.types.is_struct(kind):
        return any(_has_text(f.type) for f in kind)
    return False


def _drop_missing_step(table: pa.Table) -> ParsedBlock:
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
        table = _fast_parse(b"\n".join(raw for _, raw in piece) + b"\n")
        if table is not None and table.num_rows == len(piece):
            lines_col = pa.array([n for n, _ in piece], pa.int64())
            part = _drop_missing_step(table.append_column(S.LINE, lines_col))
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


def parse_line(raw: bytes) -> tuple[dict[str, Any], str | None]:
    """One line -> a normalised sample and an optional repair note, or BadLine."""
    note = None
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        note = "invalid UTF-8 bytes were replaced with \ufffd"
    try:
        obj = ujson.loads(text)
    except (ValueError, OverflowError, RecursionError) as exc:
        raise BadLine(f"not valid JSON ({_short(exc)})") from None
    if not isinstance(obj, dict):
        raise BadLine(f"not a JSON object (found {_kind(obj)})")
    return normalise(obj), note


def normalise(obj: dict[str, Any]) -> dict[str, Any]:
    """Check and coerce the known fields of one sample; keep extra keys."""
    return check_arrays(normalise_shallow(obj))


def normalise_shallow(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything but the items of the arrays (the bulk path checks those at once)."""
    out = dict(obj)
    out[S.STEP] = _step(obj.get(S.STEP))
    for name in S.SCALAR_FIELDS:
        out[name] = _number(name, obj.get(name))
    for name in S.TEXT_FIELDS:
        out[name] = _text(name, obj.get(name))
    for name in (*S.FLOAT_LIST_FIELDS, *S.STRING_LIST_FIELDS):
        value = obj.get(name)
        if value is not None and not isinstance(value, list):
            kind = "strings" if name in S.STRING_LIST_FIELDS else "numbers"
            raise BadLine(f"'{name}' is {_kind(value)}, not a list of {kind}")
    return out


def check_arrays(record: dict[str, Any]) -> dict[str, Any]:
    """Check (and coerce) every item of the array fields, in place."""
    for name in S.FLOAT_LIST_FIELDS:
        record[name] = _float_list(name, record.get(name))
    record[S.RESPONSE_TOKENS] = _string_list(S.RESPONSE_TOKENS, record.get(S.RESPONSE_TOKENS))
    return record


def _step(value: Any) -> int:
    if value is None:
        raise BadLine("missing 'step'")
    if isinstance(value, bool):
        raise BadLine("'step' is a boolean, not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT_TEXT.fullmatch(value):
        return int(value)
    raise BadLine(f"'step' is not an integer ({_preview(value)})")


def _number(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadLine(f"'{name}' is {_kind(value)}, not a number")
    return float(value)


def _text(name: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise BadLine(f"'{name}' is {_kind(value)}, not text")


def _float_list(name: str, value: Any) -> list[float] | None:
    """Numbers (or numeric strings, or null = NaN), exactly what the bulk path accepts."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise BadLine(f"'{name}' is {_kind(value)}, not a list of numbers")
    try:
        return np.fromiter(value, np.float64, count=len(value)).tolist()
    except (TypeError, ValueError):
        raise BadLine(_first_bad_number(name, value)) from None


def _first_bad_number(name: str, values: list) -> str:
    for i, item in enumerate(values):
        try:
            float(np.nan if item is None else item)
        except (TypeError, ValueError):
            return f"'{name}[{i}]' is {_kind(item)}, not a number"
    return f"'{name}' holds something that is not a number"


def _string_list(name: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise BadLine(f"'{name}' is {_kind(value)}, not a list of strings")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise BadLine(f"'{name}[{i}]' is {_kind(item)}, not a string")
    return value


def records_to_table(records: list[dict[str, Any]]) -> pa.Table:
    """Build a table with the known schema plus inferred extra columns."""
    columns: dict[str, pa.Array] = {}
    for fld in S.PARSE_SCHEMA:
        columns[fld.name] = pa.array([r.get(fld.name) for r in records], type=fld.type)
    extras = sorted({k for r in records for k in r} - S.KNOWN_FIELDS - {S.LINE})
    for name in extras:
        columns[name] = extra_array([r.get(name) for r in records])
    columns[S.LINE] = pa.array([r[S.LINE] for r in records], pa.int64())
    return pa.table(columns)


def extra_array(values: list[Any]) -> pa.Array:
    """User fields keep their type when it is consistent, else become JSON text."""
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([None if v is None else _as_text(v) for v in values], pa.string())


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else ujson.dumps(value, ensure_ascii=False)


def unify_tables(tables: list[pa.Table]) -> pa.Table:
    """Concatenate tables whose extra columns may differ in presence or type."""
    tables = [t for t in tables if t.num_columns]
    if not tables:
        return records_to_table([])
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.concat_tables(_extras_as_text(tables), promote_options="permissive")


def _extras_as_text(tables: list[pa.Table]) -> list[pa.Table]:
    out = []
    for table in tables:
        for i, name in enumerate(table.column_names):
            if name in S.KNOWN_FIELDS or name == S.LINE:
                continue
            values = [None if v is None else _as_text(v) for v in table.column(i).to_pylist()]
            table = table.set_column(i, name, pa.array(values, pa.string()))
        out.append(table)
    return out


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 80 else text[:77] + "..."
