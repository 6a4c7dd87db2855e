"""A run as an open Parquet dataset: Hive-partitioned by step, one row group per step.

``OUT/step=12/part-0.parquet`` holds step 12's samples in sample order, with
every logged column, rl-board's derived per-sample columns (``kl_mean``,
``n_tokens``...), token arrays as list columns, and where each sample came
from (``sample``, ``file``, ``line``). The step is in the folder name only
(Hive style), so DuckDB, Spark, Polars or pyarrow read the step back with
``hive_partitioning``. OUT may be a local folder or any fsspec URL
(``s3://bucket/runs/x``). A dataset in this layout, written by rl-board or by
a Spark or Ray job, is itself a run (format ``rl-board-parquet``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rl_board.errors import InvalidArgumentError
from rl_board.formats import schema as S
from rl_board.formats.flat import from_dataset_names
from rl_board.lazy import pc
from rl_board.rollouts.read import records
from rl_board.sources.locations import fsspec_of

PART = "part-0.parquet"
META_KEY = b"rl_board"
HEAVY_TEXT = frozenset(
    {S.PROMPT, S.RESPONSE, S.REF_RESPONSE, S.GROUND_TRUTH, S.MESSAGES}
)  # read per step, not at open
Part = tuple[
    pa.Table, pa.Schema, dict[str, int], list[str]
]  # numbers, heavy schema, values set, column order
PRESENT_KEY = b"rl_board_present"  # {column: values set} of the file


@dataclass
class Written:
    """What an export wrote."""

    out: str
    steps: int
    samples: int
    bytes: int


def write_dataset(
    table: pa.Table,
    out: str | Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    compression: str = "zstd",
) -> Written:
    """Write ``table`` (``RolloutStore.arrow_samples()``: step, sample, file, line, ...) under ``out``.

    Each step is written to a temporary name and renamed, so a reader never sees half a step file.
    An index of every file's number columns goes to ``OUT/_rl_board/index.arrow`` (``write_index``).
    """

    if "step" not in table.column_names:
        raise InvalidArgumentError("the table to export has no step column")
    fs, base = fsspec_of(out)
    table = _plain_files(table).drop_columns([c for c in (S.LINE,) if c in table.column_names])
    steps = np.unique(table.column("step").to_numpy())
    order = pc.sort_indices(table, sort_keys=[("step", "ascending"), ("sample", "ascending")])
    ordered = table.take(order)
    step_col = ordered.column("step").to_numpy()
    starts = np.searchsorted(step_col, steps, side="left")
    ends = np.searchsorted(step_col, steps, side="right")
    body = ordered.drop_columns(["step"])
    total, entries = 0, []
    for k, (step, start, end) in enumerate(zip(steps, starts, ends, strict=True)):
        part = body.slice(int(start), int(end - start))
        counts = present_counts(part)
        meta = {
            **(part.schema.metadata or {}),
            META_KEY: b"dataset 1",
            PRESENT_KEY: json.dumps(counts).encode(),
        }
        part = part.replace_schema_metadata(meta)
        folder = f"{base}/step={int(step)}"
        fs.makedirs(folder, exist_ok=True)
        final, tmp = f"{folder}/{PART}", f"{folder}/.{PART}.tmp"
        with fs.open(tmp, "wb") as handle:
            pq.write_table(part, handle, row_group_size=max(part.num_rows, 1), compression=compression)
        fs.mv(tmp, final)
        size = int(fs.size(final))
        total += size
        entries.append(
            (
                f"step={int(step)}/{PART}",
                size,
                light_part(
                    part.select(light_names(part.schema)),
                    part.schema,
                    {n: counts[n] for n in part.schema.names if is_heavy(part.schema.field(n))},
                    int(step),
                ),
            )
        )
        if progress is not None:
            progress(k + 1, len(steps))
    write_index(fs, base, entries)  # a reader opens the whole dataset with one read of this file
    return Written(str(out), len(steps), table.num_rows, total)


def is_heavy(field: pa.Field) -> bool:
    """Text and token arrays: the bulk of a run, left in the files until a step is shown."""
    return (
        field.name in HEAVY_TEXT
        or pa.types.is_list(field.type)
        or pa.types.is_large_list(field.type)
        or pa.types.is_large_string(field.type)
    )


def light_names(schema: pa.Schema) -> list[str]:
    """The columns read when a dataset is opened: per-sample numbers and short text."""
    return [f.name for f in schema if not is_heavy(f) and f.name != "sample"]


def light_part(table: pa.Table, schema: pa.Schema, counts: dict[str, int], step: int) -> Part:
    """A step file's part from its number columns (``table``) and its full schema."""
    table = from_dataset_names(table)
    order = [
        {"file": "source_file", "line": "source_line"}.get(f.name, f.name)
        for f in schema
        if f.name != "sample"
    ]
    n = table.num_rows
    table = table.append_column(S.STEP, pa.array(np.full(n, step, dtype=np.int64)))
    table = table.append_column(S.LINE, pa.array(np.arange(1, n + 1, dtype=np.int64)))
    heavy = pa.schema([f for f in schema if is_heavy(f)])
    return table, heavy, counts, [*order, S.STEP, S.LINE]


# -- the index: every step file's part in one small file, so a bucket is opened with one read ---------------
INDEX = "_rl_board/index.arrow"  # beside the step folders; engines skip folders starting with "_"
FILE_INDEX_COL = "__file"


def write_index(fs: Any, base: str, entries: list[tuple[str, int, Part]]) -> None:
    """Write the index of (file name, file size, part) for every step file of a dataset at ``base``."""
    lights = [part[0] for _, _, part in entries]
    table = records.unify_tables(lights)
    table = table.append_column(
        FILE_INDEX_COL,
        pa.array(np.repeat(np.arange(len(lights), dtype=np.int32), [t.num_rows for t in lights])),
    )
    heavy = pa.unify_schemas([part[1] for _, _, part in entries], promote_options="permissive")
    meta = {
        b"files": json.dumps([[name, size] for name, size, _ in entries]).encode(),
        b"counts": json.dumps([part[2] for _, _, part in entries]).encode(),
        b"order": json.dumps([part[3] for _, _, part in entries]).encode(),
        b"heavy": heavy.serialize().to_pybytes(),
    }
    table = table.combine_chunks().replace_schema_metadata(meta)  # one batch: read back in one request
    fs.makedirs(f"{base}/_rl_board", exist_ok=True)
    tmp = f"{base}/_rl_board/.index.arrow.tmp"
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with fs.open(tmp, "wb") as handle, pa.ipc.new_file(handle, table.schema, options=options) as writer:
        writer.write_table(table)
    fs.mv(tmp, f"{base}/{INDEX}")


def _plain_files(table: pa.Table) -> pa.Table:
    """The file column as plain strings (dictionaries differ per step file otherwise)."""
    if "file" in table.column_names and pa.types.is_dictionary(table.schema.field("file").type):
        index = table.schema.get_field_index("file")
        table = table.set_column(index, "file", pc.cast(table.column("file"), pa.string()))
    return table


def present_counts(table: pa.Table) -> dict[str, int]:
    """Values set per column of one step file (written in its metadata: footers do not count null lists)."""
    return {name: table.num_rows - table.column(name).null_count for name in table.column_names}
