"""One entry point for scalar metrics: `load_metrics(path, *, cache_dir=None, allowed_roots=None)`.

It discovers runs, reads each with the right reader (through the on-disk
cache when a cache folder is given) and returns a `MetricsBundle`: long
tables plus per-run facts. Bad data never raises here; it becomes a
`Problem` in the bundle. Only a path that does not exist is an error.

A server passes its served roots as ``allowed_roots``: every file a reader
would open, list or stat is first checked with ``sources.roots.inside``, and
one that links outside them (event file, logger, config, checkpoint, text
log) is a problem ("links outside the served folders; not read").
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Collection
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from rl_board.errors import NotFoundError
from rl_board.metrics import kinds
from rl_board.metrics.cache import entry_dir, load_entry, load_meta, prefix_digest, save_entry, signature
from rl_board.metrics.kind import NOT_METRICS, RUN_KIND, MetricKind, RunSource
from rl_board.metrics.kinds import metric_catalogue
from rl_board.metrics.parallel import Progress, map_batches
from rl_board.metrics.table import (
    EPISODE_COLUMNS,
    HISTOGRAM_COLUMNS,
    SCALAR_COLUMNS,
    TEXT_COLUMNS,
    Problem,
    ReadResult,
    concat_frames,
    merge_results,
)
from rl_board.sources.catalogue import METRICS, NO_METRIC_LINES, Source
from rl_board.sources.roots import OUTSIDE, inside

if TYPE_CHECKING:  # frames are built by what reads; annotations only here
    import pandas as pd

__all__ = ["RunSource", "metric_catalogue"]  # re-exported: defined with the kinds' contract and registry


OUTSIDE_KIND = "outside"  # a file linked from outside the allowed folders: named, never read


def discover(
    root: Path, *, skip: tuple[Path, ...] = (), allowed: list[Path] | None = None
) -> list[RunSource]:
    """The metric sources the root's catalogue found, named by their path relative to the root.

    With ``allowed``, a file linked from outside those folders that a kind could claim by its name comes
    back as kind "outside" (never opened).
    """
    found = metric_catalogue(root, skip=skip, allowed=allowed)
    base = found.root if found.root.is_dir() else found.root.parent
    out = [
        RunSource(found.name(s.path), OUTSIDE_KIND, s.path)
        for s in found.skipped
        if s.reason == OUTSIDE and any(k.may_claim(s.path) for k in kinds.KINDS)
    ]
    out += [RunSource(_run_name(s, base), s.format, s.path, s.files, s.part) for s in found.of_role(METRICS)]
    return sorted(out, key=lambda s: s.run)


def _run_name(source: Source, base: Path) -> str:
    """A run is named for its path (or the path it is named by) relative to the root; a run inside a store
    holding several adds its own name."""
    named = source.named_by or source.path
    if named == base:
        name = "." if source.named_by is None and source.path.is_dir() else base.name
    else:
        try:
            name = named.relative_to(base).as_posix()
        except ValueError:
            name = named.name
    return f"{name}/{source.label}" if source.label else name


@dataclass
class RunInfo:
    """What one run is and what came with it besides series.

    kind: the name of the metric kind that read it, or the variant it turned out to be
    (``kinds.label`` names it for a page).
    DI-engine runs fill config_text (never executed), network_text,
    checkpoints (name, size, mtime, exists, kind, iteration, logged_at) and
    files (each logger: role, path, status ok|empty|missing, records).
    """

    run: str
    kind: str
    path: str
    sources: list[str] = field(default_factory=list)
    hparams: dict[str, Any] = field(default_factory=dict)
    config_text: str = ""
    network_text: str = ""
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    tags: dict[str, dict[str, int]] = field(default_factory=dict)
    """Scalar tag -> points, first_step, last_step: what a run list shows without its points."""
    histogram_tags: list[str] = field(default_factory=list)
    step_source: str = ""
    """Which step the points are at, in words, when a store numbers its points besides the trainer's step
    (a tracker's own counter against the run's declared step metric)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly, for the cache (``from_dict`` reads it back)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}  # shallow: asdict deep-copies every tag
        out["problems"] = [p.to_dict() for p in self.problems]
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RunInfo:
        return cls(**{**raw, "problems": [Problem(**p) for p in raw.get("problems", [])]})


