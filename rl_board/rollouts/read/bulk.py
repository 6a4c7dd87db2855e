"""The long-line path: simdjson (or orjson) per line, then whole columns built at once.

Token-level rollouts are long lines dominated by float arrays. simdjson reads
each line and hands the known float arrays over as packed doubles (no Python
float per token), about 2.3x faster than orjson plus ``np.fromiter`` on them,
which itself beats pyarrow.json about 2x per core (see benchmarks/load.py).

simdjson only ever *accepts* a line here: whatever it refuses or might read
differently (a parse error, a BOM, a key given twice) goes to orjson, exactly as
before, and lines orjson refuses (NaN, Infinity, a BOM, bad UTF-8, broken JSON)
go through the careful ujson path in records.py. So every path accepts and
rejects exactly the same lines, and a line simdjson accepts reads as orjson
reads it (tests/unit/test_simd_path.py). Without the simdjson package the
orjson path does it all.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, cast

try:
    import simdjson
except ImportError:  # pragma: no cover - an optional speed-up
    simdjson = None  # type: ignore[assignment]  # mypy cannot type a module-or-None name

import numpy as np
import orjson
import pyarrow as pa

from rl_board import config
from rl_board.formats import schema as S
from rl_board.rollouts.read import jsonl, string_arrays
from rl_board.rollouts.read import records as rec
from rl_board.rollouts.read.string_arrays import JsonText

_NOT_PARSED = object()
_SQUARE = ord("[")
_FLOAT_LISTS = frozenset(S.FLOAT_LIST_FIELDS)
_STRING_LISTS = frozenset(S.STRING_LIST_FIELDS)
USE_SIMD = simdjson is not None  # tests turn it off to compare both readers
_ARRAY = simdjson.Array if simdjson else None
_OBJECT = simdjson.Object if simdjson else None
_F64 = np.dtype(np.float64)


def parse_long_lines(data: bytes, first_line: int) -> jsonl.ParsedBlock:
    """Parse a block of complete lines (1-based numbers from ``first_line``).

    Lines simdjson reads are checked for a nested array it would flatten by their "[" (``simd_read``).
    The usual line's every "[" opens one of its top-level arrays; those lines are checked together, by
    one count of the block's "[" (a line-by-line scan cost ~9% of a load), and only when the block's count
    is off are they counted one by one and the lines that differ read again by orjson.
    """
    records: list[dict[str, Any] | None] = []
    result = jsonl.ParsedBlock(pa.table({}))
    parser = simd_parser()
    view = memoryview(data)
    unchecked: list[tuple[int, int, int, int, int]] = []  # (record, line, start, end, its "[") of usual lines
    claimed = counted = 0  # the "[" of those lines, and of every other line
    i = start = 0
    while (end := data.find(b"\n", start)) >= 0:
        number = first_line + i
        raw = view[start:end]
        try:
            if end - start < 64 and not data[start:end].strip():
                result.blank += 1
                continue
            read = simd_read(parser, raw, data, start) if parser is not None else None
            record: dict[str, Any] | tuple[dict[str, Any], str]
            if read is None:
                counted += data.count(b"[", start, end)
                record = _by_orjson(data, start, end)
            else:
                found, brackets, usual = read
                try:
                    record = rec.normalise_shallow(found)
                except rec.BadLine:  # a bad line either way: nesting in a packed array is not looked at first
                    counted += data.count(b"[", start, end)
                    raise
                if usual:
                    unchecked.append((len(records), number, start, end, brackets))
                    claimed += brackets
                else:
                    counted += brackets  # checked: the line holds as many
        except rec.BadLine as exc:
            result.bad.append((number, str(exc)))
            continue
        finally:
            i, start = i + 1, end + 1
        records.append(_numbered(record, number, result))
    result.lines = i  # what follows the last newline: nothing, in a block of complete lines
    if unchecked and _squares(data) - counted != claimed:
        _read_again(data, unchecked, records, result)
    table, bad = _columns([r for r in records if r is not None])
    result.table = table
    result.bad = sorted(result.bad + bad)
    return result


def _numbered(
    record: dict[str, Any] | tuple[dict[str, Any], str], number: int, result: jsonl.ParsedBlock
) -> dict[str, Any]:
    """The record with its line number; a repair note the careful path made is the line's warning."""
    if isinstance(record, tuple):
        record, note = record
        result.warnings.append((number, note))
    record[S.LINE] = number
    return record


def _squares(data: bytes) -> int:
    """How many "[" the block holds, counted by numpy a pass at a time (``bytes.count`` is ~5x slower)."""
    codes = np.frombuffer(data, np.uint8)
    step = config.sizes().bracket_count_bytes
    return sum(int(np.count_nonzero(codes[at : at + step] == _SQUARE)) for at in range(0, len(codes), step))


