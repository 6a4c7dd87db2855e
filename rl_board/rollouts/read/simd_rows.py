"""A nested format's lines through simdjson, their rows of numbers handed over as float64 arrays.

A NeMo-RL line is mostly per-token rows; read by ujson, each number becomes a
Python float before numpy packs it again. simdjson packs a row of plain
numbers straight into doubles (``as_buffer``). It only ever *accepts* a line:
one it refuses or might read differently goes to the careful path as before
(None here): a parse error, a BOM, a line nested deeper than a sample may be,
a key given twice or holding NUL, a surrogate or an escaped "[" anywhere, and a
row holding anything but numbers (kept as the list it is) or an array nested in
a row, which ``as_buffer`` would flatten: told by counting the line's "[".
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import simdjson
except ImportError:  # pragma: no cover - an optional speed-up
    simdjson = None  # type: ignore[assignment]  # mypy cannot type a module-or-None name

from rl_board.rollouts.read import records as rec
from rl_board.rollouts.read.bulk import _brackets

USABLE = simdjson is not None
_ARRAY = simdjson.Array if simdjson else None
_OBJECT = simdjson.Object if simdjson else None
_F64 = np.dtype(np.float64)


def read_lines(lines: list[bytes], rows: frozenset[str]) -> list[dict[str, Any] | None]:
    """Each line's object, the values of ``rows`` that are rows of numbers (with or without a batch
    dimension of 1) as float64 arrays; None for a line the careful path must read."""
    parser = simdjson.Parser()  # one per block: a parser is not thread-safe
    return [_record(parser, raw, rows) for raw in lines]


def _record(parser: Any, raw: bytes, rows: frozenset[str]) -> dict[str, Any] | None:
    if raw.startswith(rec.BOM) or (b"\\u" in raw and (b"\\ud" in raw or b"\\uD" in raw or b"u005" in raw)):
        return None
    if rec.too_deep(raw):
        return None
    read = _read(parser, raw, rows)  # every proxy into the parser's document is gone when it returns
    if read is None:
        return None
    record, brackets = read
    return record if raw.count(b"[") == brackets else None


def _read(parser: Any, raw: bytes, rows: frozenset[str]) -> tuple[dict[str, Any], int] | None:
    """The record, and how many "[" its text holds if no row nests an array."""
    try:
        doc = parser.parse(raw)
    except (ValueError, RuntimeError):  # bad JSON, bad UTF-8, an integer past 64 bits
        return None
    if type(doc) is not _OBJECT:
        return None
    keys = list(doc.keys())
    joined = "".join(keys)
    if len(set(keys)) != len(keys) or "\x00" in joined:
        return None
    record: dict[str, Any] = {}
    brackets = joined.count("[")
    for key in keys:
        value: Any = doc[key]
        kind = type(value)
        if kind is _ARRAY:
            packed = _packed(value) if key in rows else None
            if packed is not None:
                record[key], depth = packed
                brackets += depth
                continue
            value = value.as_list()
            brackets += _brackets(value)
        elif kind is _OBJECT:
            value = value.as_dict()
            brackets += _brackets(value)
        elif kind is str:
            brackets += value.count("[")
        record[key] = value
    return record, brackets


def _packed(value: Any) -> tuple[np.ndarray, int] | None:
    """A row of numbers (``[...]`` or ``[[...]]``) as float64 and how many "[" it is written with; None
    when it holds anything else (a null, a boolean, text)."""
    inner, depth = value, 1
    if len(value) == 1:
        head = value[0]
        if type(head) is _ARRAY:
            inner, depth = head, 2
    try:
        return np.frombuffer(inner.as_buffer(of_type="d"), _F64), depth
    except (TypeError, ValueError):
        return None
