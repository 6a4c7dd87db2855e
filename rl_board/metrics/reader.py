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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rl_board.errors import NotFoundError
from rl_board.metrics.cache import entry_dir, load_entry, prefix_digest, save_entry, signature
from rl_board.metrics.dilogs import read_di_engine_texts
from rl_board.metrics.stdout import JSONL_SOURCE, TextProgress, read_text_metrics, why_no_metric_lines
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
from rl_board.metrics.tensorboard import read_event_files
from rl_board.metrics.trainer_state import read_trainer_state
from rl_board.sources.catalogue import (
    METRICS,
    NO_METRIC_LINES,
    TRAINER_STATE,
    Catalogue,
    catalogue,
    may_hold_metrics,
)
from rl_board.sources.roots import OUTSIDE, inside


def metric_catalogue(root: Path, **options: Any) -> Catalogue:
    """The root's catalogue with text files judged by this layer's line parser: a text file is a metric
    source only when it holds a metric line (``stdout.why_no_metric_lines``)."""
    return catalogue(root, text_logs=why_no_metric_lines, **options)


OUTSIDE_KIND = "outside"  # a file linked from outside the allowed folders: named, never read


@dataclass(frozen=True)
class RunSource:
    """Where one metric run's data lives. kind is "tensorboard", "di-engine" or "text" (decided on reading)."""

    run: str
    kind: str
    path: Path
    files: tuple[Path, ...] = ()


def discover(root: Path, *, skip: tuple[Path, ...] = (), allowed: list[Path] | None = None) -> list[RunSource]:
    """The metric sources the root's catalogue found, named by their path relative to the root.

    With ``allowed``, a file linked from outside those folders comes back as kind "outside" (never opened).
    """
    found = metric_catalogue(root, skip=skip, allowed=allowed)
    base = found.root if found.root.is_dir() else found.root.parent
    out = [RunSource(found.name(s.path), OUTSIDE_KIND, s.path) for s in found.skipped
           if s.reason == OUTSIDE and may_hold_metrics(s.path)]  # fmt: skip
    for s in found.of_role(METRICS):
        if s.path.is_dir():
            out.append(RunSource(s.folder, s.format, s.path, s.files))
        elif s.format == "tensorboard":  # a root that is one event file
            out.append(RunSource(s.path.name, "tensorboard", s.path.parent, (s.path,)))
        elif s.format == TRAINER_STATE:  # named for the output folder the checkpoints are in
            out_dir = s.path.parent.parent
            name = out_dir.relative_to(base).as_posix() if out_dir != base else base.name
            out.append(RunSource(name, TRAINER_STATE, s.path, (s.path,)))
        else:
            name = s.path.relative_to(base).as_posix() if s.path != found.root else s.path.name
            out.append(RunSource(name, "text", s.path, (s.path,)))
    return sorted(out, key=lambda s: s.run)


