"""Reading a trainer's own dump format: each record through its format's adapter, then the careful path.

Lines (or Parquet rows) are numbered as in the file, so every refusal is
reported as ``file:line: reason`` like rl-board's own format. A sample with
no response or no reward is kept and counted in the report's notes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rl_board.rollouts import schema as S
from rl_board.rollouts.formats import Format, step_from_name
from rl_board.rollouts.read import tables
from rl_board.rollouts.read.jsonl import ParsedBlock
from rl_board.rollouts.read.records import BadLine, load_object, normalise, records_to_table
from rl_board.sources import fieldmap
from rl_board.sources.fieldmap import FieldMap

# An adapter may parse JSON held in a string (ROLL's chat ``messages``): a hostile one recurses too deep.
_ADAPTER_ERRORS = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError)


def parse_lines(data: bytes, *, first_line: int, path: Path, fmt: Format, fmap: FieldMap | None = None) -> ParsedBlock:
    """Complete JSON lines of one block of a file in format ``fmt``."""
    result = ParsedBlock(records_to_table([]))
    numbered = []
    for k, raw in enumerate(data.split(b"\n")[: data.count(b"\n")]):
        if raw.strip():
            numbered.append((first_line + k, raw))
        else:
            result.blank += 1
    objects = ((number, _loaded(number, raw, result)) for number, raw in numbered)
    return _samples(((n, o) for n, o in objects if o is not None), path, fmt, result, fmap or {})


def parse_parquet(path: Path, fmt: Format, fmap: FieldMap | None = None) -> ParsedBlock:
    """Every row of a Parquet file (row N is reported as line N)."""
    result = ParsedBlock(records_to_table([]))
    rows = tables.read_parquet(path).to_pylist()
    return _samples(enumerate(rows, start=1), path, fmt, result, fmap or {})


def _loaded(number: int, raw: bytes, result: ParsedBlock) -> dict[str, Any] | None:
    try:
        obj, note = load_object(raw)
    except BadLine as exc:
        result.bad.append((number, str(exc)))
        return None
    if note:
        result.warnings.append((number, note))
    return obj


def _samples(objects: Iterable[tuple[int, dict[str, Any]]], path: Path, fmt: Format,
             result: ParsedBlock, fmap: FieldMap) -> ParsedBlock:  # fmt: skip
    named_step = step_from_name(path)
    records = []
    for number, raw in objects:
        obj = fieldmap.apply(raw, fmap)
        try:
            samples = _mapped(fmt.to_samples(obj), obj, fmap)
        except _ADAPTER_ERRORS as exc:
            result.bad.append((number, f"not a {fmt.label} record ({type(exc).__name__}: {exc})"))
            continue
        if not samples:
            result.bad.append((number, f"holds no sample a {fmt.label} should have"))
        for sample in samples:
            record = _checked(sample, named_step, number, result)
            if record is not None:
                records.append(record)
    result.table = records_to_table(records)
    return result


def _mapped(samples: list[dict[str, Any]], obj: dict[str, Any], fmap: FieldMap) -> list[dict[str, Any]]:
    """What the user mapped wins over what the format would have chosen (one record, one sample)."""
    if fmap and len(samples) == 1:
        for canonical in fmap:
            if canonical in obj:
                samples[0][canonical] = obj[canonical]
    return samples


def _checked(sample: dict[str, Any], named_step: int | None, number: int,
             result: ParsedBlock) -> dict[str, Any] | None:  # fmt: skip
    if sample.get(S.STEP) is None and named_step is not None:
        sample[S.STEP] = named_step
    for name in S.SCALAR_FIELDS:  # trainers log pass/fail as booleans (verl's acc): read them as 1 / 0
        if isinstance(sample.get(name), bool):
            sample[name] = float(sample[name])
    try:
        record = normalise(sample)
    except BadLine as exc:
        result.bad.append((number, str(exc)))
        return None
    missing = [name for name in (S.RESPONSE, S.REWARD) if record.get(name) is None]
    if missing:
        result.warnings.append((number, f"no {' and no '.join(missing)} in this sample"))
    record[S.LINE] = number
    return record