@dataclass
class MetricsBundle:
    """Everything found under a path.

    scalars: run, source, tag, step, value, wall_time (see table.SCALAR_COLUMNS)
    histograms: run, source, tag, step, wall_time, left, right, count (lists)
    texts: run, source, tag, step, wall_time, text
    episodes: DI-engine evaluator episodes: run, train_iter, env, episode, reward
    """

    root: Path
    scalars: pd.DataFrame
    histograms: pd.DataFrame
    texts: pd.DataFrame
    episodes: pd.DataFrame
    runs: list[RunInfo]
    problems: list[Problem]
    skipped: list[Problem] = field(default_factory=list)  # text logs that hold no metric line

    def run(self, name: str) -> RunInfo | None:
        """The RunInfo named `name`, if any."""
        return next((r for r in self.runs if r.run == name), None)

    def series(self, run: str, tag: str, *, source: str | None = None) -> pd.DataFrame:
        """Points of one tag of one run, sorted by step."""
        frame = self.scalars
        mask = (frame["run"] == run) & (frame["tag"] == tag)
        if source is not None:
            mask &= frame["source"] == source
        return frame[mask].sort_values("step", kind="stable").reset_index(drop=True)


def load_metrics(
    path: Path | str,
    *,
    cache_dir: Path | str | None = None,
    allowed_roots: list[Path] | None = None,
    runs: Collection[str] | None = None,
    sources: list[RunSource] | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
) -> MetricsBundle:
    """Read the metric runs under `path` (a folder or one file); with `allowed_roots`, nothing outside.

    ``runs`` names the runs to read, or ``sources`` gives them as ``discover``
    found them (the others are not opened: a chart needs only its runs'
    points). Many runs are read in worker processes
    (``parallel.map_batches``); ``progress`` hears (done, total).
    """
    root, cache = root_and_cache(path, cache_dir)
    if sources is None:
        sources = discover(root, skip=(cache,) if cache is not None else (), allowed=allowed_roots)
    if runs is not None:
        wanted = set(runs)
        sources = [s for s in sources if s.run in wanted]
    refused, readable = split_refused(sources, allowed_roots)
    jobs = [(source, cache, allowed_roots) for source in readable]
    reads = map_batches(read_batch, jobs, workers=workers, progress=progress)
    infos: list[RunInfo] = []
    parts: list[ReadResult] = []
    skipped: list[Problem] = []
    for source, read in zip(readable, reads, strict=True):
        if read is None:
            skipped.append(Problem(str(source.path), NO_METRIC_LINES))
            continue
        infos.append(read[0])
        parts.append(read[1])
    merged = merge_results(parts) if parts else None
    return MetricsBundle(
        root=root.resolve(),
        scalars=merged.scalars if merged else concat_frames([], SCALAR_COLUMNS),
        histograms=merged.histograms if merged else concat_frames([], HISTOGRAM_COLUMNS),
        texts=merged.texts if merged else concat_frames([], TEXT_COLUMNS),
        episodes=merged.episodes if merged else concat_frames([], EPISODE_COLUMNS),
        runs=infos,
        problems=refused + [p for info in infos for p in info.problems],
        skipped=skipped,
    )


Job = tuple[RunSource, "Path | None", "list[Path] | None"]
"""One run to read: its source, the cache folder and the allowed roots (picklable, for workers)."""


def read_batch(jobs: list[Job]) -> list[tuple[RunInfo, ReadResult] | None]:
    """Read runs with their tables (``parallel.map_batches`` calls it in workers)."""
    return [_read_source(source, cache, allowed) for source, cache, allowed in jobs]


def info_batch(jobs: list[Job]) -> list[RunInfo | None]:
    """The facts of runs, from their cache entries' meta when fresh, else read (and cached) in full."""
    out: list[RunInfo | None] = []
    for source, cache, allowed in jobs:
        known = _cached_info(source, cache, allowed)
        if known is None:
            read = _read_source(source, cache, allowed)
            known = read[0] if read is not None else None
        out.append(known)
    return out


def root_and_cache(path: Path | str, cache_dir: Path | str | None) -> tuple[Path, Path | None]:
    root = Path(path).expanduser()
    if not root.exists():
        raise NotFoundError(f"path not found: {root}")
    return root, Path(cache_dir).expanduser() if cache_dir is not None else None


def split_refused(
    sources: list[RunSource], allowed_roots: list[Path] | None
) -> tuple[list[Problem], list[RunSource]]:
    """Sources outside the allowed roots (named, never read) and the rest."""
    refused = [s for s in sources if s.kind == OUTSIDE_KIND or not _source_allowed(s, allowed_roots)]
    gone = {id(s) for s in refused}
    return [Problem(str(s.path), OUTSIDE) for s in refused], [s for s in sources if id(s) not in gone]


def metrics_signature(
    path: Path | str, *, cache_dir: Path | str | None = None, allowed_roots: list[Path] | None = None
) -> str:
    """A short digest of every file `load_metrics(path)` reads (path, size, mtime).

    It changes exactly when a new `load_metrics` could give a different
    answer, so callers can key their own caches on it; it only stats files
    (never one outside `allowed_roots`: such a file counts by its name alone).
    """
    root, cache = root_and_cache(path, cache_dir)
    sources = discover(root, skip=(cache,) if cache is not None else (), allowed=allowed_roots)
    return sources_signature(root, sources, allowed_roots)


