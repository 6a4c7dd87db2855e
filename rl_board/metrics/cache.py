"""A small on-disk cache of parsed metric tables, keyed by file size and mtime.

One entry per unit (a run's event files, a DI-engine folder, a text log):
`<cache_dir>/<key>/` holds the four tables as Arrow IPC files and a
`meta.json` with the file signature, problems, extras and (for text logs)
how far the log was read. Entries are written to a temporary folder and
renamed, so a reader never sees half an entry; an unreadable entry is
treated as missing and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.feather as feather

from rl_board import private
from rl_board.metrics.table import (
    EPISODE_COLUMNS,
    HISTOGRAM_COLUMNS,
    SCALAR_COLUMNS,
    TEXT_COLUMNS,
    Problem,
    ReadResult,
    empty_frame,
    from_arrow,
    to_arrow,
)

CACHE_VERSION = 2
"""Bump when a reader's output changes, so older entries are ignored."""
TABLES = {
    "scalars": SCALAR_COLUMNS,
    "histograms": HISTOGRAM_COLUMNS,
    "texts": TEXT_COLUMNS,
    "episodes": EPISODE_COLUMNS,
}


def signature(files: tuple[Path, ...] | list[Path]) -> list[list[Any]]:
    """(path, size, mtime_ns) of each file: any change means the entry is stale."""
    rows: list[list[Any]] = []
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            rows.append([str(path), -1, -1])
            continue
        rows.append([str(path), stat.st_size, stat.st_mtime_ns])
    return rows


def entry_dir(cache_dir: Path, kind: str, unit: Path) -> Path:
    """Where the entry for one unit lives (a hash of its kind and absolute path)."""
    digest = hashlib.sha256(f"{CACHE_VERSION}|{kind}|{unit.resolve()}".encode()).hexdigest()[:24]
    return cache_dir / digest


def load_meta(folder: Path) -> dict[str, Any] | None:
    """An entry's meta alone (its tables unread), or None when absent, unreadable or of another version."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("version") == CACHE_VERSION else None


def load_entry(folder: Path) -> tuple[ReadResult, dict[str, Any]] | None:
    """The cached result and its meta, or None when absent or unreadable."""
    meta = load_meta(folder)
    if meta is None:
        return None
    try:
        frames = {name: _read_table(folder / f"{name}.arrow", schema) for name, schema in TABLES.items()}
    except (OSError, ValueError, KeyError, pa.ArrowException):
        return None
    problems = [Problem(**p) for p in meta.get("problems", [])]
    return ReadResult(problems=problems, extras=meta.get("extras", {}), **frames), meta


def save_entry(folder: Path, result: ReadResult, meta: dict[str, Any]) -> None:
    """Write an entry atomically (temporary folder, then rename over the old one)."""
    private.make_dir(folder.parent)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    try:
        for name in TABLES:  # an empty table is no file (most runs have three): a miss reads as empty
            if len(getattr(result, name)):
                table = to_arrow(getattr(result, name), TABLES[name])
                feather.write_feather(table, str(tmp / f"{name}.arrow"), compression="uncompressed")
        full = {
            **meta,
            "version": CACHE_VERSION,
            "problems": [p.to_dict() for p in result.problems],
            "extras": result.extras,
        }
        (tmp / "meta.json").write_text(json.dumps(full, default=str), encoding="utf-8")
        private.tighten_tree(tmp)  # 0700 / 0600 before it is in place (mkdtemp's folder hid it until then)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _read_table(path: Path, schema: dict[str, str]) -> Any:
    """Read one Arrow file back with the schema's dtypes (list cells as Python lists); none is empty."""
    if not path.exists():
        return empty_frame(schema)
    return from_arrow(feather.read_table(str(path)), schema)


def prefix_digest(path: Path, offset: int, span: int = 4096) -> str:
    """A digest of the bytes just before `offset`: if they change, the log was rewritten, not appended."""
    start = max(0, offset - span)
    with path.open("rb") as handle:
        handle.seek(start)
        return hashlib.sha256(handle.read(offset - start)).hexdigest()