@dataclass
class RunInfo:
    """What one run is and what came with it besides series.

    kind: "tensorboard" | "di-engine" | "stdout" | "jsonl".
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


def load_metrics(path: Path | str, *, cache_dir: Path | str | None = None,
                 allowed_roots: list[Path] | None = None) -> MetricsBundle:  # fmt: skip
    """Read every metric run under `path` (a folder or one file); with `allowed_roots`, nothing outside."""
    root = Path(path).expanduser()
    if not root.exists():
        raise NotFoundError(f"path not found: {root}")
    cache = Path(cache_dir).expanduser() if cache_dir is not None else None
    skip = (cache,) if cache is not None else ()
    runs: list[RunInfo] = []
    parts: list[ReadResult] = []
    skipped: list[Problem] = []
    refused: list[Problem] = []
    for source in discover(root, skip=skip, allowed=allowed_roots):
        if source.kind == OUTSIDE_KIND or not _source_allowed(source, allowed_roots):
            refused.append(Problem(str(source.path), OUTSIDE))
            continue
        read = _read_source(source, cache, allowed_roots)
        if read is None:
            skipped.append(Problem(str(source.path), NO_METRIC_LINES))
            continue
        info, result = read
        runs.append(info)
        parts.append(result)
    merged = merge_results(parts) if parts else None
    return MetricsBundle(
        root=root.resolve(),
        scalars=merged.scalars if merged else concat_frames([], SCALAR_COLUMNS),
        histograms=merged.histograms if merged else concat_frames([], HISTOGRAM_COLUMNS),
        texts=merged.texts if merged else concat_frames([], TEXT_COLUMNS),
        episodes=merged.episodes if merged else concat_frames([], EPISODE_COLUMNS),
        runs=runs,
        problems=refused + [p for info in runs for p in info.problems],
        skipped=skipped,
    )


def metrics_signature(path: Path | str, *, cache_dir: Path | str | None = None,
                      allowed_roots: list[Path] | None = None) -> str:  # fmt: skip
    """A short digest of every file `load_metrics(path)` reads (path, size, mtime).

    It changes exactly when a new `load_metrics` could give a different
    answer, so callers can key their own caches on it; it only stats files
    (never one outside `allowed_roots`: such a file counts by its name alone).
    """
    root = Path(path).expanduser()
    if not root.exists():
        raise NotFoundError(f"path not found: {root}")
    skip = (Path(cache_dir).expanduser(),) if cache_dir is not None else ()
    files: list[Path] = []
    outside: list[str] = []
    for source in discover(root, skip=skip, allowed=allowed_roots):
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


def _read_source(source: RunSource, cache: Path | None,
                 allowed_roots: list[Path] | None = None) -> tuple[RunInfo, ReadResult] | None:  # fmt: skip
    """Read one discovered run; None for a text file that holds no metrics."""
    if source.kind == "text":
        result, kind = _read_text(source, cache)
        if kind is None:
            return None
    elif source.kind == TRAINER_STATE:
        result, kind = read_trainer_state(source.path, source.run), TRAINER_STATE
    else:
        result, kind = _cached(source, cache, allowed_roots), source.kind
    info = RunInfo(
        run=source.run,
        kind=kind,
        path=str(source.path),
        sources=sorted(
            set(result.scalars["source"]) | set(result.histograms["source"]) | set(result.texts["source"])
        ),
        hparams=result.extras.get("hparams", {}),
        config_text=result.extras.get("config_text", ""),
        network_text=result.extras.get("network_text", ""),
        checkpoints=result.extras.get("checkpoints", []),
        files=result.extras.get("files", []),
        problems=list(result.problems),
    )
    return info, result


def _read_folder(source: RunSource, allowed_roots: list[Path] | None = None) -> ReadResult:
    """A TensorBoard run, or a DI-engine experiment (text loggers plus its event files)."""
    events = read_event_files(list(source.files), source.run, allowed_roots=allowed_roots)
    if source.kind != "di-engine":
        return events
    texts = read_di_engine_texts(source.path, source.run, allowed_roots=allowed_roots)
    merged = merge_results([events, texts])
    merged.extras = {**texts.extras, "hparams": events.extras.get("hparams", {})}
    return merged


def _unit_files(source: RunSource, allowed_roots: list[Path] | None = None) -> tuple[list[Path], list[Path]]:
    """The files whose size/mtime decide whether a cached entry is still good, and those refused.

    A file that links outside ``allowed_roots`` is refused before it is stat-ed.
    """
    events = set(source.files)
    files = list(source.files)
    if source.kind == "di-engine":
        files = sorted(events | {p for p in source.path.rglob("*") if p.suffix in {".txt", ".py", ".tar"}})
    refused = [f for f in files if allowed_roots is not None and not inside(f, allowed_roots)]
    out = set(refused)
    return [f for f in files if f not in out and (f in events or f.is_file())], refused


def _cached(source: RunSource, cache: Path | None, allowed_roots: list[Path] | None = None) -> ReadResult:
    """Use the cache entry when its signature matches; otherwise build and store.

    The signature names the allowed roots and the refused files, so an entry
    read without confinement (the CLI) is never served as a confined one.
    """
    if cache is None:
        return _read_folder(source, allowed_roots)
    folder = entry_dir(cache, source.kind, source.path)
    kept, refused = _unit_files(source, allowed_roots)
    roots = None if allowed_roots is None else sorted(str(r) for r in allowed_roots)
    sig = [signature(kept), [str(f) for f in refused], roots]
    hit = load_entry(folder)
    if hit is not None and hit[1].get("signature") == sig:
        return hit[0]
    result = _read_folder(source, allowed_roots)
    save_entry(folder, result, {"signature": sig})
    return result


def _read_text(source: RunSource, cache: Path | None) -> tuple[ReadResult, str | None]:
    """A text log, appended to its cached entry when the file only grew."""
    path = source.path
    start, base = _text_resume_point(path, cache)
    read = read_text_metrics(path, source.run, start=start)
    committed = merge_results([base, read.committed]) if base is not None else read.committed
    formats = set(committed.extras.get("formats", [])) | read.formats
    committed.extras = {"formats": sorted(formats)}
    if cache is not None and not read.rollout_file and (base is None or read.progress.offset != start.offset):
        meta = {"offset": read.progress.offset, "lines": read.progress.lines,
                "digest": prefix_digest(path, read.progress.offset), "signature": signature([path])}  # fmt: skip
        save_entry(entry_dir(cache, "text", path), committed, meta)
    if read.rollout_file or not formats:
        return committed, None
    kind = "jsonl" if formats == {JSONL_SOURCE} else "stdout"
    return merge_results([committed, read.tail]), kind


def _text_resume_point(path: Path, cache: Path | None) -> tuple[TextProgress, ReadResult | None]:
    """Where to resume reading: the cached offset if the bytes before it are unchanged."""
    if cache is None:
        return TextProgress(), None
    hit = load_entry(entry_dir(cache, "text", path))
    if hit is None:
        return TextProgress(), None
    result, meta = hit
    offset = int(meta.get("offset", 0))
    try:
        unchanged = path.stat().st_size >= offset and prefix_digest(path, offset) == meta.get("digest")
    except OSError:
        return TextProgress(), None
    if not unchanged:
        return TextProgress(), None
    return TextProgress(offset=offset, lines=int(meta.get("lines", 0))), result