def _read_again(
    data: bytes,
    unchecked: list[tuple[int, int, int, int, int]],
    records: list[dict[str, Any] | None],
    result: jsonl.ParsedBlock,
) -> None:
    """The usual lines whose "[" are more than simdjson read (an array nested in a packed one), read again
    by orjson in place of what simdjson read (None where they are bad lines)."""
    for k, number, start, end, brackets in unchecked:
        if data.count(b"[", start, end) == brackets:
            continue
        try:
            again = _by_orjson(data, start, end)
        except rec.BadLine as exc:
            result.bad.append((number, str(exc)))
            records[k] = None
            continue
        records[k] = _numbered(again, number, result)
    result.warnings.sort(key=lambda warning: warning[0])  # a line read again may have one: in line order


def _by_orjson(data: bytes, start: int, end: int) -> dict[str, Any] | tuple[dict[str, Any], str]:
    """A line of the block as orjson reads it (``_load``); one nested too deep for it, the careful way."""
    line = data[start:end]
    return _load(line, careful=rec.too_deep(line))


def simd_parser() -> Any | None:
    """A simdjson parser for one block (a parser is not thread-safe), or None when simdjson is not used."""
    return simdjson.Parser() if USE_SIMD else None


def simd_accepted(
    parser: Any,
    raw: bytes | memoryview,
    packed: frozenset[str] = _FLOAT_LISTS,
    batch: bool = False,
    texts: frozenset[str] = frozenset(),
) -> dict[str, Any] | None:
    """The line's record through simdjson (``simd_read``), its "[" counted here; None where simdjson might
    read it otherwise than the JSON readers after it."""
    block = bytes(raw)
    read = simd_read(parser, raw, block, 0, packed, batch, texts)
    if read is None:
        return None
    record, brackets, usual = read
    return None if usual and block.count(b"[") != brackets else record


def simd_read(
    parser: Any,
    raw: bytes | memoryview,
    block: bytes,
    at: int,
    packed: frozenset[str] = _FLOAT_LISTS,
    batch: bool = False,
    texts: frozenset[str] = _STRING_LISTS,
) -> tuple[dict[str, Any], int, bool] | None:
    """The line's record through simdjson (``simd_record``), how many "[" it read,
    and whether each of them opens one of the line's top-level arrays (the usual line); None where
    simdjson might read it otherwise than the JSON readers after it.

    None for anything simdjson refuses, for a BOM (simdjson skips it, orjson does not), for a key given
    twice (orjson keeps the last), for a key holding NUL (a lookup would stop at it), for a value nested
    deeper than a sample may be, and when the line may nest an array inside a packed one (which simdjson
    would flatten: the line holds more "[" than were read). The caller checks that count for the usual
    line; any other line is checked here, and one whose strings hold an escaped "[" (\\u005b, which could
    hide a nested array) is refused. ``raw`` is the slice of ``block`` from ``at``: the line's bytes are
    looked at in ``block``, never copied.
    """
    end = at + len(raw)
    if block.startswith(rec.BOM, at):
        return None
    read = simd_record(parser, raw, packed, batch, texts)  # every proxy into the parser's document gone after
    if read is None:
        return None
    record, brackets, arrays = read
    usual = brackets == arrays  # every array adds one "[" at least: more, and a string or a nest holds some
    if not usual and (block.count(b"[", at, end) != brackets or block.find(b"u005", at, end) >= 0):
        return None
    return record, brackets, usual


def simd_record(
    parser: Any,
    raw: bytes | memoryview,
    packed: frozenset[str] = _FLOAT_LISTS,
    batch: bool = False,
    texts: frozenset[str] = frozenset(),
) -> tuple[dict[str, Any], int, int] | None:
    """The line's record, how many "[" its text holds if every packed array is flat, and how many of them
    are its top-level arrays' own; None when simdjson refuses it or orjson must decide.

    The arrays of numbers under the keys in ``packed`` are handed over as float64 arrays (with ``batch``,
    also one inside a batch dimension of 1: ``[[...]]``), an array under a key in ``texts`` as its JSON
    text (``string_arrays.JsonText``: the block's column reads them all at once); any other value as the
    Python value it is.
    """
    try:
        doc = parser.parse(raw)
    except (ValueError, RuntimeError):  # bad JSON, bad UTF-8 (a ValueError), too big an integer
        return None
    if type(doc) is not _OBJECT:
        return None
    keys = list(doc.keys())
    joined = "".join(keys)
    if len(set(keys)) != len(keys) or "\x00" in joined:
        return None
    record: dict[str, Any] = {}
    brackets = joined.count("[")  # the "[" the line holds if every packed float array is flat
    arrays = 0  # of which the top-level arrays' own
    for key in keys:
        value: Any = doc[key]  # dispatched on type(value): mypy cannot narrow through ``kind``
        kind = type(value)
        if kind is str:
            brackets += value.count("[")
        elif kind is _ARRAY or kind is _OBJECT:
            if kind is _ARRAY:
                arrays += 1
                if key in packed and (numbers := _numbers(value, batch)) is not None:
                    record[key], depth = numbers
                    brackets += depth
                    continue
                if key in texts and key not in packed:
                    text = record[key] = JsonText(value.mini)  # written with "[" as they are, not escaped
                    brackets += text.count(b"[")
                    continue
            mini = value.mini  # its text as simdjson writes it: every "[" as it is
            squares = mini.count(b"[")
            if rec.too_deep(mini, rec.VALUE_DEPTH, squares):
                return None
            brackets += squares
            value = value.as_list() if kind is _ARRAY else value.as_dict()  # not all numbers: checked after
        record[key] = value
    return record, brackets, arrays


