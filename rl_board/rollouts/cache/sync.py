"""The on-disk columnar cache of a run: the product's database.

Layout: ``<cache root>/runs/<hash of the run's real path>/`` holds
``manifest.json`` and Arrow IPC segment files (uncompressed, so they can be
memory-mapped). Every rollout file of the run has an entry in the manifest with
the size and mtime it had when read, the byte offset after its last complete
line (``consumed``), a CRC of the block just before that offset, and the list of
segments holding its samples. A file that grew is parsed from ``consumed`` on
(once the CRC proves the old part unchanged) into a new segment; a file that
shrank or changed otherwise is parsed again from the start. Anything about the
cache that does not check out (bad JSON, another version, a missing or damaged
segment) makes us throw that run's cache away and rebuild it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_board import config, private
from rl_board.config import default_cache_dir
from rl_board.errors import RLBoardError
from rl_board.formats import NATIVE, Reading, fieldmap
from rl_board.formats.fieldmap import FieldMap
from rl_board.rollouts.cache.compact import compact
from rl_board.rollouts.cache.manifest import (
    MAX_REPORTED_PER_FILE,
    FileEntry,
    Part,
    Segment,
    collect_garbage,
    open_segments,
    read_manifest,
    write_manifest,
)
from rl_board.rollouts.cache.segments import checksum
from rl_board.rollouts.read import stored
from rl_board.rollouts.read.runfiles import (
    RunFile,
    file_state,
    files_signature,
    list_rollout_files,
    scan_run,
    stat_signature,
)
from rl_board.sources import settings, sniff

# The parsers are imported when there is something to parse: a look at a run whose cache is current loads
# none of them.
if TYPE_CHECKING:
    import pyarrow as pa

    from rl_board.rollouts.read import ingest

__all__ = [
    "FileEntry",
    "Segment",
    "SyncResult",
    "current",
    "sync",
    "list_rollout_files",
    "stat_signature",
    "default_cache_dir",
    "run_cache_dir",
]

PROBES = 30

Progress = Callable[[int, int], None]


@dataclass
class SyncResult:
    """The manifest after a sync, and how much had to be read from the logs."""

    directory: Path
    files: list[FileEntry]
    parsed_bytes: int
    rebuilt: bool
    parts: list[Part]  # the memory-mapped segments, in order (their line numbers as stored)
    notice: str = ""  # the cache folder could not be written: what was done instead
    stat_signature: str = ""  # of the files as this sync found them (``runfiles.stat_signature``)
    unread: bool = False  # a file could not be read this time (an I/O error): the next look tries again


def run_cache_dir(cache_root: Path, run_dir: Path, fields: FieldMap | None = None) -> Path:
    """One directory per run and field map, named by a hash of its resolved path (and the map)."""
    fmap = fieldmap.digest(settings.for_file(run_dir if run_dir.is_dir() else run_dir.parent, fields))
    key = hashlib.sha1((str(run_dir.resolve()) + (f"#{fmap}" if fmap else "")).encode()).hexdigest()[:20]
    return cache_root / "runs" / key


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    private.make_dir(directory)
    with private.open_file(directory / ".lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def sync(
    run_dir: Path,
    cache_root: Path,
    *,
    progress: Progress | None = None,
    verify: bool = True,
    allowed: list[Path] | None = None,
    opened: dict[str, pa.Table] | None = None,
    fields: FieldMap | None = None,
) -> SyncResult:
    """Bring the run's cache up to date with its files and return the manifest.

    ``verify`` checks every segment's CRC (on first open); a refresh of a run
    already open only checks sizes, so following a run costs what it appends.
    A cache folder that cannot be written (read-only, full, not ours) is used
    read-only when it already holds the run as it is; otherwise the run is read
    into a cache in memory. Either way ``SyncResult.notice`` says so, naming
    the folder.
    """
    directory = run_cache_dir(cache_root, run_dir, fields)
    try:
        with _locked(directory):
            return _sync_here(
                directory,
                run_dir,
                progress=progress,
                verify=verify,
                allowed=allowed,
                opened=opened,
                fields=fields,
            )
    except OSError as exc:
        if not _cache_fault(exc, run_dir):
            raise
        problem = f"the cache folder {cache_root} cannot be written ({exc.strerror or exc})"
    as_is = _read_only(directory, run_dir, allowed, fields, opened)
    if as_is is not None:
        as_is.notice = f"{problem}; the run is shown from it as it is (read-only)"
        return as_is
    fallback = memory_cache_root()
    if fallback is None or fallback == cache_root:
        raise CacheError(f"{problem}, and no folder in memory could take its place")
    result = sync(
        run_dir, fallback, progress=progress, verify=verify, allowed=allowed, opened=opened, fields=fields
    )
    result.notice = f"{problem}; this run was read into memory ({fallback}) and is read again after a restart"
    return result


class CacheError(RLBoardError):
    """The cache folder cannot be used and nothing could stand in for it."""


FAULTS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})


def _cache_fault(exc: OSError, run_dir: Path) -> bool:
    """An error writing the cache (not reading the logs): read-only, not permitted, or full."""
    if exc.filename and str(exc.filename).startswith(str(run_dir)):
        return False
    return exc.errno in FAULTS or "No space left" in str(exc)


def memory_cache_root() -> Path | None:
    """A cache folder in memory (/dev/shm on Linux), else in the temporary folder; None if neither works."""
    for base in (Path("/dev/shm"), Path(tempfile.gettempdir())):
        root = base / f"rl-board-{os.getuid()}"
        try:
            private.make_dir(root)
            if root.is_symlink() or root.stat().st_uid != os.getuid():  # a shared folder: not another's
                continue
            private.tighten(root)
            probe = root / f".probe-{os.getpid()}"
            private.touch(probe)
            probe.unlink()
            return root
        except OSError:
            continue
    return None


def current(
    run_dir: Path, cache_root: Path, *, allowed: list[Path] | None = None, fields: FieldMap | None = None
) -> tuple[Path, list[FileEntry]] | None:
    """The run's cache folder and entries when the cache holds every file as it is now: what ``sync`` would
    return without parsing a byte, checked the same way with the folder locked, and no segment mapped. None
    when ``sync`` has work to do (or the folder cannot be locked: ``sync`` then says why)."""
    directory = run_cache_dir(cache_root, run_dir, fields)
    try:
        with _locked(directory):
            found = _as_it_is(directory, run_dir, allowed, fields)
    except OSError:
        return None
    return None if found is None else (directory, found[0])


def _as_it_is(
    directory: Path, run_dir: Path, allowed: list[Path] | None, fields: FieldMap | None
) -> tuple[list[FileEntry], list[RunFile]] | None:
    """The manifest's entries (in the files' order) and the files, when every file is as it was read."""
    try:
        old, rebuilt = read_manifest(directory, run_dir, verify=True, clear=False)
        if rebuilt or not old:
            return None
        entries = []
        files = scan_run(run_dir, allowed, fields)
        for file in files:
            entry = old.get(file.name)
            if file.problem or entry is None or _plan(file, entry).todo:
                return None
            entries.append(entry)
    except OSError:
        return None
    return (entries, files) if len(entries) == len(old) else None


def _read_only(
    directory: Path,
    run_dir: Path,
    allowed: list[Path] | None,
    fields: FieldMap | None,
    opened: dict[str, pa.Table] | None,
) -> SyncResult | None:
    """The run from a cache that cannot be written, when the cache already holds every file as it is."""
    found = _as_it_is(directory, run_dir, allowed, fields)
    if found is None:
        return None
    entries, files = found
    try:
        parts = open_segments(directory, entries, opened)
    except OSError:
        return None
    return SyncResult(directory, entries, 0, False, parts, stat_signature=files_signature(files))


def _sync_here(
    directory: Path,
    run_dir: Path,
    *,
    progress: Progress | None,
    verify: bool,
    allowed: list[Path] | None,
    opened: dict[str, pa.Table] | None,
    fields: FieldMap | None,
) -> SyncResult:
    """The sync itself, with the cache folder locked."""
    old, rebuilt = read_manifest(directory, run_dir, verify=verify)
    before = _stamps(old.values())  # taken now: the sync changes these entries in place
    slots: list[FileEntry | _Plan] = []  # a plan per file to read, an entry saying why for any other
    files = scan_run(run_dir, allowed, fields)
    for file in files:
        if file.problem or file.reading is None:
            slots.append(FileEntry(name=file.name, error=file.problem or "not a rollout file"))
            continue
        try:
            slots.append(_plan(file, old.get(file.name)))
        except OSError as exc:
            slots.append(_unreadable(file.name, exc))
    todo = sum(slot.todo for slot in slots if isinstance(slot, _Plan) and _cut(slot))
    job = _ingest_module().job_bytes(todo) if todo else 0
    entries: list[FileEntry] = []
    work: list[tuple[_Plan, list[tuple[int, int]]]] = []
    for slot in slots:
        if isinstance(slot, FileEntry):
            entries.append(slot)
            continue
        try:
            blocks = _blocks(slot, job)
        except OSError as exc:
            entries.append(_unreadable(slot.entry.name, exc))
            continue
        entries.append(slot.entry)
        work.append((slot, blocks))
    work = _ending_in_blocks(work)
    parsed, unread = _ingest(work, directory, progress)
    for entry in entries:
        compact(directory, entry)
    if _stamps(entries) != before:  # an unchanged run's open writes nothing
        write_manifest(directory, run_dir, entries)
    # Mapped while we hold the lock: another process may compact and delete
    # segments once we let go (our maps stay valid; opening them would not).
    parts = open_segments(directory, entries, opened)
    collect_garbage(directory, entries)
    return SyncResult(
        directory, entries, parsed, rebuilt, parts, stat_signature=files_signature(files), unread=unread
    )


def _ending_in_blocks(
    work: list[tuple[_Plan, list[tuple[int, int]]]],
) -> list[tuple[_Plan, list[tuple[int, int]]]]:
    """The jobs with the load's last few cut back into blocks (``ingest.ending_in_blocks``); a file read
    whole (a stored run, a Parquet table) stays one job. Nothing to read: the parsers are not imported."""
    cut = [k for k, (plan, jobs) in enumerate(work) if jobs and _cut(plan)]
    if not cut:
        return work
    shared = _ingest_module().ending_in_blocks([(work[k][0].path, work[k][1]) for k in cut])
    out = list(work)
    for k, jobs in zip(cut, shared, strict=True):
        out[k] = (work[k][0], jobs)
    return out


def _blocks(plan: _Plan, job: int) -> list[tuple[int, int]]:
    """The (start, end) jobs of what a file gained: none, the whole of a run kept in a store, or cuts at
    newlines of ``job`` bytes (``ingest.job_bytes``)."""
    if not plan.todo:
        return []
    if not _cut(plan):
        return [(0, plan.size)]
    return _ingest_module().plan_blocks(plan.path, plan.start, plan.size, block_bytes=job)


def _cut(plan: _Plan) -> bool:
    """Whether a file is read in jobs cut at newlines (not a run kept in a store, a Parquet table or a
    tracker's table document: each one job, which the jobs' size leaves out)."""
    return not (stored.is_stored(plan.reading) or sniff.is_whole_file(plan.path))


def _unreadable(name: str, exc: OSError) -> FileEntry:
    return FileEntry(name=name, error=f"cannot read: {exc.strerror or exc}")


def _stamps(entries: Iterable[FileEntry]) -> list[tuple]:
    """What tells the manifest's entries apart from a sync's: the files, in order, with their size and
    mtime (a touched file), error and reading, and what was read into which segments (parsing,
    compaction). Everything else in an entry changes only with what was read."""
    return [
        (
            e.name,
            e.size,
            e.mtime_ns,
            e.error,
            e.format,
            e.reading,
            e.consumed,
            e.probe_crc,
            [s.name for s in e.segments],
        )
        for e in entries
    ]


def _ingest(
    work: list[tuple[_Plan, list[tuple[int, int]]]], directory: Path, progress: Progress | None
) -> tuple[int, bool]:
    """Parse every planned block of every file (in one worker pool) into its entry; (bytes, whether a block
    could not be read).

    A block that cannot be read leaves its file's entry as it was before this sync (size, mtime and what
    was consumed), with the error: the next look reads the file again instead of taking it as done.
    """
    jobs = [(plan.path, s, e) for plan, blocks in work for s, e in blocks]
    owners = [plan for plan, blocks in work for _ in blocks]
    readings = {str(plan.path): plan.reading for plan, _ in work}
    total = sum(plan.todo for plan, _ in work)
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        _tick(progress, done, total)

    failed: set[str] = set()
    if jobs:
        results = _ingest_module().run_blocks(jobs, directory, tick, readings)
        # closed however this loop ends: the load's span (its kept heap, its rare collections) and its
        # helpers end now, not when a traceback holding this frame is let go (a notebook keeps the last one)
        with contextlib.closing(results):
            for plan, (_, _, end), result in zip(owners, jobs, results, strict=True):
                if result.error or plan.entry.name in failed:
                    plan.entry.error = plan.entry.error or result.error
                    failed.add(plan.entry.name)  # what follows a failed block waits for the next look too
                    continue
                _record(plan.entry, result)
                plan.entry.consumed = end
    for plan, _ in work:
        entry = plan.entry
        if entry.name in failed:  # not marked as read: the next look plans it again from ``consumed``
            continue
        entry.error = ""
        entry.size, entry.mtime_ns = plan.size, plan.mtime_ns
        entry.format, entry.reading = plan.reading.format, plan.reading.digest()
        if plan.todo:
            entry.probe_crc = probe_crc(plan.path, entry.consumed) if entry.consumed else 0
    _tick(progress, total, total)
    return total, bool(failed)


def _ingest_module() -> Any:
    """The parsers (``read/ingest.py``), imported when a block is to be parsed."""
    from rl_board.rollouts.read import ingest

    return ingest


def _tick(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


@dataclass
class _Plan:
    path: Path
    entry: FileEntry
    start: int  # offset to parse from; == entry.size when nothing to do
    size: int
    mtime_ns: int
    reading: Reading

    @property
    def todo(self) -> int:
        """Bytes to parse (0 for a file unchanged since the last read)."""
        if self.start == self.size and self.entry.size == self.size:
            return 0
        return max(0, self.size - self.start)


def _plan(file: RunFile, old: FileEntry | None) -> _Plan:
    """Decide whether a file is unchanged, grown, or must be read again (also when it is read otherwise
    now)."""
    path, reading = file.path, file.reading or Reading(NATIVE)
    size, mtime_ns = file_state(file)
    if old is not None and (old.reading != reading.digest() or old.format != reading.format):
        old = None
    if old is not None and old.size == size and old.mtime_ns == mtime_ns and not old.error:
        return _Plan(path, old, size, size, mtime_ns, reading)
    # a Parquet table, a tracker's table and a run inside a store are rewritten whole
    grows = not (sniff.is_whole_file(path) or stored.is_stored(reading))
    if old is not None and grows and size >= old.consumed and _tail_matches(path, old):
        return _Plan(path, old, old.consumed, size, mtime_ns, reading)
    return _Plan(path, FileEntry(name=file.name), 0, size, mtime_ns, reading)


def probe_crc(path: Path, end: int) -> int:
    """``checksum`` of sampled windows of ``[0, end)``: the start, the end and ``PROBES`` windows between.

    Checked before reading only what a file gained: an edit that changes any
    byte of a window (a rewrite of the first lines at the same length, a
    truncation and rewrite) makes the file be read again; an edit that keeps
    every window the same is not seen (docs/architecture.md, "The cache").
    """
    crc = 0
    with open(path, "rb") as f:
        for start, length in _windows(end):
            f.seek(start)
            crc = checksum(f.read(length), crc)
    return crc


def _windows(end: int) -> list[tuple[int, int]]:
    sizes = config.sizes()
    tail = sizes.probe_tail_bytes
    head = min(sizes.probe_head_bytes, end)
    out = [(0, head), (max(0, end - tail), min(tail, end))]
    span = end - head - tail
    if span > tail:
        out += [(head + span * k // (PROBES + 1), tail) for k in range(1, PROBES + 1)]
    return out


def _tail_matches(path: Path, old: FileEntry) -> bool:
    try:
        return probe_crc(path, old.consumed) == old.probe_crc
    except OSError:
        return False


def _record(entry: FileEntry, result: ingest.BlockResult) -> None:
    """Add a block's counts; its block-relative line numbers shift by the lines before it."""
    offset = entry.lines
    if result.segment is not None:
        entry.segments.append(Segment(**result.segment, line_offset=offset))
    entry.lines += result.lines
    entry.samples += result.samples
    entry.blank += result.blank
    entry.bad_count += len(result.bad) + result.unlisted
    room = max(MAX_REPORTED_PER_FILE - len(entry.bad), 0)
    entry.bad.extend([[offset + n, reason] for n, reason in result.bad[:room]])
    room = max(MAX_REPORTED_PER_FILE - len(entry.warnings), 0)
    entry.warnings.extend([[offset + n, note] for n, note in result.warnings[:room]])
    _ingest_module().add_turns(entry.turns, result.turns.get("how", {}), result.turns.get("kept whole", {}))
