"""One JSON line -> one sample record -> Arrow, with a reason for every refusal.

The careful path, used for any line the fast readers cannot take as it is:
it accepts what real trainers write (NaN, Infinity, ``step`` as text or as a
whole float, numeric strings in arrays, invalid UTF-8 repaired) and refuses
anything else with a message a person understands.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pyarrow as pa
import ujson

from rl_board import config
from rl_board.columns import empty_table
from rl_board.formats import conversation
from rl_board.formats import schema as S
from rl_board.lazy import pc
from rl_board.rollouts.read import string_arrays

_INT_TEXT = re.compile(r"\s*-?\d+\s*")
BOM = b"\xef\xbb\xbf"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# Deepest nesting of arrays and objects a line may have (the line's own object is level 1). pyarrow.json
# crashes the process on a few thousand levels, Python code recurses, and the cache's Arrow IPC reader
# refuses types nested 64 deep, so a 64-level line (63-level column) is the most a sample can be.
MAX_DEPTH = 64
_OPENERS_ONLY = bytes(b for b in range(256) if b not in b"[{\n")  # translate(None, ...) keeps [ { and \n
_STRUCTURE_ONLY = bytes(b for b in range(256) if b not in b'"[]{}\n')
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
SURROGATE_NOTE = "lone surrogate replaced with \ufffd"


class BadLine(ValueError):
    """A line that cannot become a sample; the message is shown to users."""


def parse_line(raw: bytes) -> tuple[dict[str, Any], str | None]:
    """One line -> a normalised sample and an optional repair note, or BadLine."""
    obj, note = load_object(raw)
    return normalise(obj), note


def load_object(raw: bytes) -> tuple[dict[str, Any], str | None]:
    """One line -> the JSON object it holds (not yet checked) and an optional repair note, or BadLine."""
    notes = []
    if raw.startswith(BOM):
        raw = raw[len(BOM) :]
    if too_deep(raw):  # before any parser: they recurse
        raise BadLine(DEPTH_REASON)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        notes.append("invalid UTF-8 bytes were replaced with \ufffd")
    try:
        obj = ujson.loads(text)
    except (ValueError, OverflowError, RecursionError) as exc:
        raise BadLine(f"not valid JSON ({_short(exc)})") from None
    if not isinstance(obj, dict):
        raise BadLine(f"not a JSON object (found {_kind(obj)})")
    if may_hold_surrogates(raw):
        obj, replaced = without_lone_surrogates(obj)
        if replaced:
            notes.append(SURROGATE_NOTE)
    return obj, "; ".join(notes) or None


VALUE_DEPTH = MAX_DEPTH - 1  # how deep a value of a line may nest: the line's own object is a level
DEPTH_REASON = f"nested deeper than {MAX_DEPTH} levels"


def too_deep(raw: bytes, limit: int = MAX_DEPTH, squares: int | None = None) -> bool:
    """Whether one line (or a value's text, against ``VALUE_DEPTH``) nests arrays / objects deeper than
    ``limit`` (strings understood). ``squares``: the "[" it holds, when the caller has counted them."""
    squares = raw.count(b"[") if squares is None else squares
    if squares + raw.count(b"{") <= limit:  # each level needs an opener: the usual, cheap answer
        return False
    return bool(deep_lines(raw, limit))


def deep_lines(data: bytes, limit: int = MAX_DEPTH) -> list[int]:
    """0-based numbers of the lines of ``data`` that nest deeper than ``limit``.

    O(bytes) in C, so it can guard every block before a recursive parser sees it: a line can only be
    that deep if it holds more than ``limit`` of ``[`` / ``{`` (one ``translate``); only then are the
    brackets outside strings counted exactly.
    """
    openers = np.frombuffer(data.translate(None, _OPENERS_ONLY), np.uint8)
    ends = np.flatnonzero(openers == 10)
    if len(openers) - len(ends) <= limit:
        return []
    per_line = np.diff(np.concatenate(([-1], ends, [len(openers)]))) - 1
    if not (per_line > limit).any():
        return []
    return _exact_deep_lines(data, limit)


def _exact_deep_lines(data: bytes, limit: int) -> list[int]:
    """Lines whose depth outside strings exceeds ``limit``; depth and quote parity restart at each newline.

    Exact on every valid JSON prefix (a parser stops at the first error, so what follows one cannot make
    it recurse). Escaped backslashes, then escaped quotes, are dropped first so every ``"`` left opens or
    closes a string.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    marks = np.frombuffer(data.translate(None, _STRUCTURE_ONLY), np.uint8)
    found: list[np.ndarray] = []
    line, parity, depth = 0, 0, 0  # carried from chunk to chunk
    step = config.sizes().structure_scan_bytes
    for at in range(0, len(marks), step):
        chunk = marks[at : at + step]
        newline = chunk == 10
        local = np.cumsum(
            newline, dtype=np.int64
        )  # line of each mark within the chunk (a newline starts one)
        quotes = np.cumsum(chunk == 34, dtype=np.int64) + parity
        inside = ((quotes - np.concatenate(([0], quotes[newline]))[local]) & 1).astype(bool)
        delta = (chunk == 91).astype(np.int64) + (chunk == 123) - (chunk == 93) - (chunk == 125)
        delta[inside] = 0
        level = np.cumsum(delta) + depth
        level -= np.concatenate(([0], level[newline]))[local]
        found.append(line + local[level > limit])
        parity = int(quotes[-1] - (quotes[newline][-1] if local[-1] else 0)) & 1
        depth, line = int(level[-1]), line + int(local[-1])
    return np.unique(np.concatenate(found)).tolist() if found else []


def too_long_reason(size: int, limit: int) -> str:
    """'line of 1,073,741,826 bytes is longer than the 256 MB limit (not read)'."""
    cap = f"{limit >> 20} MB" if limit % (1 << 20) == 0 else f"{limit:,}-byte"
    return f"line of {size:,} bytes is longer than the {cap} limit (not read)"


def may_hold_surrogates(raw: bytes) -> bool:
    """Whether a line may escape a UTF-16 surrogate (``\\ud800``-``\\udfff``); valid UTF-8 cannot hold one."""
    return b"\\ud" in raw or b"\\uD" in raw


def without_lone_surrogates(value: Any) -> tuple[Any, bool]:
    """``value`` with every lone surrogate in its strings and keys replaced by U+FFFD, and whether any was.

    JSON may escape half a surrogate pair; Python keeps it, but no UTF-8 (so no Arrow string) can hold it.
    Recursion is bounded: lines deeper than MAX_DEPTH never get here.
    """
    if isinstance(value, str):
        fixed, count = _LONE_SURROGATE.subn("\ufffd", value)
        return fixed, count > 0
    if isinstance(value, list):
        items = [without_lone_surrogates(v) for v in value]
        if any(changed for _, changed in items):
            return [v for v, _ in items], True
        return value, False
    if isinstance(value, dict):
        pairs = [(without_lone_surrogates(k), without_lone_surrogates(v)) for k, v in value.items()]
        if any(kc or vc for (_, kc), (_, vc) in pairs):
            return {k: v for (k, _), (v, _) in pairs}, True
        return value, False
    return value, False


def normalise(obj: dict[str, Any]) -> dict[str, Any]:
    """Check and coerce the known fields of one sample; keep extra keys."""
    return check_arrays(normalise_shallow(obj))


def normalise_shallow(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything but the items of the arrays (the bulk path checks those at once)."""
    out = dict(obj)
    if S.LINE in out:  # the line number goes there: a logged "_line" is kept as "_line_logged"
        out[logged_name(S.LINE, out.keys())] = out.pop(S.LINE)
    out[S.STEP] = _step(obj.get(S.STEP))
    if isinstance(obj.get(S.PROMPT), list) or isinstance(obj.get(S.RESPONSE), list) or S.MESSAGES in obj:
        out[S.PROMPT], out[S.RESPONSE], out[S.MESSAGES] = conversation.as_fields(
            obj.get(S.PROMPT), obj.get(S.RESPONSE), obj.get(S.MESSAGES)
        )
    for name in S.SCALAR_FIELDS:
        out[name] = _number(name, obj.get(name))
    for name in S.TEXT_FIELDS:
        out[name] = _text(name, out.get(name))
    for name in (*S.FLOAT_LIST_FIELDS, *S.STRING_LIST_FIELDS):
        value = obj.get(name)
        if (
            value is not None
            and not isinstance(value, list)
            and type(value) is not np.ndarray  # the simd path's numbers
            and type(value) is not string_arrays.JsonText  # and texts of arrays
        ):
            kind = "strings" if name in S.STRING_LIST_FIELDS else "numbers"
            raise BadLine(f"'{name}' is {_kind(value)}, not a list of {kind}")
    return out


def logged_name(name: str, taken: Any) -> str:
    """``<name>_logged`` (more ``_logged`` while that is taken too): where a logged key displaced by a
    column of rl-board's own is kept."""
    new = f"{name}_logged"
    while new in taken:
        new += "_logged"
    return new


def check_arrays(record: dict[str, Any]) -> dict[str, Any]:
    """Check (and coerce) every item of the array fields, in place."""
    for name in S.FLOAT_LIST_FIELDS:
        record[name] = _float_list(name, record.get(name))
    record[S.RESPONSE_TOKENS] = _string_list(S.RESPONSE_TOKENS, record.get(S.RESPONSE_TOKENS))
    return record


def _step(value: Any) -> int | None:
    """The step as an integer; None when missing (the file's name may give it: ``contract.finish``
    decides)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise BadLine("'step' is a boolean, not an integer")
    step = None
    if isinstance(value, int):
        step = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        # Past 2**53 a float is no exact step (orjson turns too-large integers into floats).
        step = int(value) if abs(value) < 2**53 else _INT64_MAX + 1
    elif isinstance(value, str) and _INT_TEXT.fullmatch(value):
        step = int(value)
    if step is None:
        raise BadLine(f"'step' is not an integer ({_preview(value)})")
    if not _INT64_MIN <= step <= _INT64_MAX:
        raise BadLine("'step' is out of range (more than 64 bits)")
    return step


def _number(name: str, value: Any) -> float | None:
    """A number; a boolean as 1 or 0 (trainers log pass/fail that way: verl's ``acc``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, (int, float)):
        raise BadLine(f"'{name}' is {_kind(value)}, not a number")
    try:
        return float(value)
    except OverflowError:
        raise BadLine(f"'{name}' is too large a number") from None


def _text(name: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise BadLine(f"'{name}' is {_kind(value)}, not text")


def _float_list(name: str, value: Any) -> list[float] | np.ndarray | None:
    """Numbers (or numeric strings, or null = NaN), exactly what the bulk path accepts."""
    if value is None or type(value) is np.ndarray:  # float64 already (the simd path's)
        return value
    if not isinstance(value, list):
        raise BadLine(f"'{name}' is {_kind(value)}, not a list of numbers")
    try:
        return np.fromiter(value, np.float64, count=len(value)).tolist()
    except (TypeError, ValueError, OverflowError):
        raise BadLine(_first_bad_number(name, value)) from None


def _first_bad_number(name: str, values: list) -> str:
    for i, item in enumerate(values):
        try:
            float(np.nan if item is None else item)
        except (TypeError, ValueError, OverflowError):
            return f"'{name}[{i}]' is {_kind(item)}, not a number"
    return f"'{name}' holds something that is not a number"


def _string_list(name: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    if type(value) is string_arrays.JsonText:  # not all strings (``string_arrays.from_texts`` refused it)
        if too_deep(value, VALUE_DEPTH):
            raise BadLine(DEPTH_REASON)
        value = string_arrays.as_list(value)
    if not isinstance(value, list):
        raise BadLine(f"'{name}' is {_kind(value)}, not a list of strings")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise BadLine(f"'{name}[{i}]' is {_kind(item)}, not a string")
    return value


def records_to_table(records: list[dict[str, Any]]) -> pa.Table:
    """Build a table with the known schema plus inferred extra columns."""
    if not records:  # the empty table of a run not yet read (pa.array of a list would import pandas)
        return empty_table({**{fld.name: fld.type for fld in S.PARSE_SCHEMA}, S.LINE: pa.int64()})
    columns: dict[str, pa.Array] = {}
    for fld in S.PARSE_SCHEMA:
        columns[fld.name] = pa.array([r.get(fld.name) for r in records], type=fld.type)
    extras = extra_names(records)
    for name in extras:
        columns[name] = extra_array([r.get(name) for r in records])
    columns[S.LINE] = pa.array([r[S.LINE] for r in records], pa.int64())
    return pa.table(columns)


def extra_names(records: list[dict[str, Any]]) -> list[str]:
    """The log's own keys, in the order they first appear (as pyarrow.json orders its columns)."""
    return [
        k for k in dict.fromkeys(k for r in records for k in r) if k not in S.KNOWN_FIELDS and k != S.LINE
    ]


def extra_array(values: list[Any]) -> pa.Array:
    """User fields keep their type when it is consistent, else become JSON text; booleans among numbers are
    numbers (1 or 0), whichever comes first."""
    kinds = {type(v) for v in values if v is not None}
    if bool in kinds and len(kinds) > 1 and kinds <= {bool, int, float}:
        try:
            return pa.array([None if v is None else float(v) for v in values], pa.float64())
        except OverflowError:
            pass
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([None if v is None else _as_text(v) for v in values], pa.string())


def _as_text(value: Any) -> str:
    if type(value) is np.ndarray:  # a row an adapter kept as an array
        value = value.tolist()
    return value if isinstance(value, str) else ujson.dumps(value, ensure_ascii=False)


def unify_tables(tables: list[pa.Table]) -> pa.Table:
    """Concatenate tables whose extra columns may differ in presence or type."""
    tables = [t for t in tables if t.num_columns]
    if not tables:
        return records_to_table([])
    first = tables[0].schema
    if all(t.schema.equals(first) for t in tables[1:]):  # the usual run: a 10 GB run joined in 4 ms, not 30
        return pa.concat_tables(tables)
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.concat_tables(_extras_as_text(tables), promote_options="permissive")


def _extras_as_text(tables: list[pa.Table]) -> list[pa.Table]:
    """The extra columns whose types differ between the tables as JSON text (as one block of all their
    rows would hold them); the others as they are."""
    kinds: dict[str, set[pa.DataType]] = {}
    for table in tables:
        for f in table.schema:
            if f.name not in S.KNOWN_FIELDS and f.name != S.LINE and not pa.types.is_null(f.type):
                kinds.setdefault(f.name, set()).add(f.type)
    clashing = {name for name, found in kinds.items() if len(found) > 1 and not _numbers(found)}
    widened = {name for name, found in kinds.items() if len(found) > 1 and _numbers(found)}
    out = []
    for table in tables:
        for i, name in enumerate(table.column_names):
            if name in widened:  # numbers and booleans: numbers, as pyarrow makes of them in one block
                table = table.set_column(i, name, pc.cast(table.column(i), pa.float64()))
            if name not in clashing:
                continue
            values = [None if v is None else _as_text(v) for v in table.column(i).to_pylist()]
            table = table.set_column(i, name, pa.array(values, pa.string()))
        out.append(table)
    return out


def _numbers(kinds: set[pa.DataType]) -> bool:
    """Integers, floats and booleans: they meet as numbers (a boolean as 1 or 0)."""
    return all(pa.types.is_integer(k) or pa.types.is_floating(k) or pa.types.is_boolean(k) for k in kinds)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    names = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }
    return names.get(type(value), type(value).__name__)


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 80 else text[:77] + "..."
