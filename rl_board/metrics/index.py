"""The index of a metrics root: every run and its tags, without their points.

A sweep or a team's long-lived logdir holds thousands of runs. The Metrics
page lists them at once (``discover`` only walks folders) and draws the
chosen runs' points (``load_metrics(runs=...)``); the index, what every run
holds, fills in the background on every core. Each run's facts live in its
cache entry's meta, and the whole index in one file per root keyed by the
signature of every metric file, so a revisit, a restarted server or
``rl-board scalars`` again costs one walk and one small read.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_board import private
from rl_board.metrics.parallel import Progress, map_batches
from rl_board.metrics.reader import (
    RunInfo,
    RunSource,
    discover,
    info_batch,
    root_and_cache,
    sources_signature,
    split_refused,
)
from rl_board.metrics.table import Problem
from rl_board.sources.catalogue import NO_METRIC_LINES

INDEX_VERSION = 1
"""Bump when what an index file holds changes."""


@dataclass
class MetricsIndex:
    """Every metric run under a root: its facts and tags (``RunInfo``), what was refused or skipped."""

    root: Path
    runs: list[RunInfo]
    problems: list[Problem]
    skipped: list[Problem]
    signature: str
    from_cache: bool = False

    def run(self, name: str) -> RunInfo | None:
        """The RunInfo named `name`, if any."""
        return next((r for r in self.runs if r.run == name), None)


def metrics_index(
    path: Path | str,
    *,
    cache_dir: Path | str | None = None,
    allowed_roots: list[Path] | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
    niceness: int = 0,
    sources: list[RunSource] | None = None,
) -> MetricsIndex:
    """The index of every metric run under `path`, from its index file when no metric file changed.

    ``niceness`` lowers the readers' priority (``parallel.map_batches``), for builds behind a page;
    ``sources`` are the runs as ``discover`` just found them (not walked again).
    """
    root, cache = root_and_cache(path, cache_dir)
    if sources is None:
        sources = discover(root, skip=(cache,) if cache is not None else (), allowed=allowed_roots)
    sig = sources_signature(root, sources, allowed_roots)
    file = index_file(cache, root, allowed_roots) if cache is not None else None
    known = _load(file, sig) if file is not None else None
    if known is not None:
        if progress is not None:
            progress(len(known.runs), len(known.runs))
        return known
    refused, readable = split_refused(sources, allowed_roots)
    infos = map_batches(
        info_batch,
        [(s, cache, allowed_roots) for s in readable],
        workers=workers,
        progress=progress,
        niceness=niceness,
    )
    runs = [info for info in infos if info is not None]
    skipped = [
        Problem(str(s.path), NO_METRIC_LINES) for s, info in zip(readable, infos, strict=True) if info is None
    ]
    index = MetricsIndex(root.resolve(), runs, refused + [p for r in runs for p in r.problems], skipped, sig)
    if file is not None:
        _save(file, index, refused)
    return index


def index_file(cache: Path, root: Path, allowed_roots: list[Path] | None) -> Path:
    """Where a root's index lives: one file per root and confinement (a CLI index is not a server's)."""
    roots = None if allowed_roots is None else sorted(str(r) for r in allowed_roots)
    key = hashlib.sha256(json.dumps([INDEX_VERSION, str(root.resolve()), roots]).encode()).hexdigest()[:24]
    return cache / "index" / f"{key}.json"


def _load(file: Path, sig: str) -> MetricsIndex | None:
    """The stored index when it was built from exactly these files, else None."""
    try:
        raw: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
        if raw.get("version") != INDEX_VERSION or raw.get("signature") != sig:
            return None
        runs = [RunInfo.from_dict(r) for r in raw["runs"]]
        refused = [Problem(**p) for p in raw["refused"]]
        skipped = [Problem(**p) for p in raw["skipped"]]
        root = Path(raw["root"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return MetricsIndex(
        root, runs, refused + [p for r in runs for p in r.problems], skipped, sig, from_cache=True
    )


def _save(file: Path, index: MetricsIndex, refused: list[Problem]) -> None:
    """Write the index atomically (a reader never sees half of it); a failed write only costs a rebuild."""
    raw = {
        "version": INDEX_VERSION,
        "signature": index.signature,
        "root": str(index.root),
        "runs": [r.to_dict() for r in index.runs],
        "refused": [p.to_dict() for p in refused],
        "skipped": [p.to_dict() for p in index.skipped],
    }
    try:
        private.make_dir(file.parent)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=file.parent)
        os.fchmod(fd, private.FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(raw, handle, default=str)
        os.replace(tmp, file)
    except OSError:
        return
