"""The manifest of a run's cache: what was read of each file, and where it went.

``manifest.json`` lists, per rollout file, the size and mtime it had when
read, the offset after its last complete line, a CRC of sampled windows of
the part read (``probe_crc``: the first 64 KB, the 4 KB before the offset and
30 windows spread between), its counts and bad lines, and its segments (Arrow
IPC files, each with a CRC and the line offset its block-relative line numbers
start from). The manifest carries a CRC of its own content: a manifest that
parses but was altered is thrown away like one that does not parse.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa

from rl_board import private
from rl_board.rollouts.cache.segments import file_crc, map_segment

# 8: KL k3 right, k2, token_log_ratio; 9: trajectories; 10: repetition, scripts; 11: agentic readers (kept,
# dropped_reason, tool_call_log); 12: CRC-32C of segments and probes (``segments.checksum``)
CACHE_VERSION = 12
MAX_REPORTED_PER_FILE = 10_000  # bad lines (and notes) a file's entry lists; the rest are counted


@dataclass
class Segment:
    """One Arrow file; its ``_line`` values count from ``line_offset`` + 1."""

    name: str
    rows: int
    bytes: int
    crc: int
    mtime_ns: int = 0
    line_offset: int = 0


@dataclass
class FileEntry:
    """What we know about one rollout file as of the last read."""

    name: str
    size: int = 0
    mtime_ns: int = 0
    consumed: int = 0
    lines: int = 0
    probe_crc: int = 0
    samples: int = 0
    blank: int = 0
    bad_count: int = 0
    bad: list[list] = field(default_factory=list)
    warnings: list[list] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    error: str = ""
    format: str = ""  # the format the file was read as
    reading: str = (
        ""  # digest of how it was read (field map, options found beside it): another one reads it again
    )
    turns: dict = field(
        default_factory=dict
    )  # how its turns were found: {"how": {..: n}, "kept whole": {..: n}}

    @classmethod
    def from_json(cls, data: dict) -> FileEntry:
        segs = [Segment(**s) for s in data.pop("segments")]
        return cls(**data, segments=segs)


def read_manifest(
    directory: Path, run_dir: Path, *, verify: bool, clear: bool = True
) -> tuple[dict[str, FileEntry], bool]:
    """Entries by file name; an unusable manifest empties the directory (rebuild) unless ``clear`` is
    False."""
    path = directory / "manifest.json"
    if not path.exists():
        return {}, False
    try:
        data = json.loads(path.read_text())
        if data.pop("crc", None) != _content_crc(data):
            raise ValueError("manifest checksum")
        if data.get("version") != CACHE_VERSION or data.get("run") != str(run_dir.resolve()):
            raise ValueError("foreign cache")
        entries = [FileEntry.from_json(e) for e in data["files"]]
        if not all(_segments_intact(directory, e, verify=verify) for e in entries):
            raise ValueError("damaged segment")
    except (OSError, ValueError, KeyError, TypeError):
        if clear:
            _clear(directory)
        return {}, True
    return {e.name: e for e in entries}, False


def _segments_intact(directory: Path, entry: FileEntry, *, verify: bool) -> bool:
    """Sizes always; with ``verify``, the CRC of every segment written to since we wrote it.

    A segment whose size and mtime are the ones we recorded has not been
    written since; checksumming it on every open would make a warm open of a
    10 GB run read its whole cache.
    """
    for seg in entry.segments:
        path = directory / seg.name
        try:
            st = path.stat()
        except OSError:
            return False
        if st.st_size != seg.bytes:
            return False
        if verify and st.st_mtime_ns != seg.mtime_ns and file_crc(path) != seg.crc:
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


def write_manifest(directory: Path, run_dir: Path, entries: list[FileEntry]) -> None:
    data = {"version": CACHE_VERSION, "run": str(run_dir.resolve()), "files": [asdict(e) for e in entries]}
    data["crc"] = _content_crc(data)
    tmp = directory / f"manifest.{uuid.uuid4().hex}.tmp"
    private.write_text(tmp, json.dumps(data))
    os.replace(tmp, directory / "manifest.json")


def _content_crc(data: dict) -> int:
    """The manifest's own guard against a torn or edited file: zlib's CRC-32 of a few KB, so that opening
    a cached run imports nothing for it (``segments.checksum`` sums the cached data)."""
    return zlib.crc32(json.dumps(data, sort_keys=True).encode())


def collect_garbage(directory: Path, entries: list[FileEntry]) -> None:
    """Delete segments no entry refers to (open memory maps stay valid on POSIX)."""
    keep = {s.name for e in entries for s in e.segments}
    for child in [*directory.glob("seg-*"), *directory.glob("manifest.*.tmp")]:  # .tmp: an earlier full disk
        if child.name not in keep:
            child.unlink(missing_ok=True)


class Part(NamedTuple):
    """One mapped segment of a run: its file's index, its rows, and what its line numbers count from."""

    file: int
    table: pa.Table
    line_offset: int


def open_segments(
    directory: Path, entries: list[FileEntry], opened: dict[str, pa.Table] | None = None
) -> list[Part]:
    """Memory-map every segment, in file then append order; line numbers as stored (each part says what to
    add to them).

    ``opened`` holds tables mapped by an earlier call (by segment name); they
    are reused, so a refresh maps only the segments it wrote. It is updated
    to hold exactly the current segments.
    """
    known = opened if opened is not None else {}
    out, current = [], {}
    for index, entry in enumerate(entries):
        for seg in entry.segments:
            table = known.get(seg.name)
            if table is None:
                table = map_segment(directory, seg)
            current[seg.name] = table
            out.append(Part(index, table, seg.line_offset))
    if opened is not None:
        opened.clear()
        opened.update(current)
    return out