def sources_signature(root: Path, sources: list[RunSource], allowed_roots: list[Path] | None) -> str:
    """``metrics_signature`` of sources already discovered."""
    files: list[Path] = []
    outside: list[str] = []
    for source in sources:
        if source.kind == OUTSIDE_KIND or not _source_allowed(source, allowed_roots):
            outside.append(str(source.path))
            continue
        kept, refused = _unit_files(source, allowed_roots)
        files.extend(kept)
        outside.extend(str(f) for f in refused)
    raw = json.dumps([str(root.resolve()), signature(files), outside])
    return hashlib.sha1(raw.encode()).hexdigest()[:16]


def _source_allowed(source: RunSource, allowed_roots: list[Path] | None) -> bool:
    """A text log or run folder lies inside the allowed roots (its files are checked by their reader)."""
    return allowed_roots is None or inside(source.path, allowed_roots)


def _read_source(
    source: RunSource, cache: Path | None, allowed_roots: list[Path] | None = None
) -> tuple[RunInfo, ReadResult] | None:
    """Read one discovered run through its kind (and the cache); None for a file that held no metric."""
    kind = kinds.by_name(source.kind)
    if kind.appends:
        return _appended(kind, source, cache, allowed_roots)
    return _cached(kind, source, cache, allowed_roots)


def _facts(kind: MetricKind, source: RunSource, result: ReadResult) -> RunInfo:
    """``run_info`` of a run its kind read: of the kind it turned out to be (a text log's line format)."""
    return run_info(source, result.extras.get(RUN_KIND, kind.name), result)


def run_info(source: RunSource, kind: str, result: ReadResult) -> RunInfo:
    """What a run is, from what was read of it (its tags summarised, not its points)."""
    frames = (result.scalars, result.histograms, result.texts)
    return RunInfo(
        run=source.run,
        kind=kind,
        path=str(source.path),
        sources=sorted({str(v) for frame in frames for v in frame["source"].unique()}),
        hparams=result.extras.get("hparams", {}),
        config_text=result.extras.get("config_text", ""),
        network_text=result.extras.get("network_text", ""),
        checkpoints=result.extras.get("checkpoints", []),
        files=result.extras.get("files", []),
        problems=list(result.problems),
        tags=tag_summary(result.scalars),
        histogram_tags=sorted(str(t) for t in result.histograms["tag"].unique()),
        step_source=str(result.extras.get("step_source", "")),
    )


