"""Where an rl-board Parquet dataset lies: its ``step=N/`` files, found with one listing.

A folder (local or in a bucket) is such a dataset when every rollout file in it
sits in a ``step=N/`` folder and the files carry rl-board's derived columns
(``rl-board export`` writes them). Then it is read in place (``rollouts/lazy.py``)
instead of through the cache; the remote mirror asks the same question to leave
such a dataset in its bucket.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from rl_board.formats import schema as S
from rl_board.formats.flat import is_dataset_table
from rl_board.sources.locations import fsspec_of

PARTITION = re.compile(r"^step=(-?\d+)$")


@dataclass(frozen=True)
class DatasetFile:
    path: str  # in its filesystem
    name: str  # relative to the dataset: step=12/part-0.parquet
    step: int
    size: int
    version: str


@dataclass
class Located:
    """A dataset found at a location: its filesystem, its files (by step), and a signature of the listing."""

    location: str
    filesystem: pafs.FileSystem
    files: list[DatasetFile]

    @property
    def signature(self) -> str:
        return signature_of(self.files)


def locate(location: str | Path) -> Located | None:
    """The dataset at ``location`` if it is an rl-board Parquet dataset that can be read in place, else
    None."""
    listed = listed_files(location)
    if listed is None:
        return None
    fs, files = listed
    names = set()
    for file in files[:3]:  # the layout is judged on the first file that opens
        try:
            names = set(pq.read_schema(file.path, filesystem=fs).names)
            break
        except (OSError, pa.ArrowException):
            continue
    if not is_dataset_table(names) or not set(S.DERIVED_SAMPLE_FIELDS) <= names:
        return None
    return Located(str(location), fs, files)


def listed_files(location: str | Path) -> tuple[pafs.FileSystem, list[DatasetFile]] | None:
    """The ``step=N/*.parquet`` files at ``location`` by step (one listing, nothing opened), or None when
    there are none or other rollout files lie beside them."""
    fs, base = filesystem_of(location)
    try:
        listing = fs.get_file_info(pafs.FileSelector(base, recursive=True))
    except (FileNotFoundError, NotADirectoryError, OSError):
        return None
    files, others = [], 0
    for info in listing:
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(base) :].lstrip("/")
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts):
            continue
        match = PARTITION.match(parts[0]) if len(parts) == 2 else None
        if match and parts[1].endswith(".parquet"):
            files.append(DatasetFile(info.path, rel, int(match[1]), info.size or 0, str(info.mtime_ns or "")))
        elif rel.endswith((".jsonl", ".ndjson", ".parquet")):
            others += 1  # rollout files beside the partitions: not a pure dataset
    if not files or others:
        return None
    handler = getattr(fs, "handler", None)
    if isinstance(handler, _RangeReads):
        handler.sizes.update({f.path: f.size for f in files})
    files.sort(key=lambda f: (f.step, f.name))
    return fs, files


def signature_of(files: list[DatasetFile]) -> str:
    """Changes when a step file is added, removed or rewritten."""
    return repr([(f.name, f.size, f.version) for f in files])


def filesystem_of(location: str | Path) -> tuple[pafs.FileSystem, str]:
    """pyarrow's own local filesystem for a path; fsspec's driver, without read-ahead, for a URL."""
    if "://" not in str(location):
        return pafs.LocalFileSystem(), str(Path(location).expanduser().resolve())
    fs, path = fsspec_of(location)
    return pafs.PyFileSystem(_RangeReads(fs)), path


class _RangeReads(pafs.FSSpecHandler):
    """Files opened without fsspec's read-ahead (s3fs fetches 50 MB blocks by default): Parquet asks for
    the footer and the column chunks it needs, and only those bytes cross the network. Sizes known from
    the listing are passed on, which saves a HEAD request per file where the store's driver takes them."""

    def __init__(self, fs: Any) -> None:
        super().__init__(fs)
        self.sizes: dict[str, int] = {}

    def open_input_file(self, path: str) -> pa.PythonFile:
        size = self.sizes.get(path)
        if size is not None:
            try:
                return pa.PythonFile(self.fs.open(path, mode="rb", cache_type="none", size=size), mode="r")
            except TypeError:  # a driver that does not take a size
                self.sizes.clear()
        return pa.PythonFile(self.fs.open(path, mode="rb", cache_type="none"), mode="r")
