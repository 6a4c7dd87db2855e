"""The long-line path: orjson per line, then whole columns built at once.

Token-level rollouts are long lines dominated by float arrays. On them orjson
plus one ``np.fromiter`` per column beats pyarrow.json about 2x per core (see
benchmarks/load.py). Lines orjson refuses (NaN, Infinity, a BOM, bad UTF-8,
broken JSON) go through the careful ujson path in records.py, so both paths
accept and reject exactly the same lines.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from rl_board.rollouts import schema as S
from rl_board.rollouts.read import jsonl
from rl_board.rollouts.read import records as rec

_NOT_PARSED = object()


def parse_long_lines(data: bytes, first_line: int) -> jsonl.ParsedBlock:
    """Parse a block of complete lines (1-based numbers from ``first_line``)."""
    records: list[dict[str, Any]] = []
    result = jsonl.ParsedBlock(pa.table({}))
    deep = set(rec.deep_lines(data))  # orjson takes 1,024 levels: far more than a sample may have
    for i, raw in enumerate(data.split(b"\n")[:-1]):
        number = first_line + i
        if len(raw) < 64 and not raw.strip():
            result.blank += 1
            continue
        try:
            record = _load(raw, careful=i in deep)
        except rec.BadLine as exc:
            result.bad.append((number, str(exc)))
            continue
        if isinstance(record, tuple):  # came through the careful path with a repair note
            record, note = record
            result.warnings.append((number, note))
        record[S.LINE] = number
        records.append(record)
    table, bad = _columns(records)
    result.table = table
    result.bad = sorted(result.bad + bad)
    return result


def _load(raw: bytes, *, careful: bool = False) -> dict[str, Any] | tuple[dict[str, Any], str]:
    """orjson when it can; lines it refuses (NaN, lone surrogates ...) or must not see take the careful path."""
    try:
        obj = _NOT_PARSED if careful else orjson.loads(raw)
    except orjson.JSONDecodeError:
        obj = _NOT_PARSED
    if obj is _NOT_PARSED:
        record, note = rec.parse_line(raw)
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
    columns[S.RESPONSE_TOKENS] = pa.array([r.get(S.RESPONSE_TOKENS) for r in records], pa.list_(pa.string()))
    for name in S.FLOAT_LIST_FIELDS:
        columns[name] = float_lists([r.get(name) for r in records])
    extras = sorted({k for r in records for k in r} - S.KNOWN_FIELDS - {S.LINE})
    for name in extras:
        columns[name] = rec.extra_array([r.get(name) for r in records])
    columns[S.LINE] = pa.array([r[S.LINE] for r in records], pa.int64())
    return pa.table(columns)


def float_lists(values: list[list | None]) -> pa.Array:
    """A list<float64> array from Python lists (None = null list) in one pass."""
    lengths = np.fromiter((0 if v is None else len(v) for v in values), np.int64, count=len(values))
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.fromiter(chain.from_iterable(v for v in values if v), np.float64, count=int(offsets[-1]))
    nulls = np.fromiter((v is None for v in values), bool, count=len(values))
    mask = pa.array(nulls) if nulls.any() else None
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat), mask=mask)
