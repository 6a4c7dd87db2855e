"""A nested format's lines through simdjson, their rows of numbers handed over as float64 arrays.

A NeMo-RL line is mostly per-token rows; read by ujson, each number becomes a
Python float before numpy packs it again. simdjson packs a row of plain
numbers straight into doubles (``as_buffer``). It only ever *accepts* a line:
one it refuses or might read differently goes to the careful path as before
(None here): a parse error, a BOM, a line nested deeper than a sample may be,
a key given twice or holding NUL, an escaped surrogate (``\\uD...``: Hangul too,
which costs speed only) or "[" anywhere, and an array nested in a row, which
``as_buffer`` would flatten: told by counting the line's "[". A row holding
anything but numbers is kept as the list it is. The record reader is the
native format's (``bulk.simd_accepted``).
"""

from __future__ import annotations

from typing import Any

from rl_board.rollouts.read import bulk
from rl_board.rollouts.read import records as rec


def read_lines(lines: list[bytes], row_keys: frozenset[str]) -> list[dict[str, Any] | None]:
    """Each line's object, the values of ``row_keys`` that are rows of numbers (with or without a batch
    dimension of 1) as float64 arrays; None for a line the careful path must read (every line, when
    simdjson is not used)."""
    parser = bulk.simd_parser()
    if parser is None:
        return [None] * len(lines)
    return [_record(parser, raw, row_keys) for raw in lines]


def _record(parser: Any, raw: bytes, row_keys: frozenset[str]) -> dict[str, Any] | None:
    if b"\\u" in raw and (rec.may_hold_surrogates(raw) or b"\\u005" in raw):
        return None
    if rec.too_deep(raw):
        return None
    return bulk.simd_accepted(parser, raw, packed=row_keys, batch=True)
