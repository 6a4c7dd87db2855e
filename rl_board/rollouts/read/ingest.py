"""Turning the new bytes of a rollout file into cache segments, on every core.

A file (or its appended tail) is cut at newlines into jobs: blocks of
``Sizes.block_bytes``, or in a big load up to ``Sizes.segment_bytes`` (``job_bytes``).
A job is parsed a block at a time by the path that suits its lines (pyarrow.json
for short lines, simdjson or orjson plus bulk column building for long
token-level lines), derived, and written as one Arrow segment. Big jobs run the blocks in the process's warm
worker pool (pool.py); the line numbers inside a segment count from the block's
start and the manifest keeps each segment's offset, so workers never wait on
each other.

A line longer than ``Sizes.max_line_bytes`` is never read: it is planned as a block of
its own and reported as a bad line with its length, so one runaway line costs
a scan, not memory.
"""

from __future__ import annotations

import functools
import json
import os
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa

from rl_board import config, formats
from rl_board.formats import Reading, step_from_name
from rl_board.formats import schema as S
from rl_board.lazy import pc
from rl_board.rollouts import derive
from rl_board.rollouts.cache.manifest import MAX_REPORTED_PER_FILE
from rl_board.rollouts.cache.segments import settle, write_segment, writing_behind
from rl_board.rollouts.read import collector, heap, records, stored
from rl_board.sources import sniff

# The parsers (simdjson, orjson, pyarrow.json, the formats' adapters) and the worker pool are imported by
# the functions that use them: a command that opens a cached run plans nothing and parses nothing.
if TYPE_CHECKING:
    from rl_board.rollouts.read import jsonl

MOST_PROCESSES = 4  # a load is spread over one process per core, at most this many
JOBS_PER_PROCESS = 8  # a big load is cut into about this many jobs per process (``job_bytes``)
LONG_LINE = 2048  # average bytes per line above which the bulk path is faster (a property of the parsers)
# Block sizes, the pool thresholds and the longest line read are ``config.Sizes``: one place, from the
# environment.
RENAMED_NOTE = "logged keys named like columns rl-board adds are kept as"


@dataclass
class BlockResult:
    """What one block produced; line numbers are relative to the block (1-based)."""

    lines: int = 0
    samples: int = 0
    blank: int = 0
    error: str = ""
    segment: dict | None = None
    bad: list[tuple[int, str]] = field(default_factory=list)
    warnings: list[tuple[int, str]] = field(default_factory=list)
    turns: dict[str, dict[str, int]] = field(default_factory=dict)  # how turns were found: ``add_turns``
    unlisted: int = 0  # bad lines past the ``MAX_REPORTED_PER_FILE`` a job lists (counted, not kept)


def add_turns(into: dict[str, dict[str, int]], how: dict[str, int], whole: dict[str, int]) -> None:
    """Add counts of how a block's turns were found (and why text was kept whole) to ``into``."""
    for part, counts in (("how", how), ("kept whole", whole)):
        mine = into.setdefault(part, {})
        for name, n in counts.items():
            mine[name] = mine.get(name, 0) + int(n)


def parse_block(data: bytes, *, first_line: int, n_lines: int | None = None) -> jsonl.ParsedBlock:
    """Parse complete lines with the path that suits them (judged on the first MB when ``n_lines`` is not
    given: both paths read every line alike, so this only picks the faster one)."""
    from rl_board.rollouts.read import bulk, jsonl

    if n_lines is not None:
        long_lines = bool(n_lines) and len(data) / n_lines >= LONG_LINE
    else:
        head = data[: config.sizes().path_choice_bytes]
        n_head = head.count(b"\n")
        long_lines = len(head) / n_head >= LONG_LINE if n_head else len(data) > len(head)
    if long_lines:
        return bulk.parse_long_lines(data, first_line)
    return jsonl.parse_block(data, first_line=first_line)


