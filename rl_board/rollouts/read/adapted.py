"""The careful record path for trainers' formats: each record through its format's stage 1, checked alone.

Lines (or Parquet rows) are numbered as in the file, so every refusal is
reported as ``file:line: reason`` like rl-board's own format. The records
that pass become a table that ends like every other path's (``contract``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rl_board.formats import Format, Reading, fieldmap, step_from_name
from rl_board.formats import schema as S
from rl_board.formats.base import renamed
from rl_board.rollouts.read import contract, simd_rows
from rl_board.rollouts.read.jsonl import ParsedBlock
from rl_board.rollouts.read.records import BadLine, load_object, normalise, records_to_table

# An adapter may parse JSON held in a string (ROLL's chat ``messages``): a hostile one recurses too deep; an
# integer of 400 digits where a number belongs is past any float.
_ADAPTER_ERRORS = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError, OverflowError)


def parse_lines(data: bytes, *, first_line: int, path: Path, fmt: Format, reading: Reading) -> ParsedBlock:
    """Complete JSON lines of one block of a file in format ``fmt``."""
    result = ParsedBlock(records_to_table([]))
    numbered = []
    for k, raw in enumerate(data.split(b"\n")[: data.count(b"\n")]):
        if raw.strip():
            numbered.append((first_line + k, raw))
        else:
            result.blank += 1
    packed = _packed_rows([raw for _, raw in numbered], fmt, reading)
    objects = (
        (number, _loaded(number, raw, result) if packed[k] is None else packed[k])
        for k, (number, raw) in enumerate(numbered)
    )
    return _samples(((n, o) for n, o in objects if o is not None), path, fmt, result, reading)


def _packed_rows(lines: list[bytes], fmt: Format, reading: Reading) -> list[dict[str, Any] | None]:
    """The lines simdjson reads with their rows of numbers packed (``simd_rows``), for a format whose block
    reader takes them (``Format.row_keys``) read without a field map of the user's; None for each line the
    careful path reads."""
    if not fmt.row_keys or fmt.nested_many is None or reading.fields:
        return [None] * len(lines)
    return simd_rows.read_lines(lines, fmt.row_keys)


def parse_rows(rows: list[dict[str, Any]], *, path: Path, fmt: Format, reading: Reading) -> ParsedBlock:
    """Rows of a Parquet table (row N is reported as line N)."""
    return _samples(enumerate(rows, start=1), path, fmt, ParsedBlock(records_to_table([])), reading)


def _loaded(number: int, raw: bytes, result: ParsedBlock) -> dict[str, Any] | None:
    try:
        obj, note = load_object(raw)
    except BadLine as exc:
        result.bad.append((number, str(exc)))
        return None
    if note:
        result.warnings.append((number, note))
    return obj


def _samples(
    objects: Iterable[tuple[int, dict[str, Any]]],
    path: Path,
    fmt: Format,
    result: ParsedBlock,
    reading: Reading,
) -> ParsedBlock:
    named_step = step_from_name(path)
    renames = reading.renames(fmt) if fmt.flat else {}
    mapped = {} if fmt.flat else fieldmap.renames(reading.fields)
    # a nested record as the user's field map names its keys (the format's reader sees those names)
    pairs = objects if fmt.flat else ((n, fieldmap.apply(raw, reading.fields)) for n, raw in objects)
    many: list[list[dict[str, Any]]] | None = None
    if fmt.nested_many is not None:  # the block at once; any other format's records one at a time
        pairs = list(pairs)
        many = _many([obj for _, obj in pairs], fmt)
    records = []
    for k, (number, obj) in enumerate(pairs):
        try:
            samples = _stage_one(obj, fmt, renames, mapped, None if many is None else many[k])
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
    return contract.finish(result, fmt=fmt, reading=reading, named_step=named_step)


def _many(objs: list[dict[str, Any]], fmt: Format) -> list[list[dict[str, Any]]] | None:
    """The samples of every record at once, from a format that reads a block so (``nested_many``); None
    to read them record by record, as when a record makes it raise: each record then says if it is the one."""
    if fmt.nested_many is None or not objs:
        return None
    try:
        return fmt.nested_many(objs)
    except _ADAPTER_ERRORS:
        return None


def _stage_one(
    obj: dict[str, Any],
    fmt: Format,
    renames: dict[str, str],
    mapped: dict[str, Any],
    found: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """A flat record under the reading's renames (the table path's very names); a nested one (its keys
    named by the user's field map) through its format (``found``: its samples, read with the block's),
    what the user mapped (``mapped``) winning over what the format chose (one record, one sample)."""
    if fmt.flat:
        return [renamed(obj, renames)]
    samples = fmt.nested(obj) if found is None else found
    if mapped and len(samples) == 1:
        for canonical in mapped:
            if canonical in obj:
                samples[0][canonical] = obj[canonical]
    return samples


def _checked(
    sample: dict[str, Any], named_step: int | None, number: int, result: ParsedBlock
) -> dict[str, Any] | None:
    if sample.get(S.STEP) is None and named_step is not None:
        sample[S.STEP] = named_step
    try:
        record = normalise(sample)
    except BadLine as exc:
        result.bad.append((number, str(exc)))
        return None
    record[S.LINE] = number
    return record
