"""Fast paths for trainers' formats whose samples are flat rows: renamed JSON lines, Parquet tables.

verl, AReaL and SkyRL lines (and any log read through a field map) differ
from rl-board's own lines only in their key names, so pyarrow.json reads
them with the parse schema under the trainer's names and the columns are
renamed after. A TRL Parquet table is read as it is. Either way the table is
then made to look like rl-board's own (parse types, ``_line``); anything that
does not fit returns None and the block takes the careful record path, which
names every refusal.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from rl_board.rollouts import schema as S
from rl_board.rollouts.read import jsonl
from rl_board.rollouts.read.records import deep_lines

Renames = dict[str, str]  # key in the log -> rl-board field
_READ_OPTIONS = pj.ReadOptions(block_size=4 * 1024 * 1024)
_TEXT = (S.PROMPT, S.RESPONSE, S.REF_RESPONSE, S.GROUND_TRUTH)


def parse_renamed(data: bytes, *, first_line: int, renames: Renames, named_step: int | None,
                  post: Callable[[pa.Table], pa.Table] | None = None) -> jsonl.ParsedBlock | None:  # fmt: skip
    """A block of JSON lines whose keys are renamed rl-board fields; None when a line needs the careful path."""
    if jsonl.not_all_objects(data) or deep_lines(data):  # pyarrow.json crashes on deep nesting
        return None
    try:
        table = pj.read_json(io.BytesIO(data), read_options=_READ_OPTIONS, parse_options=_options(_key(renames)))
        for column in table.columns:
            if jsonl.has_text(column.type):
                column.validate(full=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    if table.num_rows != data.count(b"\n"):
        return None
    return _finish(_renamed(table, renames), first_line, named_step, post)


def parse_parquet(path: Path, *, renames: Renames, named_step: int | None,
                  post: Callable[[pa.Table], pa.Table] | None = None) -> jsonl.ParsedBlock | None:  # fmt: skip
    """A Parquet table of samples; None when its columns do not fit rl-board's types."""
    table = read_parquet(path)
    try:
        table = _conformed(_renamed(table, renames))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return _finish(table, 1, named_step, post)


def read_parquet(path: Path) -> pa.Table:
    """One Parquet file, whole: the plain file reader, in this thread, without pre-buffering.

    ``pq.read_table`` goes through the dataset layer and a thread pool: ~1 ms per file once warm and
    ~13 ms for a process's first, where this costs ~0.25 ms (TRL writes a small file per step).
    """
    with pq.ParquetFile(path, pre_buffer=False) as file:
        return file.read(use_threads=False)


def _finish(table: pa.Table, first_line: int, named_step: int | None,
            post: Callable[[pa.Table], pa.Table] | None) -> jsonl.ParsedBlock | None:  # fmt: skip
    if post is not None:
        table = post(table)
    if named_step is not None and S.STEP in table.column_names:
        table = table.set_column(table.schema.get_field_index(S.STEP), S.STEP,
                                 pc.fill_null(table.column(S.STEP), pa.scalar(named_step, pa.int64())))
    lines = pa.array(range(first_line, first_line + table.num_rows), pa.int64())
    parsed = jsonl.drop_missing_step(jsonl.with_lines(table, lines))
    parsed.warnings += _missing_response_or_reward(parsed.table)
    return parsed


def _missing_response_or_reward(table: pa.Table) -> list[tuple[int, str]]:
    out = []
    lines = table.column(S.LINE)
    for name in (S.RESPONSE, S.REWARD):
        missing = table.column(name).is_null()
        if name == S.REWARD:
            missing = pc.or_(missing, pc.is_nan(table.column(name)))
        out += [(line, f"no {name} in this sample") for line in lines.filter(missing).to_pylist()]
    return out


def _renamed(table: pa.Table, renames: Renames) -> pa.Table:
    """Trainer names -> rl-board names; a column already bearing a target name is kept as ``<name>_logged``."""
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


def _conformed(table: pa.Table) -> pa.Table:
    """Every parse-schema field present with its type (cast), then the extra columns."""
    columns, fields = [], []
    for fld in S.PARSE_SCHEMA:
        if fld.name in table.column_names:
            columns.append(table.column(fld.name).cast(fld.type))
        else:
            columns.append(pa.nulls(table.num_rows, fld.type))
        fields.append(fld)
    for name in table.column_names:
        if name not in S.KNOWN_FIELDS:
            columns.append(table.column(name))
            fields.append(table.schema.field(name))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


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


def row_sum(table: pa.Table, columns: list[str]) -> pa.Array:
    """The row-wise sum of numeric columns, NaN and null skipped (0 when a row has no value at all)."""
    values = np.column_stack([pc.cast(table.column(c), pa.float64()).to_numpy(zero_copy_only=False)
                              for c in columns])  # fmt: skip
    return pa.array(np.nansum(values, axis=1), pa.float64())
