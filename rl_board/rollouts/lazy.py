"""An rl-board Parquet dataset opened where it lies (a local folder or a bucket), with no local copy.

Opening reads each step file's footer and its per-sample numbers (rewards,
KL means, lengths...: a few bytes per sample). Text and token arrays stay in
the files: a page that shows a step reads that step's file, only the columns
it needs (a range read per column chunk on object storage), and keeps the
last ones it read in memory (``Sizes.dataset_cache_bytes``). So opening one step of a 10 GB
run costs the footers, the number columns and one step's text.

A dataset is read this way when every file lies in a ``step=N/`` folder and
carries rl-board's derived columns (``rl-board export`` writes them); any
other Parquet layout goes through the columnar cache like any other log.
"""

from __future__ import annotations

import concurrent.futures
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from rl_board import config
from rl_board.errors import NotFoundError
from rl_board.formats import schema as S
from rl_board.rollouts import dataset
from rl_board.rollouts.read import records
from rl_board.rollouts.runview import RunView
from rl_board.sources.datasets import DatasetFile, Located, locate
from rl_board.sources.locations import fsspec_of

READERS = 16  # files read at once when opening (object stores answer faster in parallel)


def open_view(found: Located) -> tuple[LazyRunView, list[int], list[str]]:
    """The run's view (numbers in memory, text and tokens on demand), each file's row count, and why a
    file could not be read ("" when it could). An unreadable file is left out of the view, never fatal."""
    indexed = _indexed(found)

    def part_of(file: DatasetFile) -> tuple[Part | None, str]:
        known = indexed.get(file.name)
        if known is not None and known[0] == file.size:  # the file is as the index saw it
            return _checked(known[1])
        return _light_part_or_why(found.filesystem, file)

    with concurrent.futures.ThreadPoolExecutor(min(READERS, len(found.files))) as pool:
        tried = list(pool.map(part_of, found.files))
    errors = [why for _, why in tried]
    parts = [part for part, why in tried if part is not None]  # a part, or why there is none
    readable = [f for f, why in zip(found.files, errors, strict=True) if not why]
    if not parts:
        raise NotFoundError(f"no file of the Parquet dataset {found.location} can be read: {errors[0]}")
    lights = [p[0] for p in parts]  # each part: numbers table, heavy schema, values set, column order
    heavy_schema = pa.unify_schemas([p[1] for p in parts], promote_options="permissive")
    nulls: dict[str, int] = {}
    for _, _, present, _ in parts:
        for name, n in present.items():
            nulls[name] = nulls.get(name, 0) + n
    rows = [t.num_rows for t in lights]
    light = records.unify_tables(lights)
    file_idx = np.repeat(np.arange(len(rows), dtype=np.int32), rows)
    heavy = HeavyColumns(found.filesystem, [f.path for f in readable], heavy_schema, rows, nulls)
    heavy.order = list(dict.fromkeys(name for part in parts for name in part[3]))
    counts = iter(rows)
    per_file = [0 if why else next(counts) for why in errors]
    return LazyRunView([f.name for f in readable], light, file_idx, heavy), per_file, errors


def _light_part_or_why(fs: pafs.FileSystem, file: DatasetFile) -> tuple[Part | None, str]:
    """A file's part, or why it cannot be read (a damaged footer, a file of another layout)."""
    try:
        part = _light_part(fs, file)
    except (OSError, pa.ArrowException) as exc:
        return None, f"cannot be read as Parquet ({str(exc).splitlines()[0][:200]})"
    return _checked(part)


def _checked(part: Part) -> tuple[Part | None, str]:
    missing = [name for name in S.DERIVED_SAMPLE_FIELDS if name not in part[0].column_names]
    if missing:
        return None, (
            f"lacks rl-board's derived columns ({', '.join(missing[:3])}...): not in the layout "
            "`rl-board export` writes"
        )
    return part, ""


Part = dataset.Part


def _light_part(fs: pafs.FileSystem, file: DatasetFile) -> Part:
    """One step file's per-sample numbers (with step and line), its heavy columns' schema, their null
    counts."""
    with fs.open_input_file(file.path) as handle:
        parquet = pq.ParquetFile(handle, pre_buffer=True)  # nearby column chunks fetched in one range read
        schema = parquet.schema_arrow
        table = parquet.read(columns=dataset.light_names(schema))
        counts = _null_counts(parquet, [f.name for f in schema if dataset.is_heavy(f)])
    return dataset.light_part(table, schema, counts, file.step)