def parse_any(
    path: Path, data: bytes, reading: Reading, first_line: int = 1
) -> tuple[jsonl.ParsedBlock, int]:
    """Parse a block in its file's format: fast table paths first, the careful record path when they refuse.

    Returns the block and its number of lines (a Parquet file's: its rows). Every path ends in
    ``contract.finish``, so the format's rules apply alike whichever path the bytes take.
    """
    import pyarrow.parquet as pq

    from rl_board.rollouts.read import adapted, contract, tables

    fmt = formats.by_name(reading.format)
    if path.suffix.lower() == ".parquet":
        with pq.ParquetFile(pa.BufferReader(data), pre_buffer=False) as file:  # the bytes already read
            table = file.read(use_threads=False)
        fast = tables.parse_table(table, path=path, fmt=fmt, reading=reading) if fmt.flat else None
        return fast or adapted.parse_rows(
            table.to_pylist(), path=path, fmt=fmt, reading=reading
        ), table.num_rows
    if sniff.is_whole_file(path):  # a table a trainer logged to a tracker
        rows = tables.document_rows(path, data)
        return parse_rows(path, rows, reading), len(rows)
    if _native(reading):
        raw = parse_block(data, first_line=first_line)
        parsed = contract.finish(raw, fmt=fmt, reading=reading, named_step=step_from_name(path))
        return parsed, data.count(b"\n") if parsed.lines is None else parsed.lines
    fast = (
        tables.parse_renamed(data, first_line=first_line, path=path, fmt=fmt, reading=reading)
        if fmt.flat
        else None
    )
    parsed = fast or adapted.parse_lines(data, first_line=first_line, path=path, fmt=fmt, reading=reading)
    return parsed, data.count(b"\n")


def _native(reading: Reading) -> bool:
    """Whether lines are read by rl-board's own readers (``parse_block``): its format, no field map."""
    return reading.format == formats.NATIVE and not reading.fields


def parse_rows(path: Path, rows: list[dict[str, Any]], reading: Reading) -> jsonl.ParsedBlock:
    """A tracker's table rows in their format: the table path when the format is flat and the values make
    typed columns, else the careful record path."""
    from rl_board.rollouts.read import adapted, tables

    fmt = formats.by_name(reading.format)
    table = tables.rows_table(rows) if fmt.flat else None
    fast = tables.parse_table(table, path=path, fmt=fmt, reading=reading) if table is not None else None
    return fast or adapted.parse_rows(rows, path=path, fmt=fmt, reading=reading)


def parse_paths(
    path: Path, data: bytes, reading: Reading, first_line: int = 1
) -> dict[str, jsonl.ParsedBlock | None]:
    """The block read by every path that could read it (a fast path that refuses it gives None).

    ``_parse_any`` takes the first that accepts; tests hold them all equal (the parse contract).
    """
    import pyarrow.parquet as pq

    from rl_board.rollouts.read import adapted, bulk, contract, jsonl, tables

    fmt = formats.by_name(reading.format)
    named = step_from_name(path)
    if path.suffix.lower() == ".parquet":
        with pq.ParquetFile(pa.BufferReader(data), pre_buffer=False) as file:
            table = file.read(use_threads=False)
        return {
            "table": tables.parse_table(table, path=path, fmt=fmt, reading=reading) if fmt.flat else None,
            "careful": adapted.parse_rows(table.to_pylist(), path=path, fmt=fmt, reading=reading),
        }
    if sniff.is_whole_file(path):
        rows = tables.document_rows(path, data)
        table = tables.rows_table(rows) if fmt.flat else None
        return {
            "table": tables.parse_table(table, path=path, fmt=fmt, reading=reading)
            if table is not None
            else None,
            "careful": adapted.parse_rows(rows, path=path, fmt=fmt, reading=reading),
        }
    out: dict[str, jsonl.ParsedBlock | None] = {}
    if fmt.name == formats.NATIVE and not reading.fields:
        for name, raw in (
            ("arrow", jsonl.parse_block(data, first_line=first_line)),
            ("bulk", bulk.parse_long_lines(data, first_line)),
        ):
            out[name] = contract.finish(raw, fmt=fmt, reading=reading, named_step=named)
    if fmt.flat:
        out["table"] = tables.parse_renamed(data, first_line=first_line, path=path, fmt=fmt, reading=reading)
    out["careful"] = adapted.parse_lines(data, first_line=first_line, path=path, fmt=fmt, reading=reading)
    return out


def processes() -> int:
    """How many processes a load is spread over (the forked helpers and this one, or the pool's workers)."""
    return min(os.cpu_count() or 1, MOST_PROCESSES)


