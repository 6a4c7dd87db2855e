"""Fast paths for flat formats: renamed JSON lines and Parquet tables, read as whole tables.

verl, AReaL, SkyRL and TRL rows (and any log read through a field map) differ
from rl-board's own lines only in their key names, so pyarrow.json reads
them with the parse schema under the trainer's names and the columns are
renamed after; a Parquet table is read as it is. Either way the table is then
conformed and finished like every other path's (``contract``). Anything that
does not fit returns None and the block takes the careful record path, which
names every refusal.
"""

from __future__ import annotations

import functools
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq

from rl_board.formats import Format, Reading, step_from_name, tracker_tables
from rl_board.formats import schema as S
from rl_board.rollouts.read import contract, jsonl
from rl_board.rollouts.read.records import deep_lines

Renames = dict[str, str]  # key in the log -> rl-board field
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


def parse_renamed(
    data: bytes, *, first_line: int, path: Path, fmt: Format, reading: Reading
) -> jsonl.ParsedBlock | None:
    """A block of JSON lines of a flat format; None when a line needs the careful path."""
    table = read_renamed(data, fmt=fmt, reading=reading)
    return None if table is None else finish_renamed(table, first_line, path, fmt, reading)


def read_renamed(data: bytes, *, fmt: Format, reading: Reading) -> pa.Table | None:
    """JSON lines of a flat format as one conformed table under rl-board's names, one row per line, before
    ``finish`` (several small files' lines at once: ``ingest.ingest_batch``); None when a line needs the
    careful path."""
    if jsonl.not_all_objects(data) or deep_lines(data):  # pyarrow.json crashes on deep nesting
        return None
    renames = reading.renames(fmt)
    try:
        table = pj.read_json(
            io.BytesIO(data), read_options=jsonl.read_options(), parse_options=_options(_key(renames))
        )
        for column in table.columns:
            if jsonl.has_text(column.type):
                column.validate(full=True)
        if table.num_rows != data.count(b"\n") or not jsonl.token_strings_whole(table):
            return None
        return contract.conform(_renamed(table, renames))
    except _ARROW_ERRORS:
        return None


def parse_table(table: pa.Table, *, path: Path, fmt: Format, reading: Reading) -> jsonl.ParsedBlock | None:
    """A Parquet file's table of a flat format; None when its columns do not fit rl-board's types."""
    try:
        table = contract.conform(_renamed(table, reading.renames(fmt)))
    except _ARROW_ERRORS:
        return None
    if not jsonl.token_strings_whole(table):
        return None
    return finish_renamed(table, 1, path, fmt, reading)


def read_parquet(path: Path) -> pa.Table:
    """One Parquet file, whole: the plain file reader, in this thread, without pre-buffering.

    ``pq.read_table`` goes through the dataset layer and a thread pool: ~1 ms per file once warm and
    ~13 ms for a process's first, where this costs ~0.25 ms (TRL writes a small file per step).
    """
    with pq.ParquetFile(path, pre_buffer=False) as file:
        return file.read(use_threads=False)


def document_rows(path: Path, data: bytes) -> list[dict]:
    """The rows of a table a trainer logged to a tracker (``formats.tracker_tables``); [] when the bytes
    no longer hold one (the file changed since it was classified)."""
    return tracker_tables.rows_of(tracker_tables.parsed(data), path.name) or []


def rows_table(rows: list[dict]) -> pa.Table | None:
    """Rows as one table for the fast path; None when their values do not make typed columns."""
    try:
        return pa.Table.from_pylist(rows)
    except _ARROW_ERRORS:
        return None


def finish_renamed(
    table: pa.Table, first_line: int, path: Path, fmt: Format, reading: Reading
) -> jsonl.ParsedBlock:
    """A conformed table of one file's lines (from ``first_line``) through ``contract.finish``."""
    lines = pa.array(range(first_line, first_line + table.num_rows), pa.int64())
    parsed = jsonl.ParsedBlock(jsonl.with_lines(table, lines))
    return contract.finish(parsed, fmt=fmt, reading=reading, named_step=step_from_name(path))


def _renamed(table: pa.Table, renames: Renames) -> pa.Table:
    """Trainer names -> rl-board names; a column already bearing a target name is kept as
    ``<name>_logged``."""
    targets = set(renames.values())
    names = []
    for name in table.column_names:
        if name in renames:
            names.append(renames[name])
        elif name in targets:
            names.append(f"{name}_logged")
        else:
            names.append(name)
    return table.rename_columns(names)


@functools.lru_cache(maxsize=64)
def _options(renames: tuple[tuple[str, str], ...]) -> pj.ParseOptions:
    """The parse schema under the log's own key names."""
    source_of = {canonical: source for source, canonical in renames}
    fields, used = [], set()
    for f in S.PARSE_SCHEMA:
        name = source_of.get(f.name, f.name)
        if name not in used:
            fields.append(pa.field(name, f.type))
            used.add(name)
    return pj.ParseOptions(explicit_schema=pa.schema(fields), unexpected_field_behavior="infer")


def _key(renames: Renames) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(renames.items()))