def reindex(location: str | Path) -> int:
    """Write (or rewrite) the index of the dataset at ``location`` from its step files; how many it covers.

    For a dataset grown by another writer since ``rl-board export`` made its index, or written by a job
    that made none: the next open then reads one file instead of every footer.
    """
    found = locate(location)
    if found is None:
        raise NotFoundError(f"{location} is not a Parquet dataset in rl-board's layout")
    with concurrent.futures.ThreadPoolExecutor(min(READERS, len(found.files))) as pool:
        tried = list(pool.map(lambda f: _light_part_or_why(found.filesystem, f), found.files))
    entries = [
        (f.name, f.size, part) for f, (part, _) in zip(found.files, tried, strict=True) if part is not None
    ]
    dataset.write_index(*fsspec_of(location), entries)
    return len(entries)


def _indexed(found: Located) -> dict[str, tuple[int, Part]]:
    """The index's parts by file name (with the size each was taken at); empty without a usable index."""
    base = _base_of(found)
    try:
        with found.filesystem.open_input_file(f"{base}/{dataset.INDEX}") as handle:
            data = handle.read()  # one request for the whole file, then parsed in memory
        table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
        meta = table.schema.metadata or {}
        files = json.loads(meta[b"files"])
        counts, orders = json.loads(meta[b"counts"]), json.loads(meta[b"order"])
        heavy = pa.ipc.read_schema(pa.py_buffer(meta[b"heavy"]))
        which = table.column(dataset.FILE_INDEX_COL).to_numpy()
    except (OSError, pa.ArrowException, KeyError, ValueError, TypeError):
        return {}  # no index, or one that cannot be trusted to parse: every file is read instead
    body = table.drop_columns([dataset.FILE_INDEX_COL]).replace_schema_metadata(None)
    out = {}
    starts = np.searchsorted(which, np.arange(len(files) + 1))
    for k, (name, size) in enumerate(files):
        part = body.slice(int(starts[k]), int(starts[k + 1] - starts[k]))
        out[str(name)] = (int(size), (part, heavy, dict(counts[k]), list(orders[k])))
    return out


def _null_counts(parquet: pq.ParquetFile, names: list[str]) -> dict[str, int]:
    """Values set per heavy column: as rl-board's export wrote them in the file's metadata, else every row
    (another writer's file: a column of only nulls then shows as present, with nothing in it)."""
    written = (parquet.schema_arrow.metadata or {}).get(dataset.PRESENT_KEY)
    try:
        counts = json.loads(written) if written else {}
    except ValueError:
        counts = {}
    rows = parquet.metadata.num_rows
    return {name: int(counts.get(name, rows)) for name in names}


