"""Opening a rollout run and keeping it current: the cache of a local run, a bucket's copy, a dataset read
in place. What it gives the questions side (``store.py``) is one ``RunView`` and one ``LoadReport`` at a time.

A run is opened from a folder or file (through the columnar cache), from a URL
(``s3://bucket/run``, ``gs://...``: first brought into the local mirror, only new
bytes fetched, ``sources/remote.py``), or as an rl-board Parquet dataset
(``step=N/`` folders, from ``rl-board export``), read where it lies with no
cache (``lazy.py``). ``refresh`` picks up what was appended; ``stale`` is the
cheap check a page makes on every rerun.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_board import columns, formats
from rl_board.errors import NotFoundError, RLBoardError
from rl_board.formats import Format, fieldmap
from rl_board.formats import schema as S
from rl_board.formats.fieldmap import FieldMap
from rl_board.rollouts.cache import summary as kept
from rl_board.rollouts.cache import sync as cache
from rl_board.rollouts.report import FileReport, LoadReport, build_report
from rl_board.sources import members, remote, settings
from rl_board.sources.catalogue import catalogue
from rl_board.sources.remote import MirrorResult

# The view (numpy, pandas) and Parquet datasets (pyarrow.dataset) are imported by what builds or reads
# them: ``summary_kept`` answers for an unchanged run without either.
if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from rl_board.rollouts.runview import RunView
    from rl_board.sources import datasets

log = logging.getLogger(__name__)
REMOTE_EVERY = 10.0  # seconds between listings of a remote run while a page checks it for new data


class OpenedRun:
    """One run as it was last read: its view and report, and how to read it again."""

    def __init__(
        self,
        run_dir: Path,
        cache_root: Path,
        allowed: list[Path] | None = None,
        fields: FieldMap | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.fields_map: FieldMap = dict(fields or {})  # the caller's field map (rl-board.toml adds to it)
        self.cache_root = cache_root
        self.allowed = allowed
        self.report = LoadReport(run=str(run_dir))
        self.url: str | None = None  # the remote URL this run is a mirror of (s3://..., gs://...), if any
        self.remote: MirrorResult | None = None  # what the last look at the store fetched
        self._listed_at = 0.0
        self.signature = ""
        self._stat_signature = ""
        self._unread = False  # the last load could not read a file (an I/O error): try again at the next look
        self._directory: Path | None = None  # the run's folder in the cache, once loaded through it
        self._view: RunView | None = None  # none read yet: an empty view when asked (see ``view``)
        self.lock = threading.Lock()
        self._mapped: dict[str, pa.Table] = {}  # segment name -> its memory-mapped table
        self._dataset: datasets.Located | None = None  # a Parquet dataset read in place (no cache)

    @property
    def view(self) -> RunView:
        """The run's samples as last read; empty before the first read (made only if asked: its derived
        columns cost a pandas import, and an opened cached run replaces it unasked)."""
        if self._view is None:
            self._view = _runview().from_parts([], [])
        return self._view

    @view.setter
    def view(self, view: RunView) -> None:
        self._view = view

    @classmethod
    def open(
        cls,
        run_dir: str | Path,
        *,
        cache_dir: str | Path | None = None,
        progress: cache.Progress | None = None,
        allowed_roots: list[Path] | None = None,
        fields: FieldMap | None = None,
    ) -> OpenedRun:
        """Open a run folder, building or updating its cache as needed.

        With ``allowed_roots``, files that link outside those folders are
        reported and not read (the server passes its served roots). A URL
        (``s3://bucket/run``, ``gs://...``, ``hf://...``) is first brought into
        the local mirror (``sources/remote.py``): only new bytes are fetched.
        An rl-board Parquet dataset (``step=N/`` folders, from ``rl-board export``)
        is read where it lies, locally or in a bucket, with no cache (``lazy.py``).
        """
        root = _cache_root(cache_dir)
        url = str(run_dir).strip() if remote.is_url(str(run_dir)) else None
        for canonical in fields or {}:
            fieldmap.check(canonical)
        local = None if url else Path(run_dir).expanduser()
        in_bucket = remote.in_place_url(local, root) if local is not None else None
        copy_of = remote.url_of(local, root) if local is not None and not in_bucket else None
        if copy_of:  # this cache's copy of a bucket's run (a served remote root): completed from the bucket
            url, found, mirrored = copy_of, None, _completed(copy_of, root, progress)
        else:  # a URL, a local path, or the copy of a bucket's Parquet dataset (read in the bucket)
            url = url or in_bucket
            location = url or local
            if location is None:  # local is set whenever there is no URL
                raise AssertionError(f"{run_dir} is neither a URL nor a local path")
            found = _in_place(location, fields)
            mirrored = remote.mirror(url, root, progress=progress) if url and found is None else None
        path = (
            mirrored.local
            if mirrored
            else remote.local_path(url, root)
            if url
            else Path(run_dir).expanduser()
        )
        if found is None and not path.exists() and members.split(path) is None:
            raise NotFoundError(f"no run folder or file at {path}")
        run = cls(path, root, allowed_roots, fields)
        run.url, run.remote, run._listed_at, run._dataset = url, mirrored, time.monotonic(), found
        if url:
            run.report.run = url
        run._load(progress=progress, verify=True)
        return run

    @property
    def dataset(self) -> datasets.Located | None:
        """The Parquet dataset this run reads in place (no cache), if it is one."""
        return self._dataset

    @property
    def source(self) -> str:
        """The run as the user named it: its URL for a remote run, else its path."""
        return self.url or str(self.run_dir)

    def refresh(self, *, progress: cache.Progress | None = None) -> bool:
        """Pick up appended or changed files (for a remote run: fetch their new bytes first)."""
        before = self.signature
        with self.lock:
            self._mirror(progress)
            self._load(progress=progress, verify=False)
        return self.signature != before

    def stale(self) -> bool:
        """Cheap check (one stat per file) whether the files changed since the last load.

        A remote run is listed again at most every ``REMOTE_EVERY`` seconds (and new bytes fetched then).
        """
        if self._dataset is not None:
            if self.url and time.monotonic() - self._listed_at < REMOTE_EVERY:
                return False
            self._listed_at = time.monotonic()
            from rl_board.sources import datasets

            listed = datasets.listed_files(self._dataset.location)  # a listing only: this runs on every rerun
            return listed is None or datasets.signature_of(listed[1]) != self._stat_signature
        if self.url and time.monotonic() - self._listed_at >= REMOTE_EVERY:
            with self.lock:
                self._mirror(None)
        if self._unread:
            return True
        return cache.stat_signature(self.run_dir, self.fields_map, self.allowed) != self._stat_signature

    def _mirror(self, progress: cache.Progress | None) -> None:
        if self.url and self._dataset is None:
            self.remote = _completed(self.url, self.cache_root, progress) or self.remote
            self._listed_at = time.monotonic()

    # -- loading -----------------------------------------------------------

    def _load(self, *, progress: cache.Progress | None, verify: bool) -> None:
        if self._dataset is not None:
            self._load_in_place(self._dataset, verify)
            return
        t0 = time.perf_counter()
        try:
            result = cache.sync(
                self.run_dir,
                self.cache_root,
                progress=progress,
                verify=verify,
                allowed=self.allowed,
                opened=self._mapped,
                fields=self.fields_map,
            )
        except PermissionError as exc:
            raise NotFoundError(f"cannot read {exc.filename or self.run_dir}: {exc.strerror}") from None
        self._stat_signature = result.stat_signature
        self._unread = result.unread
        self._directory = result.directory
        signature = kept.state(result.files, self.fields_map)
        if signature != self.signature or verify:
            self._build(result, signature)
            self.signature = signature
        self.report.seconds = time.perf_counter() - t0
        self.report.parsed_bytes = result.parsed_bytes
        if result.parsed_bytes:
            log.info("parsed %d bytes of %s in %.2fs", result.parsed_bytes, self.run_dir, self.report.seconds)
        self.report.from_cache = result.parsed_bytes == 0
        self.report.notice = result.notice
        self.report.rebuilt_cache = result.rebuilt

    def _load_in_place(self, dataset: datasets.Located, verify: bool) -> None:
        """A Parquet dataset: list it again; on a change, read its footers and number columns anew."""

        from rl_board.rollouts import lazy  # pyarrow.dataset and the dataset reader: for datasets only
        from rl_board.sources import datasets

        t0 = time.perf_counter()
        found = datasets.locate(dataset.location) if not verify else dataset
        if found is None:
            raise NotFoundError(f"{self.source} is no longer a readable Parquet dataset")
        if found.signature != self.signature or verify:
            view, rows, errors = lazy.open_view(found)
            fmt = formats.by_name("rl-board-parquet")
            report = LoadReport(run=self.source)
            report.files = [
                FileReport(f.name, f.size, n, n, 0, 0, 0, why, fmt.name)
                for f, n, why in zip(found.files, rows, errors, strict=True)
            ]
            report.formats[fmt.name] = f"{fmt.label}, read in place: text and tokens per step on demand"
            report.samples, report.steps = view.table.num_rows, len(view.steps)
            report.length_mismatches = columns.true_count(view.table.column(S.LENGTH_MISMATCH))
            self.view, self.report, self._dataset = view, report, found
            self.signature = self._stat_signature = found.signature
        self.report.seconds = time.perf_counter() - t0

    def _build(self, result: cache.SyncResult, signature: str) -> None:
        view = _runview().from_parts([e.name for e in result.files], result.parts)
        report = _report(self.source, self.run_dir, result.files, self.fields_map)
        report.steps = len(view.steps)
        report.length_mismatches = columns.true_count(view.table.column(S.LENGTH_MISMATCH))
        self.view, self.report = view, report  # one swap: readers never see a half-built run
        kept.write_counts(result.directory, signature, samples=report.samples, steps=report.steps)

    def keep_summary(self, summary: dict[str, Any], signature: str) -> None:
        """Keep the run's whole summary, worked out at ``signature``, in its cache (``summary_kept`` reads
        it); nothing for a dataset read in place, which has no cache."""
        if self._directory is not None and self._dataset is None:
            kept.keep(self._directory, signature, summary)


@dataclass
class KeptSummary:
    """A run's summary answered from its cache: the load report made from the manifest, and the summary
    ``RolloutStore.run_summary`` kept for the files as they are."""

    run_dir: Path
    cache_root: Path
    report: LoadReport
    summary: dict[str, Any]

    @property
    def source(self) -> str:
        return str(self.run_dir)


def summary_kept(
    run_dir: str | Path, *, cache_dir: str | Path | None = None, fields: FieldMap | None = None
) -> KeptSummary | None:
    """The summary of a local run whose cache holds every file as it is now, kept by an earlier
    ``run_summary``: no segment mapped, no view built. None for anything ``OpenedRun.open`` has more to do
    for (a file to parse, a URL, a bucket's copy, a Parquet dataset, no summary kept for this state)."""
    t0 = time.perf_counter()
    root = _cache_root(cache_dir)
    if remote.is_url(str(run_dir)):
        return None
    for canonical in fields or {}:
        fieldmap.check(canonical)
    path = Path(run_dir).expanduser()
    if not path.exists() or remote.in_place_url(path, root) or remote.url_of(path, root):
        return None
    if _in_place(path, fields) is not None:
        return None
    found = cache.current(path, root, fields=fields)
    if found is None:
        return None
    directory, entries = found
    summary = kept.kept(directory, kept.state(entries, dict(fields or {})))
    if summary is None:
        return None
    report = _report(str(path), path, entries, dict(fields or {}))
    report.steps, report.length_mismatches = len(summary["steps"]), summary["length_mismatches"]
    report.seconds, report.from_cache = time.perf_counter() - t0, True
    return KeptSummary(path, root, report, summary)


def _report(source: str, run_dir: Path, entries: list[cache.FileEntry], fields: FieldMap) -> LoadReport:
    """The load report of the cache's entries: each file's format as the load classified and read it, and
    the field map in force (the caller's, completed by rl-board.toml)."""
    found: dict[str, Format] = {e.name: formats.by_name(e.format) for e in entries if e.format}
    base = run_dir if run_dir.is_dir() else run_dir.parent
    return build_report(source, entries, found, settings.for_file(base, fields))


def _cache_root(cache_dir: str | Path | None) -> Path:
    return Path(cache_dir).expanduser() if cache_dir else cache.default_cache_dir()


def _runview() -> type[RunView]:
    from rl_board.rollouts.runview import RunView

    return RunView


def list_runs(
    root: str | Path,
    *,
    cache_dir: str | Path | None = None,
    fields: FieldMap | None = None,
    allowed: list[Path] | None = None,
) -> pd.DataFrame:
    """Rollout runs under ``root``: ``run`` (relative path), ``path``, ``format``, ``files``, ``bytes``,
    ``modified``, and ``samples`` / ``steps`` once the run has been cached. With ``allowed``, files linked
    from outside those folders are not opened (the server passes its served roots)."""
    root_path = Path(root).expanduser()
    if not root_path.is_dir():
        raise NotFoundError(f"no folder at {root_path}")
    import pandas as pd

    cache_root = _cache_root(cache_dir)
    rows = []
    found = catalogue(
        root_path, skip=(cache_root,), fields=fields, allowed=allowed, metric_kinds=members.keepers()
    )
    for run in found.rollout_folders():
        known = kept.read(cache.run_cache_dir(cache_root, run.path))
        rows.append(
            {
                "run": run.relative,
                "path": str(run.path),
                "format": run.format,
                "files": run.files,
                "bytes": run.bytes,
                "modified": run.modified,
                "samples": known.get("samples"),
                "steps": known.get("steps"),
            }
        )
    columns = ["run", "path", "format", "files", "bytes", "modified", "samples", "steps"]
    return pd.DataFrame(rows, columns=columns)


def _completed(url: str, cache_root: Path, progress: cache.Progress | None) -> MirrorResult | None:
    """The copy of a bucket's run brought up to date; when the bucket cannot be reached, the copy as it is."""
    try:
        return remote.mirror(url, cache_root, progress=progress)
    except (RLBoardError, OSError) as exc:
        log.warning("could not reach %s (%s); showing the copy in the cache", url, exc)
        return None


def _in_place(location: str | Path, fields: FieldMap | None) -> datasets.Located | None:
    """The Parquet dataset at ``location`` when it can be read in place (no field map asked for)."""
    if fields:
        return None
    if isinstance(location, Path) and not (
        location.is_dir() and any(e.name.startswith("step=") and e.is_dir() for e in os.scandir(location))
    ):
        return None
    from rl_board.sources import datasets  # pyarrow.dataset: for a folder of step=N/ folders, or a URL

    return datasets.locate(location)