def job_bytes(total: int) -> int:
    """How much of a file one job takes in a load of ``total`` bytes: one block, or in a load big enough
    to give each process more than ``JOBS_PER_PROCESS`` blocks, that share of it, up to
    ``Sizes.segment_bytes``.

    Each job is one cache segment, and every later open of the run maps each segment (~0.2 ms apiece): a
    1 GB run opens ~36 segments, not 84 (~10 ms, not 24), and a 10 GB run ~110, not ~650. A job is parsed a
    block at a time (``_parts``): a bigger one holds its blocks' columns, never their JSON at once, but
    it does hold them (a 1 GB load in 64 MB jobs peaked at 575 MB, not 386), so a small load keeps its
    blocks and still spreads evenly over every core.
    """
    sizes = config.sizes()
    share = min(total // (JOBS_PER_PROCESS * processes()), sizes.segment_bytes)
    return max(sizes.block_bytes, share // sizes.block_bytes * sizes.block_bytes)  # whole blocks


def ending_in_blocks(files: list[tuple[Path, list[tuple[int, int]]]]) -> list[list[tuple[int, int]]]:
    """Each file's jobs, the ``2 x processes()`` smallest of those bigger than a block cut back into blocks.

    Jobs are claimed biggest first, so a load of big jobs then ends on blocks that every process shares,
    not on one process's last big job while the others wait (a 64 MB job is ~0.25 s). A 10 GB run in
    128 MB jobs gains ~12 segments, not one per file.
    """
    block = config.sizes().block_bytes
    bigger = sorted(
        (e - s, k, j) for k, (_, jobs) in enumerate(files) for j, (s, e) in enumerate(jobs) if e - s > block
    )
    chosen = {(k, j) for _, k, j in bigger[: 2 * processes()]}
    return [
        [
            cut
            for j, (s, e) in enumerate(jobs)
            for cut in (plan_blocks(path, s, e) if (k, j) in chosen else [(s, e)])
        ]
        for k, (path, jobs) in enumerate(files)
    ]


def plan_blocks(
    path: Path, start: int, size: int, block_bytes: int | None = None, max_line: int | None = None
) -> list[tuple[int, int]]:
    """Cut ``[start, last newline]`` of a file into blocks that end at newlines (a Parquet file is one block).

    A line longer than ``max_line`` (default ``Sizes.max_line_bytes``) becomes a block of its own, found by
    scanning, never read whole; blocks are at most ``min(block_bytes, max_line)`` plus the line they cut.
    """
    if sniff.is_whole_file(path):
        return [(0, size)] if size else []
    sizes = config.sizes()
    max_line = max_line or sizes.max_line_bytes
    window = min(block_bytes or sizes.block_bytes, max_line)
    with open(path, "rb") as f:
        end = _last_newline_end(f, start, size)
        blocks = []
        pos = start
        while pos < end:
            target = min(pos + window, end)
            cut = _next_newline_end(f, target - 1, end)
            if cut - pos > max_line:
                line_start = _last_newline_end(f, pos, target - 1)  # of the line the window ends in
                if cut - line_start > max_line:
                    if line_start > pos:
                        blocks.append((pos, line_start))
                    pos = line_start
            blocks.append((pos, cut))
            pos = cut
    return blocks


def _last_newline_end(f: BinaryIO, start: int, size: int) -> int:
    pos = size
    while pos > start:
        step = min(config.sizes().scan_bytes, pos - start)
        f.seek(pos - step)
        chunk = f.read(step)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return pos - step + i + 1
        pos -= step
    return start


def _next_newline_end(f: BinaryIO, pos: int, end: int) -> int:
    f.seek(pos)
    while pos < end:
        chunk = f.read(min(config.sizes().scan_bytes, end - pos))
        i = chunk.find(b"\n")
        if i >= 0:
            return pos + i + 1
        pos += len(chunk)
    return end


def ingest_block(
    path: str,
    start: int,
    end: int,
    directory: str,
    reading: Reading | None = None,
    max_line: int | None = None,
) -> BlockResult:
    """Read, parse, derive and write one block (runs in a worker or in-process).

    Lines longer than ``max_line`` (default ``Sizes.max_line_bytes``) are reported with their length, not
    read. ``reading`` is how the file is read, decided once per load by the catalogue (None: rl-board's own
    format).
    """
    from rl_board.rollouts.read import turns

    max_line = max_line or config.sizes().max_line_bytes
    reading = reading or Reading(formats.NATIVE)
    file = Path(path)
    if stored.is_stored(reading):
        return _ingest_stored(file, directory, reading)
    result = BlockResult()
    parts: list[pa.Table] = []
    try:
        with open(path, "rb") as f:  # one handle for the job's pieces
            for s, e, too_long in _parts(file, start, end, max_line, _piece_bytes(reading)):
                if too_long:
                    result.lines += 1
                    reason = records.too_long_reason(e - s, max_line)
                    result.unlisted += _listed(result.bad, [(result.lines, reason)])
                    continue
                f.seek(s)
                data = f.read(e - s)
                parsed, lines = parse_any(file, data, reading, first_line=result.lines + 1)
                del data
                result.lines += lines
                result.blank += parsed.blank
                result.unlisted += _listed(result.bad, parsed.bad)
                _listed(result.warnings, parsed.warnings)  # a file's entry keeps no more than these either
                add_turns(result.turns, *turns.read_how(parsed.table.schema))
                parts.append(parsed.table)
    except OSError as exc:
        return BlockResult(error=f"cannot read: {exc.strerror or exc}")
    table = parts[0] if len(parts) == 1 else records.unify_tables(parts)
    _derived_and_written(result, _one_batch(table), directory)
    return result


def _listed(kept: list[tuple[int, str]], found: list[tuple[int, str]]) -> int:
    """``found`` added to ``kept`` up to ``MAX_REPORTED_PER_FILE``; how many did not fit. A 128 MB job of
    broken lines would otherwise hold ~3 GB of Python tuples before the manifest keeps 10,000 of them."""
    room = max(MAX_REPORTED_PER_FILE - len(kept), 0)
    kept.extend(found[:room])
    return max(len(found) - room, 0)


def _one_batch(table: pa.Table) -> pa.Table:
    """The job's rows as one record batch: derived a chunk at a time they cost more, and every open of the
    segment builds each batch's ~40 arrays again (~0.1 ms a batch: a 10 GB run in 16 MB pieces opened
    ~650 of them). The copy costs less than it saves: a 1 GB cold load took 4.0 s, not 4.3. Rows past
    what one batch can hold (2 GB of text in a column) stay in their chunks."""
    if all(column.num_chunks <= 1 for column in table.columns):
        return table
    try:
        return table.combine_chunks()
    except (pa.ArrowInvalid, pa.ArrowCapacityError):
        return table


def _ingest_stored(store: Path, directory: str, reading: Reading) -> BlockResult:
    """A run kept inside a store (``stored``): its rows, asked of its kind, read as a table's rows are; a
    row's line is its place among them."""
    from rl_board.rollouts.read import turns

    try:
        rows = stored.rows(store, reading)
    except OSError as exc:
        return BlockResult(error=f"cannot read: {exc.strerror or exc}")
    parsed = parse_rows(store, rows, reading)
    result = BlockResult(lines=len(rows), blank=parsed.blank, bad=parsed.bad, warnings=parsed.warnings)
    add_turns(result.turns, *turns.read_how(parsed.table.schema))
    _derived_and_written(result, parsed.table, directory)
    return result


def _derived_and_written(result: BlockResult, table: pa.Table, directory: str) -> None:
    """A block's samples derived and written as its segment (with the note on renamed keys)."""
    result.samples = table.num_rows
    if table.num_rows:
        table, renamed = derive.clashes_renamed(table)
        note = _renamed_note(table, renamed)
        if note:
            result.warnings.append(note)
        result.segment = write_segment(Path(directory), derive.with_sample_metrics(table))


# ---------------------------------------------------------------- many small files at once
#
# A trainer that writes one file per task (AReaL: ~4 KB each) paid every fixed cost of a block per file: a
# pyarrow.json call (~1 ms), ~30 Arrow calls to derive (~1.3 ms), a job of its own. Small blocks of one
# reading are therefore parsed as one table and derived once; each file's rows still go through
# ``contract.finish`` on their own (its step from its name, the format's table rules, its line numbers and
# notes) and are written as the file's own segment, so the manifest and a file's re-read are as before.


def ingest_batch(
    jobs: list[tuple[str, int, int]],
    directory: str,
    reading: Reading | None = None,
    max_line: int | None = None,
) -> list[BlockResult]:
    """``ingest_block`` of each small (file, start, end) block of one reading, parsed and derived together.

    Whatever a shared parse cannot give exactly as a block of its own would be read (a line for the careful
    path, a key logged in one file only that another leaves null, an unreadable file), and each block is
    read alone instead.
    """
    from rl_board.rollouts.read import turns

    reading = reading or Reading(formats.NATIVE)
    alone = [functools.partial(ingest_block, p, s, e, directory, reading, max_line) for p, s, e in jobs]
    try:
        datas = []
        for path, start, end in jobs:
            with open(path, "rb") as f:
                f.seek(start)
                datas.append(f.read(end - start))
    except OSError:
        return [read() for read in alone]
    parsed = _parsed_together(datas, [Path(p) for p, _, _ in jobs], reading)
    if parsed is None and len(jobs) >= _HALVED_FROM:  # a line that needs the careful path: halves, then alone
        half = len(jobs) // 2
        return ingest_batch(jobs[:half], directory, reading, max_line) + ingest_batch(
            jobs[half:], directory, reading, max_line
        )
    if parsed is None:
        return [read() for read in alone]
    results: list[BlockResult] = []
    shared: list[tuple[BlockResult, pa.Table]] = []
    for data, block, read in zip(datas, parsed, alone, strict=True):
        if block is None:  # this file's columns would differ from its own parse's: read alone
            results.append(read())
            continue
        result = BlockResult(
            lines=data.count(b"\n"), blank=block.blank, bad=block.bad, warnings=block.warnings
        )
        add_turns(result.turns, *turns.read_how(block.table.schema))
        results.append(result)
        shared.append((result, block.table))
    _derived_together([r for r, _ in shared], [t for _, t in shared], directory)
    return results


_HALVED_FROM = (
    8  # a batch of this many blocks that cannot be parsed together is halved, a smaller one read alone
)


def batchable(path: Path, size: int, reading: Reading) -> bool:
    """Whether a block may share a batch: small JSON lines of a flat format (or rl-board's own)."""
    if size > config.sizes().batch_block_bytes or sniff.is_whole_file(path) or stored.is_stored(reading):
        return False
    fmt = formats.by_name(reading.format)
    return fmt.flat or (fmt.name == formats.NATIVE and not reading.fields)


def _parsed_together(
    datas: list[bytes], paths: list[Path], reading: Reading
) -> list[jsonl.ParsedBlock | None] | None:
    """Each block's ``parse_any`` result from one parse of all their lines (None for a block whose columns
    there may differ from its own parse's); None when the lines cannot be parsed together."""
    from rl_board.rollouts.read import contract, jsonl, tables

    fmt = formats.by_name(reading.format)
    native = fmt.name == formats.NATIVE and not reading.fields
    counts = [data.count(b"\n") for data in datas]
    if not all(counts) or any(len(d) / n >= LONG_LINE for d, n in zip(datas, counts, strict=True)):
        return None  # a block of long lines is read by the bulk path
    data = b"".join(datas)
    table = jsonl.fast_parse(data) if native else tables.read_renamed(data, fmt=fmt, reading=reading)
    if table is None or table.num_rows != sum(counts):
        return None
    if not all(_same_alone(f.type) for f in table.schema if f.name not in S.KNOWN_FIELDS):
        return None
    out: list[jsonl.ParsedBlock | None] = []
    at = 0
    for path, n, own in zip(paths, counts, datas, strict=True):
        part = _own_columns(table.slice(at, n), own)
        at += n
        if part is None:
            out.append(None)
        elif native:
            lines = pa.array(range(1, n + 1), pa.int64())
            raw = jsonl.drop_missing_step(jsonl.with_lines(part, lines))
            out.append(contract.finish(raw, fmt=fmt, reading=reading, named_step=step_from_name(path)))
        else:
            out.append(tables.finish_renamed(part, 1, path, fmt, reading))
    return out


def _same_alone(kind: pa.DataType) -> bool:
    """Whether a log's own column of this type in a shared parse holds what each file's parse would, once the
    run's segments are unified (numbers widen alike; objects' fields and dates read from text do not)."""
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _same_alone(kind.value_type)
    return any(
        test(kind)
        for test in (
            pa.types.is_null,
            pa.types.is_boolean,
            pa.types.is_integer,
            pa.types.is_floating,
            pa.types.is_string,
            pa.types.is_large_string,
        )
    )


def _own_columns(part: pa.Table, data: bytes) -> pa.Table | None:
    """One file's rows of a shared parse with only the log keys the file has: a column it never names
    (null in all its rows) is dropped; None when a null column's key does appear in it (logged as null,
    or only inside a text: the shared parse cannot tell), or when its floats may have been integers."""
    drop = []
    for name in part.column_names:
        if name in S.KNOWN_FIELDS:
            continue
        if part.column(name).null_count < part.num_rows:
            if _maybe_whole_numbers(part.column(name)):
                return None
            continue
        if not name.isascii() or json.dumps(name)[1:-1] != name or f'"{name}"'.encode() in data:
            return None
        drop.append(name)
    return part.drop_columns(drop) if drop else part


def _maybe_whole_numbers(column: pa.ChunkedArray) -> bool:
    """Whether a float column's rows in one file hold only whole numbers: the file alone may have been read
    as integers (the shared parse widened them), which a run whose column ends up as text shows
    differently."""
    while pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        column = pc.list_flatten(column)
    if not pa.types.is_floating(column.type):
        return False
    values = column.drop_null()
    return len(values) > 0 and bool(pc.all(pc.equal(values, pc.floor(values))).as_py())


def _derived_together(results: list[BlockResult], parts: list[pa.Table], directory: str) -> None:
    """Each block's rows derived in one table and written as its own segment (as ``_derived_and_written``)."""
    try:
        whole = pa.concat_tables([t for t in parts if t.num_rows], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError):
        whole = None
    if (
        whole is None
        or records.logged_name(S.LINE, ()) in whole.column_names
        or derive.clashes_renamed(whole)[1]
    ):
        for result, table in zip(results, parts, strict=True):  # a renamed key is noted per block
            _derived_and_written(result, table, directory)
        return
    derived = derive.with_sample_metrics(whole).combine_chunks()  # a segment is one record batch
    added = [name for name in derived.column_names if name not in whole.column_names]
    at = 0
    for result, table in zip(results, parts, strict=True):
        result.samples = table.num_rows
        if table.num_rows:  # the block's own columns, in its order, then the derived ones: as derived alone
            own = derived.slice(at, table.num_rows).select(table.column_names + added)
            own = own.replace_schema_metadata(table.schema.metadata)
            result.segment = write_segment(Path(directory), own)
            at += table.num_rows


def _piece_bytes(reading: Reading) -> int:
    """How much of a job is parsed at once. rl-board's own readers (``_native``) keep a job's arrays as
    arrays, not as Python values, so where the heap keeps what a job frees (``heap.keeping``: a load and
    its forked helpers) a whole job (at most ``Sizes.segment_bytes``) is one piece: its table is then one
    batch, not pieces copied into one (``_one_batch``), and one 84 MB job of the 1 GB benchmark run took
    ~0.195 ms of CPU a line, not ~0.21. Elsewhere (a pool's worker) a piece past 32 MB would be new memory
    every job; and the other formats' readers hold a piece's records as Python values: ``Sizes.block_bytes``
    at a time."""
    sizes = config.sizes()
    return sizes.segment_bytes if _native(reading) and heap.keeping() else sizes.block_bytes


def _parts(path: Path, start: int, end: int, max_line: int, piece: int) -> list[tuple[int, int, bool]]:
    """``(start, end, too long)`` pieces of a job: runs of lines of about ``piece`` bytes (at most
    ``max_line``), and every line longer than that alone, marked when longer than ``max_line``. Only a job
    longer than a piece is scanned (a 1 MB read back from each cut)."""
    piece = min(piece, max_line)
    slack = min(piece // 4, max_line - piece)  # a job's last lines past its blocks join the last block
    if end - start <= piece + slack or sniff.is_whole_file(path):
        return [(start, end, False)]
    parts = []
    with open(path, "rb") as f:
        pos = start
        while pos < end:
            window = pos + piece
            if window + slack >= end:  # the rest in one piece
                parts.append((pos, end, False))
                break
            cut = _last_newline_end(f, pos, window)
            if cut == pos:  # one line longer than a piece: alone, and never read when it is too long
                cut = _next_newline_end(f, window, end)
                parts.append((pos, cut, cut - pos > max_line))
            else:
                parts.append((pos, cut, False))
            pos = cut
    return parts


def _renamed_note(table: pa.Table, renamed: dict[str, str]) -> tuple[int, str] | None:
    """One warning for the block: which logged keys were renamed, at the first line holding one."""
    if records.logged_name(S.LINE, ()) in table.column_names:  # moved aside where line numbers were added
        renamed = {S.LINE: records.logged_name(S.LINE, ()), **renamed}
    if not renamed:
        return None
    lines = table.column(S.LINE)
    holding = [pc.min(lines.filter(table.column(new).is_valid())).as_py() for new in renamed.values()]
    first = min((line for line in holding if line is not None), default=lines[0].as_py())
    pairs = ", ".join(f"'{old}' → '{new}'" for old, new in renamed.items())
    return first, f"{RENAMED_NOTE} '<name>_logged': {pairs}"


def run_blocks(
    jobs: list[tuple[Path, int, int]],
    directory: Path,
    on_done: Callable[[int], None],
    readings: dict[str, Reading] | None = None,
    max_line: int | None = None,
) -> Generator[BlockResult, None, None]:
    """Results of every (file, start, end) job, in order; ``on_done(bytes)`` after each.

    ``readings``: how each file (by its path as a string) is read (a file not in it: rl-board's own format).
    The note about renamed keys is given once per file, not once per block.
    """
    native = Reading(formats.NATIVE)
    readings = {str(path): (readings or {}).get(str(path), native) for path, _, _ in jobs}
    noted: set[tuple[str, str]] = set()
    results = _run(jobs, directory, on_done, readings, max_line)
    with heap.kept(), collector.rare():  # a job's freed memory kept for the next; few collections
        for (path, _, _), result in zip(jobs, results, strict=True):
            kept = []
            for line, note in result.warnings:
                if note.startswith(RENAMED_NOTE):
                    if (str(path), note) in noted:
                        continue
                    noted.add((str(path), note))
                kept.append((line, note))
            result.warnings = kept
            yield result


def import_parsers() -> None:
    """Import every parser now (a worker before it says it is ready; this process before it forks), and
    what sums the segments they make (``segments.checksum``)."""
    import google_crc32c  # noqa: F401
    import pandas  # noqa: F401  (pyarrow's conversions of Python values import it on first use)
    import pyarrow.compute
    import pyarrow.parquet  # noqa: F401

    from rl_board.rollouts.read import adapted, bulk, contract, jsonl, tables, turns  # noqa: F401


def _run(
    jobs: list[tuple[Path, int, int]],
    directory: Path,
    on_done: Callable[[int], None],
    readings: dict[str, Reading],
    max_line: int | None,
) -> Iterator[BlockResult]:
    from rl_board.rollouts.read import forked, pool

    units = batches(jobs, readings)

    def local(u: int) -> list[BlockResult]:
        unit = units[u]
        reading = readings[str(jobs[unit[0]][0])]
        if len(unit) == 1:
            path, s, e = jobs[unit[0]]
            return [ingest_block(str(path), s, e, str(directory), max_line=max_line, reading=reading)]
        return ingest_batch(
            [(str(p), s, e) for p, s, e in (jobs[i] for i in unit)], str(directory), reading, max_line
        )

    def behind(u: int) -> list[BlockResult]:
        """``local``, its segments written while the next job is parsed (``forked.run`` settles them)."""
        with writing_behind():
            return local(u)

    cores = processes()
    sizes = config.sizes()
    work = sum((e - s) * cost_per_byte(readings[str(p)], p) for p, s, e in jobs)
    start = work >= sizes.pool_min_bytes
    warm = pool.running()
    if len(units) >= 2 and cores >= 2 and warm is None and work >= sizes.fork_min_bytes and forked.usable():
        # no pool to start (~0.5 s per worker): helpers forked from here, each with everything imported
        import_parsers()
        sizes_of = [sum(jobs[i][2] - jobs[i][1] for i in unit) for unit in units]
        biggest_first = sorted(range(len(units)), key=lambda u: -sizes_of[u])
        done = forked.run(
            len(units), cores - 1, behind, results_line, results_from_json, biggest_first, _segments_settled
        )
        for unit, results in zip(units, done, strict=True):
            for i, result in zip(unit, results, strict=True):
                yield result
                on_done(jobs[i][2] - jobs[i][1])
        return
    if len(units) >= 2 and cores >= 2 and (start or (work >= sizes.warm_pool_min_bytes and warm)):
        with pool.borrowed(cores, start=start) as workers:
            if workers is not None:
                requests = [_request(jobs, unit, directory, readings, max_line) for unit in units]
                for unit, results in zip(units, workers.run(requests, local, results_from_json), strict=True):
                    for i, result in zip(unit, results, strict=True):
                        yield result
                        on_done(jobs[i][2] - jobs[i][1])
                return
    in_order = forked.run(len(units), 0, behind, results_line, results_from_json, settle=_segments_settled)
    for unit, results in zip(units, in_order, strict=True):
        for i, result in zip(unit, results, strict=True):
            yield result
            on_done(jobs[i][2] - jobs[i][1])


def _segments_settled(results: list[BlockResult]) -> None:
    """Wait until every segment a job wrote behind is whole, then raise the first error of their writing."""
    errors = []
    for result in results:
        if result.segment is not None:
            try:
                settle(result.segment)
            except Exception as exc:  # the others are still waited for: none is left writing
                errors.append(exc)
    if errors:
        raise errors[0]


RECORD_PATH_COST = 8  # a byte read record by record costs about this many of a table path's (18 vs 150 MB/s)
PARQUET_COST = 16  # a Parquet byte is compressed: TRL's files hold ~17x their size in JSON lines


def cost_per_byte(reading: Reading, path: Path | None = None) -> int:
    """What a byte of this reading (of this file) costs to parse, in bytes of the table paths: a nested
    format (NeMo-RL, prime-rl, ROLL) is read record by record in Python, and a Parquet file's bytes are
    compressed, so a smaller load of either already pays for helpers or the pool."""
    cost = 1 if formats.by_name(reading.format).flat else RECORD_PATH_COST
    return cost * PARQUET_COST if path is not None and path.suffix.lower() == ".parquet" else cost


def batches(jobs: list[tuple[Path, int, int]], readings: dict[str, Reading]) -> list[list[int]]:
    """The jobs in order as units of work: a run of small files (what each gained: one small block) of one
    reading together (``ingest_batch``, up to ``Sizes.batch_bytes``), every other block alone."""
    sizes = config.sizes()
    blocks_of = Counter(str(path) for path, _, _ in jobs)
    units: list[list[int]] = []
    open_unit: list[int] = []
    held = 0
    for i, (path, s, e) in enumerate(jobs):
        reading = readings[str(path)]
        if blocks_of[str(path)] > 1 or not batchable(path, e - s, reading):
            open_unit, held = [], 0
            units.append([i])
            continue
        same = open_unit and readings[str(jobs[open_unit[0]][0])] == reading
        if not same or held + (e - s) > sizes.batch_bytes:
            open_unit, held = [], 0
            units.append(open_unit)
        open_unit.append(i)
        held += e - s
    return units


def _request(
    jobs: list[tuple[Path, int, int]],
    unit: list[int],
    directory: Path,
    readings: dict[str, Reading],
    max_line: int | None,
) -> str:
    """A worker's request line: one block (as before), or a batch of small ones."""
    path, s, e = jobs[unit[0]]
    reading = readings[str(path)].to_json()
    if len(unit) == 1:
        return json.dumps([str(path), s, e, str(directory), reading, max_line])
    return json.dumps(
        [BATCH, [[str(p), s, e] for p, s, e in (jobs[i] for i in unit)], str(directory), reading, max_line]
    )


BATCH = "batch"  # the first item of a worker request for ``ingest_batch``


def results_line(results: list[BlockResult]) -> str:
    """Results as one JSON line (a forked helper's or a worker's answer; ``results_from_json`` reads it)."""
    return "[" + ",".join(result_to_json(r) for r in results) + "]"


def results_from_json(line: str) -> list[BlockResult]:
    """A worker's answer: one result, or a batch's list of them."""
    data = json.loads(line)
    return [_result(d) for d in data] if isinstance(data, list) else [_result(data)]


def result_to_json(result: BlockResult) -> str:
    return json.dumps(asdict(result))


def result_from_json(line: str) -> BlockResult:
    return _result(json.loads(line))


def _result(data: dict) -> BlockResult:
    data["bad"] = [tuple(b) for b in data["bad"]]
    data["warnings"] = [tuple(w) for w in data["warnings"]]
    return BlockResult(**data)