class HeavyColumns:
    """Text and token columns, read per file on demand and kept in a bounded cache."""

    def __init__(
        self,
        fs: pafs.FileSystem,
        paths: list[str],
        schema: pa.Schema,
        rows: list[int],
        present: dict[str, int],
    ) -> None:
        self.fs, self.paths, self.schema = fs, paths, schema
        self.starts = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
        self.present = present  # values set per column (from the footers)
        self.order: list[str] = []  # every column of the run in the files' order
        self._cache: OrderedDict[tuple[int, str], pa.ChunkedArray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.reads = 0  # files opened since the view was built (benchmarks and tests look at it)

    @property
    def names(self) -> list[str]:
        return self.schema.names

    def has(self, name: str) -> bool:
        return self.present.get(name, 0) > 0

    def take(self, columns: list[str], rows: np.ndarray) -> pa.Table:
        """Rows (global indices) of heavy columns, in the order asked."""
        if not columns:
            return pa.table({})
        files = np.searchsorted(self.starts, rows, side="right") - 1
        order = np.argsort(files, kind="stable")
        parts = []
        for group in np.split(order, np.flatnonzero(np.diff(files[order])) + 1):
            if not len(group):
                continue
            k = int(files[group[0]])
            table = self._file(k, columns)
            parts.append(table.take(pa.array(rows[group] - self.starts[k])))
        taken = pa.concat_tables(parts, promote_options="permissive") if parts else self.schema.empty_table()
        return taken.select(columns).take(np.argsort(order, kind="stable"))

    def _file(self, k: int, columns: list[str]) -> pa.Table:
        with self._lock:
            missing = [c for c in columns if (k, c) not in self._cache]
        if missing:
            read = self._read(k, missing)
            with self._lock:
                for name in missing:
                    column = read.column(name)
                    self._cache[(k, name)] = column
                    self._bytes += column.nbytes
                self._evict(keep={(k, c) for c in columns})
        with self._lock:
            arrays = [self._cache[(k, c)] for c in columns]
            for c in columns:
                self._cache.move_to_end((k, c))
        return pa.table(arrays, names=columns)

    def _read(self, k: int, names: list[str]) -> pa.Table:
        try:
            with self.fs.open_input_file(self.paths[k]) as handle:
                parquet = pq.ParquetFile(handle)
                here = [n for n in names if n in parquet.schema_arrow.names]
                table = parquet.read(columns=here)
        except (OSError, pa.ArrowException) as exc:  # replaced or damaged since the run was opened
            raise NotFoundError(
                f"{self.paths[k]} can no longer be read ({str(exc).splitlines()[0][:200]}); reopen the run"
            ) from None
        self.reads += 1
        for name in names:
            if name not in here:
                table = table.append_column(
                    self.schema.field(name),
                    pa.nulls(
                        table.num_rows or int(self.starts[k + 1] - self.starts[k]),
                        self.schema.field(name).type,
                    ),
                )
        return table.cast(pa.schema([self.schema.field(n) for n in table.column_names]))

    def _evict(self, keep: set[tuple[int, str]]) -> None:
        while self._bytes > config.sizes().dataset_cache_bytes and len(self._cache) > len(keep):
            key = next(k for k in self._cache if k not in keep)
            self._bytes -= self._cache.pop(key).nbytes


class LazyRunView(RunView):
    """A RunView whose text and token columns are read per step file when asked for."""

    def __init__(self, files: list[str], table: pa.Table, file_idx: np.ndarray, heavy: HeavyColumns) -> None:
        super().__init__(files, table, file_idx)
        self.heavy = heavy

    @property
    def names(self) -> list[str]:
        """In the order of the files' columns (step and line last), as a cache-read run has them."""
        return [f.name for f in self.schema]

    @property
    def schema(self) -> pa.Schema:
        fields = [*self.table.schema, *self.heavy.schema]
        place = {name: k for k, name in enumerate(self.heavy.order)}
        return pa.schema(sorted(fields, key=lambda f: place.get(f.name, len(place))))

    def has(self, name: str) -> bool:
        return self.heavy.has(name) if name in self.heavy.names else super().has(name)

    def take(self, columns: list[str], rows: np.ndarray) -> pa.Table:
        rows = np.asarray(rows, dtype=np.int64)
        light = [c for c in columns if c in self.table.column_names]
        heavy = [c for c in columns if c in self.heavy.names]
        parts = {}
        if light:
            got = super().take(light, rows)
            parts.update({c: got.column(c) for c in light})
        if heavy:
            got = self.heavy.take(heavy, rows)
            parts.update({c: got.column(c) for c in heavy})
        return pa.table({c: parts[c] for c in columns if c in parts}) if parts else pa.table({})

    def full(self, columns: list[str]) -> pa.Table:
        return self.take(columns, np.arange(self.table.num_rows))

    def pieces(self, columns: list[str]) -> Iterator[pa.Table]:
        starts = self.heavy.starts
        for k in range(len(starts) - 1):
            yield self.take(columns, np.arange(starts[k], starts[k + 1]))

    def record(self, row: int) -> dict[str, Any]:
        return self.take(self.names, np.array([row])).to_pylist()[0]


def as_arrow_dataset(found: Located, paths: list[str] | None = None) -> pads.Dataset:
    """The dataset for SQL engines (its readable ``paths``): read lazily, ``step`` from the folder names."""
    return pads.dataset(
        paths or [f.path for f in found.files],
        filesystem=found.filesystem,
        format="parquet",
        partitioning=pads.partitioning(pa.schema([("step", pa.int64())]), flavor="hive"),
        partition_base_dir=_base_of(found),
    )


def _base_of(found: Located) -> str:
    first = found.files[0]
    return first.path[: -len(first.name)].rstrip("/")
