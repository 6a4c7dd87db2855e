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
import fcntl
import hashlib
import json
import os
import re
import shutil
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa

from rl_board.data import derive, jsonl

CACHE_VERSION = 3
BLOCK_BYTES = 32 * 1024 * 1024
TAIL_BYTES = 4096
MAX_REPORTED_PER_FILE = 10_000

Progress = Callable[[int, int], None]


def default_cache_dir() -> Path:
    """$RL_BOARD_CACHE_DIR, else $XDG_CACHE_HOME/rl-board, else ~/.cache/rl-board."""
    explicit = os.environ.get("RL_BOARD_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "rl-board"


@dataclass
class Segment:
    name: str
    rows: int
    bytes: int
    crc: int


@dataclass
class FileEntry:
    """What we know about one rollout file as of the last read."""

    name: str
    size: int = 0
    mtime_ns: int = 0
    consumed: int = 0
    lines: int = 0
    tail_crc: int = 0
    samples: int = 0
    blank: int = 0
    bad_count: int = 0
    bad: list[list] = field(default_factory=list)
    warnings: list[list] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    error: str = ""

    @classmethod
    def from_json(cls, data: dict) -> FileEntry:
        segs = [Segment(**s) for s in data.pop("segments")]
        return cls(**data, segments=segs)


@dataclass
class SyncResult:
    """The manifest after a sync, and how much had to be read from the logs."""

    directory: Path
    files: list[FileEntry]
    parsed_bytes: int
    rebuilt: bool


def run_cache_dir(cache_root: Path, run_dir: Path) -> Path:
    """One directory per run, named by a hash of its resolved path."""
    key = hashlib.sha1(str(run_dir.resolve()).encode()).hexdigest()[:20]
    return cache_root / "runs" / key


def list_rollout_files(run_dir: Path) -> list[Path]:
    """The run's ``*.jsonl`` files that are readable regular files, in natural order."""
    files = [p for p in run_dir.iterdir() if p.suffix == ".jsonl" and p.is_file()]
    return sorted(files, key=_natural_key)


def _natural_key(path: Path) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def sync(
    run_dir: Path, cache_root: Path, *, progress: Progress | None = None, verify: bool = True
) -> SyncResult:
    """Bring the run's cache up to date with its files and return the manifest.

    ``verify`` checks every segment's CRC (on first open); a refresh of a run
    already open only checks sizes, so following a run costs what it appends.
    """
    directory = run_cache_dir(cache_root, run_dir)
    with _locked(directory):
        old, rebuilt = _read_manifest(directory, run_dir, verify=verify)
        plans: list[_Plan | FileEntry] = []
        for path in list_rollout_files(run_dir):
            try:
                plans.append(_plan(path, old.get(path.name)))
            except OSError as exc:
                plans.append(FileEntry(name=path.name, error=f"cannot read: {exc.strerror or exc}"))
        total = sum(p.todo for p in plans if isinstance(p, _Plan))
        done = 0
        entries = []
        for plan in plans:
            if isinstance(plan, FileEntry):
                entries.append(plan)
                continue
            try:
                entry, read = _apply(plan, directory, lambda n, base=done: _tick(progress, base + n, total))
            except OSError as exc:
                entry, read = FileEntry(name=plan.path.name, error=f"cannot read: {exc.strerror or exc}"), 0
            done += read
            entries.append(entry)
        _write_manifest(directory, run_dir, entries)
        _collect_garbage(directory, entries)
    return SyncResult(directory, entries, done, rebuilt)


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

    @property
    def todo(self) -> int:
        return max(0, self.size - self.start)


def _plan(path: Path, old: FileEntry | None) -> _Plan:
    """Decide whether a file is unchanged, grown, or must be read again."""
    st = path.stat()
    if old is not None and old.size == st.st_size and old.mtime_ns == st.st_mtime_ns:
        return _Plan(path, old, st.st_size, st.st_size, st.st_mtime_ns)
    if old is not None and st.st_size >= old.consumed and _tail_matches(path, old):
        return _Plan(path, old, old.consumed, st.st_size, st.st_mtime_ns)
    return _Plan(path, FileEntry(name=path.name), 0, st.st_size, st.st_mtime_ns)


def _tail_crc(path: Path, end: int) -> int:
    start = max(0, end - TAIL_BYTES)
    with open(path, "rb") as f:
        f.seek(start)
        return zlib.crc32(f.read(end - start))


def _tail_matches(path: Path, old: FileEntry) -> bool:
    try:
        return _tail_crc(path, old.consumed) == old.tail_crc
    except OSError:
        return False


def _apply(plan: _Plan, directory: Path, progress: Progress) -> tuple[FileEntry, int]:
    entry = plan.entry
    if plan.start == plan.size and entry.size == plan.size:
        entry.mtime_ns = plan.mtime_ns
        return entry, 0
    read = 0
    with open(plan.path, "rb") as stream:
        for block, end in jsonl.iter_blocks(stream, start=plan.start, block_bytes=BLOCK_BYTES):
            parsed = jsonl.parse_block(block, first_line=entry.lines + 1)
            _record(entry, parsed, block.count(b"\n"))
            if parsed.table.num_rows:
                entry.segments.append(_write_segment(directory, derive.with_sample_metrics(parsed.table)))
            entry.consumed = end
            read = end - plan.start
            progress(read)
    entry.size, entry.mtime_ns = plan.size, plan.mtime_ns
    entry.tail_crc = _tail_crc(plan.path, entry.consumed) if entry.consumed else 0
    progress(plan.size - plan.start)
    return entry, plan.size - plan.start


def _record(entry: FileEntry, parsed: jsonl.ParsedBlock, n_lines: int) -> None:
    entry.lines += n_lines
    entry.samples += parsed.table.num_rows
    entry.blank += parsed.blank
    entry.bad_count += len(parsed.bad)
    room = MAX_REPORTED_PER_FILE - len(entry.bad)
    entry.bad.extend([list(b) for b in parsed.bad[: max(room, 0)]])
    room = MAX_REPORTED_PER_FILE - len(entry.warnings)
    entry.warnings.extend([list(w) for w in parsed.warnings[: max(room, 0)]])


def _write_segment(directory: Path, table: pa.Table) -> Segment:
    name = f"seg-{uuid.uuid4().hex}.arrow"
    tmp = directory / (name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max(table.num_rows, 1))
    crc = file_crc(tmp)
    os.replace(tmp, directory / name)
    return Segment(name=name, rows=table.num_rows, bytes=(directory / name).stat().st_size, crc=crc)


def file_crc(path: Path) -> int:
    """CRC32 of a whole file, read in blocks so it does not count as resident memory."""
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(4 * 1024 * 1024):
            crc = zlib.crc32(chunk, crc)
    return crc


def _read_manifest(directory: Path, run_dir: Path, *, verify: bool) -> tuple[dict[str, FileEntry], bool]:
    """Entries by file name; an unusable manifest empties the directory (rebuild)."""
    path = directory / "manifest.json"
    if not path.exists():
        return {}, False
    try:
        data = json.loads(path.read_text())
        if data.get("version") != CACHE_VERSION or data.get("run") != str(run_dir.resolve()):
            raise ValueError("foreign cache")
        entries = [FileEntry.from_json(e) for e in data["files"]]
        if not all(_segments_intact(directory, e, verify=verify) for e in entries):
            raise ValueError("damaged segment")
    except (OSError, ValueError, KeyError, TypeError):
        _clear(directory)
        return {}, True
    return {e.name: e for e in entries}, False


def _segments_intact(directory: Path, entry: FileEntry, *, verify: bool) -> bool:
    for seg in entry.segments:
        path = directory / seg.name
        if not path.is_file() or path.stat().st_size != seg.bytes:
            return False
        if verify and file_crc(path) != seg.crc:
            return False
    return True


def _clear(directory: Path) -> None:
    for child in directory.iterdir():
        if child.name == ".lock":
            continue
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _write_manifest(directory: Path, run_dir: Path, entries: list[FileEntry]) -> None:
    data = {"version": CACHE_VERSION, "run": str(run_dir.resolve()), "files": [asdict(e) for e in entries]}
    tmp = directory / f"manifest.{uuid.uuid4().hex}.tmp"
    tmp.write_text(json.dumps(data))
    os.replace(tmp, directory / "manifest.json")


def _collect_garbage(directory: Path, entries: list[FileEntry]) -> None:
    """Delete segments no entry refers to (open memory maps stay valid on POSIX)."""
    keep = {s.name for e in entries for s in e.segments}
    for child in directory.glob("seg-*"):
        if child.name not in keep:
            child.unlink(missing_ok=True)


def open_segments(directory: Path, entries: list[FileEntry]) -> list[tuple[int, pa.Table]]:
    """Memory-map every segment: (file index, table) in file then append order."""
    out = []
    for index, entry in enumerate(entries):
        for seg in entry.segments:
            source = pa.memory_map(str(directory / seg.name), "r")
            out.append((index, pa.ipc.open_file(source).read_all()))
    return out


def stat_signature(run_dir: Path) -> str:
    """Names, sizes and mtimes of the run's files: cheap change detection."""
    parts = []
    try:
        for path in list_rollout_files(run_dir):
            try:
                st = path.stat()
            except OSError:
                continue
            parts.append(f"{path.name}:{st.st_size}:{st.st_mtime_ns}")
    except OSError:
        return ""
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]