def tag_summary(scalars: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Per tag: how many points and the first and last step (one group-by, not a loop over tags)."""
    if not len(scalars):
        return {}
    table = pa.table(
        {"tag": pa.array(scalars["tag"].array, pa.string()), "step": pa.array(scalars["step"].array)}
    )
    stats = table.group_by("tag").aggregate([("step", "count"), ("step", "min"), ("step", "max")]).to_pydict()
    rows = zip(stats["tag"], stats["step_count"], stats["step_min"], stats["step_max"], strict=True)
    return {
        str(tag): {"points": int(n), "first_step": int(lo), "last_step": int(hi)}
        for tag, n, lo, hi in sorted(rows, key=lambda row: str(row[0]))
    }


def _unit_files(source: RunSource, allowed_roots: list[Path] | None = None) -> tuple[list[Path], list[Path]]:
    """The files whose size/mtime decide whether a cached entry is still good, and those refused.

    A file that links outside ``allowed_roots`` is refused before it is stat-ed.
    """
    files = kinds.by_name(source.kind).watched(source)
    refused = [f for f in files if allowed_roots is not None and not inside(f, allowed_roots)]
    out = set(refused)
    return [f for f in files if f not in out], refused


def _cached(
    kind: MetricKind, source: RunSource, cache: Path | None, allowed_roots: list[Path] | None = None
) -> tuple[RunInfo, ReadResult]:
    """A run read whole: the cache entry when its signature matches; otherwise read, then stored.

    The signature names the allowed roots and the refused files, so an entry
    read without confinement (the CLI) is never served as a confined one. The
    entry's meta keeps the run's facts, so an index needs no table of it.
    """
    if cache is None:
        result = kind.read(source, allowed_roots)
        return _facts(kind, source, result), result
    folder, sig = _entry_key(source, cache, allowed_roots)
    hit = load_entry(folder)
    if hit is not None and hit[1].get("signature") == sig and "info" in hit[1]:
        return RunInfo.from_dict(hit[1]["info"]), hit[0]
    result = kind.read(source, allowed_roots)
    info = _facts(kind, source, result)
    save_entry(folder, result, {"signature": sig, "info": info.to_dict()})
    return info, result


def _cached_info(source: RunSource, cache: Path | None, allowed_roots: list[Path] | None) -> RunInfo | None:
    """A run's facts from its fresh cache entry's meta alone; None when it must be read."""
    if cache is None or source.kind == OUTSIDE_KIND:
        return None
    kind = kinds.by_name(source.kind)
    if kind.appends:
        unit = _appended_unit(kind, source, cache)
        meta = load_meta(unit) if unit is not None else None
        fresh = meta is not None and meta.get("signature") == signature(kind.watched(source))
        return RunInfo.from_dict(meta["info"]) if fresh and meta is not None and "info" in meta else None
    folder, sig = _entry_key(source, cache, allowed_roots)
    meta = load_meta(folder)
    if meta is None or meta.get("signature") != sig or "info" not in meta:
        return None
    return RunInfo.from_dict(meta["info"])


def _entry_key(source: RunSource, cache: Path, allowed_roots: list[Path] | None) -> tuple[Path, list[Any]]:
    """A folder run's cache entry and the signature it must carry to be fresh (JSON-shaped, as stored)."""
    kept, refused = _unit_files(source, allowed_roots)
    roots = None if allowed_roots is None else sorted(str(r) for r in allowed_roots)
    unit = source.path if not source.part else source.path / source.part
    return entry_dir(cache, source.kind, unit), [signature(kept), [str(f) for f in refused], roots]


def _appended(
    kind: MetricKind, source: RunSource, cache: Path | None, allowed_roots: list[Path] | None
) -> tuple[RunInfo, ReadResult] | None:
    """A store that only grows, read from where the cached read stopped when the bytes before it are
    unchanged (else from the start); what was read whole is cached, a record still being written is not.
    The entry's meta keeps the run's facts with the watched files' signature, so an index of unchanged
    runs needs no read (``_cached_info``). None for a file that held no metric."""
    log = kind.watched(source)[0]
    unit = _appended_unit(kind, source, cache)
    hit = load_entry(unit) if unit is not None else None
    if hit is not None and _unchanged_and_whole(kind, source, hit[1]):
        return RunInfo.from_dict(hit[1]["info"]), hit[0]
    resume, base = _resume_point(log, hit)
    read = kind.read_from(source, resume, allowed_roots)
    if read.restarted:
        base = None
    committed = merge_results([base, read.committed]) if base is not None else read.committed
    committed.extras = kind.merge_extras(base.extras if base is not None else {}, read.committed.extras)
    if committed.extras.get(NOT_METRICS):
        return None
    result = merge_results([committed, read.tail])
    result.extras = committed.extras
    info = _facts(kind, source, result)
    offset = int(read.resume.get("offset", 0))
    if unit is not None and (base is None or read.resume != resume):
        meta = {
            "resume": read.resume,
            "digest": prefix_digest(log, offset),
            "whole": _empty(read.tail),
            "signature": signature(kind.watched(source)),
            "info": info.to_dict(),
        }
        save_entry(unit, committed, meta)
    return info, result


SETTLED_NS = 2_000_000_000
"""A file changed this recently may change again within its mtime's tick at the same size: it is read."""


def _unchanged_and_whole(kind: MetricKind, source: RunSource, meta: dict[str, Any]) -> bool:
    """The cached read is the whole answer: no watched file changed since (nor so recently that a change
    could hide in the same mtime), and it had no unfinished tail."""
    if not meta.get("whole") or "info" not in meta:
        return False
    now = time.time_ns()
    files = signature(kind.watched(source))
    return meta.get("signature") == files and all(now - mtime > SETTLED_NS for _, _, mtime in files)


def _empty(part: ReadResult) -> bool:
    """A read's part with no point, row or problem in it."""
    frames = (part.scalars, part.histograms, part.texts, part.episodes)
    return not part.problems and not any(len(frame) for frame in frames)


def _appended_unit(kind: MetricKind, source: RunSource, cache: Path | None) -> Path | None:
    """The cache entry of an appending run (a store holding several runs has one per run)."""
    if cache is None:
        return None
    log = kind.watched(source)[0]
    return entry_dir(cache, kind.name, log / source.part if source.part else log)


def _resume_point(
    log: Path,
    hit: tuple[ReadResult, dict[str, Any]] | None,
) -> tuple[dict[str, Any] | None, ReadResult | None]:
    """Where to resume reading: the cached point (of the entry ``hit``) if the bytes before it are
    unchanged."""
    if hit is None:
        return None, None
    result, meta = hit
    resume = meta.get("resume")
    if not isinstance(resume, dict):
        return None, None
    offset = int(resume.get("offset", 0))
    try:
        unchanged = log.stat().st_size >= offset and prefix_digest(log, offset) == meta.get("digest")
    except OSError:
        return None, None
    return (resume, result) if unchanged else (None, None)