def _numbers(value: Any, batch: bool) -> tuple[np.ndarray, int] | None:
    """An array of numbers as float64 and how many "[" it is written with; None when it holds anything else
    (a null, a boolean, text)."""
    inner, depth = value, 1
    if batch and len(value) == 1:
        head = value[0]
        if type(head) is _ARRAY:
            inner, depth = head, 2
    try:
        return np.frombuffer(inner.as_buffer(of_type="d"), _F64), depth
    except (TypeError, ValueError):
        return None


def _load(raw: bytes | memoryview, *, careful: bool = False) -> dict[str, Any] | tuple[dict[str, Any], str]:
    """orjson when it can; lines it refuses (NaN, lone surrogates ...) or must not see take the careful
    path."""
    try:
        obj = _NOT_PARSED if careful else orjson.loads(raw)
    except orjson.JSONDecodeError:
        obj = _NOT_PARSED
    if obj is _NOT_PARSED:
        record, note = rec.parse_line(bytes(raw))
        return (record, note) if note else record
    if not isinstance(obj, dict):
        raise rec.BadLine(f"not a JSON object (found {rec._kind(obj)})")
    return rec.normalise_shallow(obj)


def _columns(records: list[dict[str, Any]]) -> tuple[pa.Table, list[tuple[int, str]]]:
    """Build the table; records whose arrays hold non-numbers become bad lines."""
    try:
        return _build(records), []
    except (TypeError, ValueError, OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    good, bad = [], []
    for record in records:
        try:
            good.append(rec.check_arrays(record))
        except rec.BadLine as exc:
            bad.append((record[S.LINE], str(exc)))
    return _build(good), bad


def _build(records: list[dict[str, Any]]) -> pa.Table:
    columns: dict[str, pa.Array] = {S.STEP: pa.array([r[S.STEP] for r in records], pa.int64())}
    for name in S.TEXT_FIELDS:
        columns[name] = pa.array([r.get(name) for r in records], pa.string())
    for name in S.SCALAR_FIELDS:
        columns[name] = pa.array([r.get(name) for r in records], pa.float64())
    columns[S.RESPONSE_TOKENS] = string_lists([r.get(S.RESPONSE_TOKENS) for r in records])
    if columns[S.RESPONSE_TOKENS].values.null_count:  # a null token: the records checked one by one say which
        raise ValueError("a null item in response_tokens")
    for name in S.FLOAT_LIST_FIELDS:
        columns[name] = float_lists([r.get(name) for r in records])
    extras = rec.extra_names(records)
    for name in extras:
        columns[name] = rec.extra_array([r.get(name) for r in records])
    columns[S.LINE] = pa.array([r[S.LINE] for r in records], pa.int64())
    return pa.table(columns)


def string_lists(values: list[list | JsonText | None]) -> pa.Array:
    """A list<string> array from Python lists or simdjson's texts of arrays (None = null list)."""
    if any(type(v) is JsonText for v in values):
        if all(v is None or type(v) is JsonText for v in values):
            read = string_arrays.from_texts(cast("list[JsonText | None]", values))  # all() checked each
            if read is not None:
                return read
        values = [string_arrays.as_list(v) if type(v) is JsonText else v for v in values]
    return pa.array(values, pa.list_(pa.string()))


def float_lists(values: list[list | np.ndarray | None]) -> pa.Array:
    """A list<float64> array from Python lists or float64 arrays (None = null list) in one pass."""
    if values and all(v is None or type(v) is np.ndarray for v in values):
        return _packed_lists(cast("list[np.ndarray | None]", values))  # all() above checked each
    lengths = np.fromiter((0 if v is None else len(v) for v in values), np.int64, count=len(values))
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.fromiter(
        chain.from_iterable(v for v in values if v is not None), np.float64, count=int(offsets[-1])
    )
    nulls = np.fromiter((v is None for v in values), bool, count=len(values))
    mask = pa.array(nulls) if nulls.any() else None
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat), mask=mask)


def _packed_lists(values: list[np.ndarray | None]) -> pa.Array:
    """list<float64> from float64 arrays (simdjson's): one concatenation, no Python float in between."""
    lengths = np.fromiter((0 if v is None else len(v) for v in values), np.int64, count=len(values))
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    present = [v for v in values if v is not None]
    flat = np.concatenate(present) if present else np.zeros(0, np.float64)
    nulls = np.fromiter((v is None for v in values), bool, count=len(values))
    mask = pa.array(nulls) if nulls.any() else None
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat), mask=mask)
