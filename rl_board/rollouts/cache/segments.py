"""Segment files: one Arrow IPC file per parsed block, written atomically, checksummed, mapped.

Uncompressed so they can be memory-mapped; the line numbers inside count from
the block's start, and a run view adds each segment's ``line_offset`` to them
(``shift_lines``, once over the whole run).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import mmap
import os
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa

from rl_board import columns, config, private
from rl_board.formats.schema import LINE


class SegmentRef(Protocol):
    """What mapping needs to know of a segment (manifest.Segment has it)."""

    name: str
    line_offset: int


def write_segment(directory: Path, table: pa.Table) -> dict:
    """Write an Arrow IPC file atomically; return its manifest record.

    Inside ``writing_behind`` a segment written past the page cache is written by a thread while the
    caller goes on, and ``settle`` waits for it: the record is whole once settled (its ``mtime_ns`` is the
    file's), and a write that failed raises there, the ``OSError`` it is, with nothing left on disk.
    """
    _done_with_buffer()
    name = f"seg-{uuid.uuid4().hex}.arrow"
    size = _ipc_size(table)
    scratch = _scratch(_aligned(size))  # never closed: the map goes with its last view (a traceback's too)
    _serialise(table, scratch)
    view = memoryview(scratch)
    crc = checksum(view[:size])  # in memory: the checksum is taken here, not by reading the file back
    device = _direct_device(directory)
    spans = _bulk_spans(scratch, size) if device is not None else []
    record = {"name": name, "rows": table.num_rows, "bytes": size, "crc": crc, "mtime_ns": 0}
    work = functools.partial(_write_whole, directory, view, size, spans, device, record)
    sent = sum(hi - lo for lo, hi in spans)
    if device is None or not _left_behind(name, work, device, sent):
        start = time.perf_counter()
        work()
        if device is not None:  # a write costs what it kept its caller waiting (behind: _done_with_buffer)
            _note_speed(device, sent, time.perf_counter() - start)
    return record


def _left_behind(name: str, work: Callable[[], None], device: int, sent: int) -> bool:
    """Whether ``work`` (segment ``name``'s writing) was left to a thread: inside ``writing_behind``, for a
    segment with pages written past the page cache (a small one is written sooner than a thread starts),
    when a thread can be had (a limit on threads or processes: written in place)."""
    started: list[str] | None = getattr(_local, "started", None)
    if started is None or not sent:
        return False
    writer = _Behind(work, device, sent)
    try:
        writer.start()
    except RuntimeError:
        return False
    _pending[name] = _local.writing = writer
    started.append(name)
    return True


@contextlib.contextmanager
def writing_behind() -> Iterator[None]:
    """Within, this thread's ``write_segment`` leaves a big segment's writing to a thread and returns.

    A load's process waited ~11 ms on the disk for each segment's O_DIRECT pages, ~0.2 s of a 1 GB load's
    ~3.4 s on each core; written behind, that wait overlaps the next job's parse. Whoever asks for it
    settles every record before handing it on (``forked.run``'s ``settle``). A block left by an exception
    waits for the writes it began, whose records nobody will settle."""
    outer: list[str] | None = getattr(_local, "started", None)
    started: list[str] = []
    _local.started = started
    try:
        yield
    except BaseException:
        for name in started:
            with contextlib.suppress(Exception):  # the exception leaving is the one to tell
                _settle_name(name)
        raise
    finally:
        _local.started = outer
        if outer is not None:
            outer.extend(started)


def settle(record: dict) -> None:
    """Wait until the segment of ``record`` is whole; raise what its writing raised. A record written in
    place, or settled before, returns at once."""
    _settle_name(record["name"])


def _settle_name(name: str) -> None:
    writer = _pending.pop(name, None)
    if writer is None:
        return
    writer.join()
    if writer.error is not None:
        raise writer.error


def _write_whole(
    directory: Path,
    view: memoryview,
    size: int,
    spans: list[tuple[int, int]],
    device: int | None,
    record: dict,
) -> None:
    """``view[:size]`` as the segment of ``record``, which is given the file's size and mtime."""
    tmp = directory / (record["name"] + ".tmp")
    try:
        st = _write_file(tmp, view, size, spans, device)
    except OSError:  # a full disk: leave nothing half-written behind
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, directory / record["name"])
    record["bytes"], record["mtime_ns"] = st.st_size, st.st_mtime_ns


class _Behind(threading.Thread):
    """One segment's writing, while the thread that made it parses its next job (``os.pwrite`` releases the
    GIL). Each thread has at most one: the next ``write_segment`` waits for it before using the buffer."""

    def __init__(self, work: Callable[[], None], device: int, sent: int) -> None:
        super().__init__(name="rl-board segment write")
        self._work: Callable[[], None] | None = work
        self.device = device
        self.sent = sent  # bytes of it written past the page cache
        self.error: BaseException | None = None

    def run(self) -> None:
        work, self._work = self._work, None  # the buffer's view let go with the writing
        try:
            if work is not None:
                work()
        except BaseException as exc:  # handed to whoever settles the record
            self.error = exc


_pending: dict[str, _Behind] = {}  # writes behind, by segment name, until settled


def _done_with_buffer() -> None:
    """This thread's write behind is over (its error kept for ``settle``): its buffer may be written again.

    How long that took is what the write cost: a disk that keeps the next job waiting longer than one of
    ``_MIN_DIRECT_BYTES_PER_S`` would take for the whole write is slow (``_note_speed``). The writer's
    own clock would count the GIL it waits for between its writes while the next job is parsed."""
    writer: _Behind | None = getattr(_local, "writing", None)
    if writer is None:
        return
    _local.writing = None
    start = time.perf_counter()
    writer.join()
    _note_speed(writer.device, writer.sent, time.perf_counter() - start)


# ---------------------------------------------------------------- writing past the page cache
#
# A segment is written once, then read through a memory map a few columns at a time: its footer and its
# small columns (steps, rewards, lengths) whenever a run is opened, its big ones (the per-token arrays and
# texts) a row at a time. Written the usual way, every page of it is first a fresh page of the kernel's
# page cache; on a VM whose memory balloon reports free pages to the host (this project's machines) a
# fresh page costs ~10 us of system time: 2.6 ms of CPU per MB, ~18 ms for a 7 MB segment, ~1.3 s of a
# 1 GB load's ~9 s of CPU. So the big buffers' whole pages are written with O_DIRECT from one page-aligned
# buffer the process keeps (~0.2 ms of CPU and ~4.5 ms of waiting for the disk for 7 MB), and the rest
# (the schema, the small columns, the footer: what opening the run reads) through the page cache, so an
# open right after a load reads no disk. Where O_DIRECT is refused (some network file systems, tmpfs before
# Linux 6.6) or the disk is slower than the copy it saves (three writes in a row), the process writes that
# file system's segments wholly through the page cache.

_ALIGN = 4096
_MIN_DIRECT_BYTES_PER_S = 300e6  # slower than this and the page cache's copy is cheaper
_SLOW_WRITES = 3  # ... three writes in a row (one can be slow beside other work)
_REFUSED = {errno.EINVAL, errno.EOPNOTSUPP}
_HAS_DIRECT = hasattr(os, "O_DIRECT") and sys.platform.startswith("linux")
_local = threading.local()
_direct_off: set[int] = set()  # the file systems (st_dev) that refused O_DIRECT or were slow with it
_slow: dict[int, int] = {}  # slow direct writes in a row, per file system


def _aligned(size: int) -> int:
    return -(-size // _ALIGN) * _ALIGN


def _ipc_size(table: pa.Table) -> int:
    sink = pa.MockOutputStream()  # counts the bytes, copies none
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max(table.num_rows, 1))
    return sink.size()


def _serialise(table: pa.Table, scratch: mmap.mmap) -> None:
    with pa.ipc.new_file(pa.FixedSizeBufferWriter(pa.py_buffer(scratch)), table.schema) as writer:
        writer.write_table(table, max_chunksize=max(table.num_rows, 1))


def _direct_device(directory: Path) -> int | None:
    """The file system (``st_dev``) of ``directory`` when segments may be written there with O_DIRECT."""
    if not _HAS_DIRECT:
        return None
    device = os.stat(directory).st_dev
    return None if device in _direct_off else device


def _bulk_spans(scratch: mmap.mmap, size: int) -> list[tuple[int, int]]:
    """The page-aligned byte ranges of the file that hold only big buffers' bytes, in order."""
    whole = pa.py_buffer(scratch)
    reader = pa.ipc.open_file(whole.slice(0, size))  # over the scratch: no copy
    big = config.sizes().direct_write_min_bytes  # read a row at a time, not whole, when a run is opened
    batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
    buffers = (b for batch in batches for column in batch.columns for b in column.buffers() if b is not None)
    spans = []
    for buffer in buffers:
        start = buffer.address - whole.address
        lo, hi = _aligned(start), (start + buffer.size) // _ALIGN * _ALIGN  # its whole pages
        if hi - lo >= big:
            spans.append((lo, hi))
    return sorted(spans)


def _scratch(size: int) -> mmap.mmap:
    """A page-aligned buffer of at least ``size`` bytes: this thread's own, kept while small enough, so
    its pages stay the process's (touched once, not fresh for every segment)."""
    kept: mmap.mmap | None = getattr(_local, "scratch", None)
    if kept is not None and len(kept) >= size:
        return kept
    limit = config.sizes().write_buffer_bytes
    if size > limit:  # a bigger one-off (a compaction's) gets its own, gone with its last reference
        return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
    # a quarter more than asked: blocks differ a little in size, and each new buffer is fresh memory again
    buffer = mmap.mmap(-1, max(min(_aligned(size + size // 4), limit), _ALIGN), flags=mmap.MAP_PRIVATE)
    _local.scratch = buffer  # the old one is unmapped when nothing refers to it any more
    return buffer


def _write_file(
    path: Path, view: memoryview, size: int, spans: list[tuple[int, int]], device: int | None
) -> os.stat_result:
    """``view[:size]`` as a new 0600 file: ``spans`` past the page cache where the file system takes them,
    the rest (everything, where it refuses) through it."""
    with private.open_file(path, "wb") as f:  # only its descriptor is written to
        fd = f.fileno()
        os.ftruncate(fd, size)
        if spans and device is not None and not _written_direct(path, view, spans, device):
            spans = []
        at = 0
        for lo, hi in [*spans, (size, size)]:
            if lo > at:
                _pwrite_all(fd, view[at:lo], at)
            at = max(at, hi)
        return os.fstat(fd)


def _written_direct(path: Path, view: memoryview, spans: list[tuple[int, int]], device: int) -> bool:
    """``spans`` written with O_DIRECT; False when the file system refuses it (then never asked again)."""
    try:
        direct = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_DIRECT)
        try:
            for lo, hi in spans:
                _pwrite_all(direct, view[lo:hi], lo)
        finally:
            os.close(direct)
    except OSError as exc:
        if exc.errno not in _REFUSED:
            raise
        _direct_off.add(device)  # refused here: this file system's segments through the page cache
        return False
    return True


def _note_speed(device: int, sent: int, seconds: float) -> None:
    """Three slow direct writes in a row turn O_DIRECT off for a file system: a disk slower than the page
    cache's copy costs more than it saves."""
    if sent < 1 << 20:  # too little to time
        return
    slow = sent / max(seconds, 1e-9) < _MIN_DIRECT_BYTES_PER_S
    _slow[device] = _slow.get(device, 0) + 1 if slow else 0
    if _slow[device] >= _SLOW_WRITES:
        _direct_off.add(device)


def _pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    while data:
        done = os.pwrite(fd, data, offset)
        data, offset = data[done:], offset + done


def checksum(data: bytes | memoryview, crc: int = 0) -> int:
    """The cache's checksum of ``data`` following ``crc`` (that of the bytes before it): CRC-32C.

    Every segment's bytes are summed as they are written, ~0.5 GB at 1 GB of logs. zlib's CRC-32 did
    that at ~2.6 GB/s here, ~2.4% of the load's CPU; CRC-32C in google-crc32c's C code (the TensorBoard
    reader's dependency) at ~8.4 GB/s, and it lets go of the GIL past 1 MB as zlib does. Imported here,
    not with the module: a look at a cached run sums nothing.

    Where google-crc32c has no C code (no wheel for the platform), zlib's CRC-32 stands in: its pure-Python
    sum would take minutes a GB. A cache summed one way and checked the other finds a mismatch, and the
    mismatch means what any other does: a segment is rebuilt, a file read again from its start.
    """
    import google_crc32c

    if google_crc32c.implementation != "c":
        return zlib.crc32(data, crc)
    # It reads only buffers that need no release (bytes, numpy arrays), not a view of the scratch map:
    # numpy's view of the same memory, not a copy.
    return google_crc32c.extend(crc, np.frombuffer(data, np.uint8))


def file_crc(path: Path) -> int:
    """``checksum`` of a whole file, read in blocks so it does not count as resident memory."""
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(4 * 1024 * 1024):
            crc = checksum(chunk, crc)
    return crc


def map_segment(directory: Path, seg: SegmentRef) -> pa.Table:
    """Memory-map one segment, its line numbers as stored: counted from ``seg.line_offset`` (a run view
    shifts all of its segments' at once, ``shift_lines``)."""
    source = pa.memory_map(str(directory / seg.name), "r")
    return pa.ipc.open_file(source).read_all()


def shift_lines(table: pa.Table, offsets: np.ndarray) -> pa.Table:
    """``table`` with ``offsets[i]`` added to row i's line number: one pass over a whole run's rows, where
    one per segment cost ~0.1 ms each (a 10 GB run has ~670 segments)."""
    i = table.schema.get_field_index(LINE)
    lines = columns.to_numpy(table.column(i)) + offsets  # (pc.add of an int imports pandas)
    return table.set_column(i, LINE, columns.from_numpy(lines, table.schema.field(i).type))
