"""LevelDB's log framing, read once for the trackers that write their run log in it: W&B (``run-<id>.wandb``,
wandb_log) and SwanLab (``run-<id>.swanlab``, swanlab_log). What the records mean is each kind's own.

The format (leveldb ``doc/log_format.md``; wandb 0.31 ``core/pkg/leveldb/record.go``; swanlab 0.10
``sdk/internal/core_python/store``): after the kind's own short header, 32 KiB blocks counted from the
start of the file, each a run of chunks: a 7-byte header (checksum uint32, length uint16, type uint8:
FULL 1, FIRST 2, MIDDLE 3, LAST 4) then its payload; a block's last < 7 bytes are zero padding. The
checksum is zlib's CRC-32 of the type byte then the payload (not LevelDB's masked CRC-32C). A record is
one FULL chunk, or a FIRST chunk, MIDDLE ones and a LAST.

Reading is columnar: every block starts with a chunk, so the chunks of all blocks are walked side by side
with numpy; the checksums are computed with one C call per chunk, or, for many small chunks (SwanLab
writes a record per point), all at once; only the rarer chunks (a record split over blocks, damage) go
through Python one by one. The file is mapped, not read into memory.

Damage (a bad checksum, an impossible length or type) is a Problem naming its byte offset; reading goes
on at the next chunk the damaged one's length gives or, when that one is bad too, at the next block, as
LevelDB's reader recovers. Zeroed space (a file preallocated, or written out of order) is passed over to
the next block. A record not all written yet ends a read, and the next read starts at it; so does damage
not got past when the file ends, which is a ``tail`` problem (it may be a record still being written).
A long log is read a batch of ``config.sizes().tracker_batch_bytes`` at a time.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
import zlib
from bisect import bisect_left
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cache, cached_property
from itertools import repeat
from pathlib import Path
from types import TracebackType

import numpy as np

from rl_board import config
from rl_board.metrics.table import Problem

BLOCK = 0x8000  # 32 KiB: the log's block, a fact of the format (not a setting)
CHUNK = struct.Struct("<IHB")  # checksum, length, type
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_SEEDS = [zlib.crc32(bytes([kind])) for kind in range(LAST + 1)]
"""The checksum of each type byte alone: the seed of its payload's."""
_PADDING, _CUT, _BAD = 0, 1, 2
"""How the walk of a block ended: at its padding (or its end), where the bytes read end, at a chunk header
that cannot be one (or zeroed space)."""


# ---------------------------------------------------------------- one stretch of a log


@dataclass
class Frames:
    """The whole records of a stretch of a log (its bytes ``data``, from file offset ``base`` on), in file
    order: record i is ``blob[starts[i]:ends[i]]``, its first chunk at file offset ``offsets[i]``; ``blob``
    is ``data`` (a view of the log, valid while it is open) followed by the records put together from
    several chunks (``joined``, in file order: records ``joined_rows``); ``copies``: the other records'
    payloads when the framing copied them out already.

    ``problems``: damage got past; ``tail``: damage not got past where ``data`` ends; ``resume``: the file
    offset where the next read starts (a record not all in ``data``, or that damage)."""

    data: bytes | memoryview
    base: int
    file: str
    starts: np.ndarray
    ends: np.ndarray
    offsets: np.ndarray
    joined: list[bytes] = field(default_factory=list)
    joined_rows: list[int] = field(default_factory=list)
    copies: list[bytes] | None = None
    problems: list[Problem] = field(default_factory=list)
    tail: list[Problem] = field(default_factory=list)
    resume: int = 0

    def __len__(self) -> int:
        return len(self.starts)

    @cached_property
    def blob(self) -> bytes | memoryview:
        return b"".join([self.data, *self.joined]) if self.joined else self.data

    def payloads(self) -> Iterator[tuple[int, bytes]]:
        """(file offset, payload) of each record."""
        joined = dict(zip(self.joined_rows, self.joined, strict=True))
        copies = iter(self.copies) if self.copies is not None else None
        spans = zip(self.offsets.tolist(), self.starts.tolist(), self.ends.tolist(), strict=True)
        for row, (offset, start, end) in enumerate(spans):
            if row in joined:
                yield offset, joined[row]
            else:
                yield offset, next(copies) if copies is not None else bytes(self.data[start:end])


def frame(data: bytes | memoryview, base: int = 0, file: str = "") -> Frames:
    """The records of ``data``, the log's bytes from file offset ``base`` on (a chunk starts there)."""
    size = len(data)
    buf = np.frombuffer(data, np.uint8)
    first_end = BLOCK - base % BLOCK  # where the block ``base`` is in ends
    begin = np.concatenate([np.zeros(1, np.int64), np.arange(first_end, size, BLOCK, dtype=np.int64)])
    limit = np.concatenate([np.full(1, first_end, np.int64), begin[1:] + BLOCK])
    chunks = _walk(data, buf, begin, limit)
    crc_ok, copies = _checksums(data, buf, chunks)
    return _Assembly(data, base, file, limit, chunks, crc_ok, copies).run()


@dataclass
class _Chunks:
    """Every chunk the walk met, in file order (``place``: its header's offset in ``data``), how many each
    block has and from which index, and where and how each block's walk ended."""

    place: np.ndarray
    length: np.ndarray
    kind: np.ndarray
    first: np.ndarray
    count: np.ndarray
    stop: np.ndarray
    ended: np.ndarray


def _walk(data: bytes | memoryview, buf: np.ndarray, begin: np.ndarray, limit: np.ndarray) -> _Chunks:
    """Follow the chunk lengths of all blocks at once: one round reads the next chunk header of each block
    still being walked (the last few blocks are walked on one at a time: a round costs more than a chunk).
    A block's walk ends at its padding, where the bytes end, or at a header that is not one (a type
    outside 1-4, or a length past the block's end)."""
    size, blocks = len(buf), len(begin)
    headers = np.lib.stride_tricks.as_strided(buf, (max(size - CHUNK.size + 1, 0), CHUNK.size), (1, 1))
    pos = begin.copy()  # where each block's walk is (at the end: where it stopped)
    ended = np.full(blocks, _PADDING, np.int8)
    found: list[tuple[np.ndarray, ...]] = []  # (block, round, place, length, kind) of the chunks met
    active = np.arange(blocks)
    rounds = 0
    while active.size > _FEW_BLOCKS:
        at = pos[active]
        room = limit[active] - at
        whole = (room >= CHUNK.size) & (at + CHUNK.size <= size)
        if not whole.all():
            out = ~whole
            padding = (room[out] < CHUNK.size) & (at[out] + room[out] <= size)
            ended[active[out]] = np.where(padding, _PADDING, _CUT)
            active, at, room = active[whole], at[whole], room[whole]
        head = headers[at]
        length = head[:, 4].astype(np.int64) | head[:, 5].astype(np.int64) << 8
        kind = head[:, 6]
        end = at + CHUNK.size + length
        sound = (kind >= FULL) & (kind <= LAST) & (length <= room - CHUNK.size)
        good = sound & (end <= size)
        if not good.all():
            out = ~good
            ended[active[out]] = np.where(sound[out], _CUT, _BAD)
            active, at, length, kind, end = active[good], at[good], length[good], kind[good], end[good]
        found.append((active, np.full(len(active), rounds), at, length, kind))
        pos[active] = end
        rounds += 1
    for block in active.tolist():
        met, pos[block], ended[block] = _walk_block(data, int(pos[block]), int(limit[block]))
        if met:
            places, lengths, kinds = (np.array(column, np.int64) for column in zip(*met, strict=True))
            found.append((np.full(len(met), block), rounds + np.arange(len(met)), places, lengths, kinds))
    if not found:
        none, zeros = np.zeros(0, np.int64), np.zeros(blocks, np.int64)
        return _Chunks(none, none, none.astype(np.uint8), zeros, zeros, pos, ended)
    block, step, place, length, kind = (np.concatenate(column) for column in zip(*found, strict=True))
    count = np.bincount(block, minlength=blocks)
    first = np.cumsum(count) - count
    order = np.empty(len(block), np.int64)
    order[first[block] + step] = np.arange(len(block))  # a block's chunks come one a round, in order
    return _Chunks(place[order], length[order], kind[order].astype(np.uint8), first, count, pos, ended)


_FEW_BLOCKS = 4
"""Blocks still being walked below which they are walked one at a time."""


Met = list[tuple[int, int, int]]
"""(place, length, type) of the chunks a walk met."""


def _walk_block(data: bytes | memoryview, pos: int, limit: int) -> tuple[Met, int, int]:
    """``_walk`` for one block, chunk by chunk from ``pos``: the chunks met, where the walk stopped and how
    it ended."""
    size, unpack = len(data), CHUNK.unpack_from
    met: Met = []
    while True:
        room = limit - pos
        if room < CHUNK.size:
            return met, pos, _PADDING if pos + room <= size else _CUT
        if pos + CHUNK.size > size:
            return met, pos, _CUT
        _, length, kind = unpack(data, pos)
        if not (FULL <= kind <= LAST and length <= room - CHUNK.size):
            return met, pos, _BAD
        end = pos + CHUNK.size + length
        if end > size:
            return met, pos, _CUT
        met.append((pos, length, kind))
        pos = end


Checked = tuple[np.ndarray, "list[bytes] | None"]
"""Whether each chunk's checksum matches, and the payloads when they were copied out on the way."""


def _checksums(data: bytes | memoryview, buf: np.ndarray, chunks: _Chunks) -> Checked:
    """Whether each chunk's checksum matches (zlib's CRC-32 of its payload, seeded with its type byte's),
    and the payloads, copied out on the way (None when not: many small chunks are first checked all at
    once, ``_all_sound``). One C call per chunk and no Python loop around them."""
    count = len(chunks.place)
    if not count:
        return np.zeros(0, bool), None
    stored = buf[chunks.place[:, None] + np.arange(4)].view("<u4").ravel()  # each header's first 4 bytes
    if count * _SMALL_CHUNK > len(data) and _all_sound(buf, chunks, stored):
        return np.ones(count, bool), None
    body = chunks.place + CHUNK.size
    view = memoryview(data)
    spans = map(view.__getitem__, map(slice, body.tolist(), (body + chunks.length).tolist()))
    copies = list(map(memoryview.tobytes, spans))
    full = (chunks.kind == FULL).all()
    seeds = repeat(_SEEDS[FULL]) if full else map(_SEEDS.__getitem__, chunks.kind.tolist())
    return np.fromiter(map(zlib.crc32, copies, seeds), np.uint32, count=count) == stored, copies


_SMALL_CHUNK = 256
"""Below this many bytes a chunk on average, the checksums are first checked all at once."""


def _all_sound(buf: np.ndarray, chunks: _Chunks, stored: np.ndarray) -> bool:
    """Whether every chunk's checksum matches, told by one pass of zlib over a copy of the stretch.

    CRC-32 is linear: from a zero register, a message followed by its own raw CRC (little-endian) leaves
    the register zero, and zero bytes leave it as it is. So the stretch is copied with each chunk's
    checksum and length zeroed, the bytes between chunks zeroed, and after each chunk's type byte and
    payload the raw CRC they must have (its stored checksum, less the part that depends on the length
    alone: the CRC-32 of that many zero bytes); the CRC of the copy from a zero register is zero when
    every chunk is sound. One bad chunk always shows; bad ones could hide each other only by a 1 in 2**32
    chance, as a bad payload could pass its own checksum. False sends the chunks to be checked one by one.
    """
    place = chunks.place
    end = place + CHUNK.size + chunks.length
    last = int(end[-1])
    copy = np.zeros(last + 4, np.uint8)
    copy[:last] = buf[:last]
    copy[: int(place[0])] = 0
    copy[place[:, None] + np.arange(CHUNK.size - 1)] = 0  # checksum and length: not checked bytes
    for gap in np.flatnonzero(place[1:] > end[:-1]).tolist():  # a block's padding
        copy[int(end[gap]) : int(place[gap + 1])] = 0
    raw = (stored ^ _zero_crcs()[chunks.length + 1]).astype("<u4")
    copy[end[:, None] + np.arange(4)] = raw.view(np.uint8).reshape(-1, 4)
    return zlib.crc32(copy.data, 0xFFFFFFFF) == 0xFFFFFFFF  # a zero register: the xor zlib applies


@cache
def _zero_crcs() -> np.ndarray:
    """The CRC-32 of n zero bytes, for every n a chunk's type byte and payload can have."""
    out, crc = [0], 0
    for _ in range(BLOCK):
        crc = zlib.crc32(b"\0", crc)
        out.append(crc)
    return np.array(out, np.uint32)


class _Assembly:
    """Chunks into records, in file order, as LevelDB's reader does; a stretch of sound FULL chunks is
    taken whole, and only the other chunks (and the blocks whose walk met damage) are looked at one by one.
    """

    def __init__(
        self,
        data: bytes | memoryview,
        base: int,
        file: str,
        limit: np.ndarray,
        chunks: _Chunks,
        crc_ok: np.ndarray,
        copies: list[bytes] | None,
    ) -> None:
        self.data, self.base, self.file, self.chunks = data, base, file, chunks
        self.crc_ok, self.copies = crc_ok, copies
        # per block, as Python numbers: each block is looked at in Python when it is
        self.limit, self.first, self.stop, self.ended = (
            limit.tolist(),
            chunks.first.tolist(),
            chunks.stop.tolist(),
            chunks.ended.tolist(),
        )
        self.last = (chunks.first + chunks.count).tolist()
        self.take = (chunks.kind == FULL) & crc_ok  # the FULL chunks that are records
        self.odd = np.flatnonzero(~self.take).tolist()
        self.parts: list[int] = []  # the chunks of the record in progress
        self.start = -1  # where it began
        self.damaged = -1  # where damage not yet got past began (a place the next read can start at)
        self.pending: list[Problem] = []
        self.problems: list[Problem] = []
        self.joined: list[tuple[int, bytes]] = []  # (place, payload) of records of several chunks

    def run(self) -> Frames:
        chunks, size = self.chunks, len(self.data)
        blocks = len(self.limit)
        damaged = np.flatnonzero(chunks.ended != _PADDING).tolist()
        busy = sorted(set(self.chunks_block(self.odd)) | set(damaged))  # the blocks with odd chunks or ends
        stop: int | None = None
        at, k = 0, 0
        while k < blocks:
            if not self.parts and self.damaged < 0:  # in step: go on at the next block with anything odd
                while at < len(busy) and busy[at] < k:
                    at += 1
                if at == len(busy):
                    break
                k = busy[at]
            stop = self.block(k)
            if stop is not None:
                break
            k += 1
        if stop is None:
            stop = min(self.limit[-1], size)
        if self.damaged >= 0:
            resume, tail = self.damaged, self.pending
        else:
            resume, tail = (self.start if self.parts else stop), []
        return self.frames(resume, tail)

    def chunks_block(self, indices: list[int]) -> list[int]:
        """The blocks the given chunks are in."""
        if not indices:
            return []
        return np.searchsorted(np.array(self.last), np.array(indices), side="right").tolist()

    def block(self, k: int) -> int | None:
        """Take block ``k``'s chunks; where reading stops (the end of the bytes, or damage there), or None."""
        chunks, size = self.chunks, len(self.data)
        c, last = self.first[k], self.last[k]
        odd = self.odd
        index = bisect_left(odd, c)
        while c < last:
            if not self.parts and self.damaged < 0:  # in step: the next odd chunk of the block
                while index < len(odd) and odd[index] < c:
                    index += 1
                if index == len(odd) or odd[index] >= last:
                    break
                c = odd[index]
            place = int(chunks.place[c])
            if not self.crc_ok[c] and self.damaged >= 0:
                # a second bad chunk: its length is not to be trusted, nor the rest of the block
                self.take[c + 1 : last] = False
                return place if self.limit[k] > size else None
            self.chunk(c, place)
            c += 1
        ended, place = self.ended[k], self.stop[k]
        if ended == _CUT:
            return place
        if ended == _BAD:
            header = self.data[place : place + CHUNK.size]
            if header == bytes(CHUNK.size):  # zeroed space: wandb's and LevelDB's readers skip the block
                if self.parts:
                    self.damage(place, f"zeroed bytes at byte {self.base + place} inside a record")
            else:
                _, length, kind = CHUNK.unpack(header)
                self.damage(
                    place,
                    f"a damaged chunk header at byte {self.base + place} (length {length}, "
                    f"type {kind}); the rest of its block is skipped",
                )
            if self.limit[k] > size:
                return place
        return None

    def chunk(self, c: int, place: int) -> None:
        """One chunk that is not simply a sound FULL record in step."""
        chunks, at = self.chunks, self.base + place
        if not self.crc_ok[c]:
            self.damage(place, f"a chunk at byte {at} fails its checksum")
            return
        kind = int(chunks.kind[c])
        if kind in (FULL, FIRST):
            if self.parts:
                self.damage(place, f"a new record starts at byte {at} before the last one ended")
            if self.damaged >= 0:  # back in step: the damage before is known in full
                self.problems.extend(self.pending)
                self.pending, self.damaged = [], -1
            if kind == FIRST:
                self.parts, self.start = [c], place
        elif self.parts:
            self.parts.append(c)
            if kind == LAST:
                self.joined.append((self.start, b"".join(map(self.payload, self.parts))))
                self.parts = []
        elif self.damaged < 0:
            self.damage(place, f"a chunk at byte {at} continues a record whose start is missing")

    def payload(self, c: int) -> bytes | memoryview:
        if self.copies is not None:
            return self.copies[c]
        body = int(self.chunks.place[c]) + CHUNK.size
        return self.data[body : body + int(self.chunks.length[c])]

    def damage(self, place: int, reason: str) -> None:
        if self.damaged < 0:
            self.damaged = self.start if self.parts else place
            lost = f"; the record from byte {self.base + self.start} is lost" if self.parts else ""
            self.pending.append(Problem(self.file, reason + lost))
        self.parts = []

    def frames(self, resume: int, tail: list[Problem]) -> Frames:
        chunks, base = self.chunks, self.base
        taken = np.flatnonzero(self.take)
        starts = chunks.place[taken] + CHUNK.size
        ends = starts + chunks.length[taken]
        offsets = chunks.place[taken] + base
        rows: list[int] = []
        if self.joined:
            places = np.array([place for place, _ in self.joined], np.int64)
            sizes = np.array([len(payload) for _, payload in self.joined], np.int64)
            begin = len(self.data) + np.cumsum(sizes) - sizes
            at = np.searchsorted(offsets, places + base)
            starts, ends = np.insert(starts, at, begin), np.insert(ends, at, begin + sizes)
            offsets = np.insert(offsets, at, places + base)
            rows = (at + np.arange(len(at))).tolist()  # where the inserted records are now
        joined = [payload for _, payload in self.joined]
        copies = None if self.copies is None else [self.copies[c] for c in taken.tolist()]
        return Frames(
            self.data,
            base,
            self.file,
            starts,
            ends,
            offsets,
            joined,
            rows,
            copies,
            self.problems,
            list(tail),
            base + resume,
        )


# ---------------------------------------------------------------- a whole log, batch by batch


class LogFile:
    """A run log mapped for reading (its bytes are read in place, not copied): OSError when it cannot be
    opened or is not a regular file (a FIFO named like a log would block a plain read forever). It is
    opened without blocking, and its type checked on the open file."""

    def __init__(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{Path(path).name} is not a regular file")
            try:
                self._map: mmap.mmap | None = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file cannot be mapped
                self._map = None
        finally:
            os.close(fd)  # the mapping keeps the file
        self.size = len(self._map) if self._map is not None else 0

    def read(self, offset: int, count: int) -> memoryview | bytes:
        """Up to ``count`` bytes from ``offset``, as a view of the mapping."""
        if self._map is None or offset >= self.size:
            return b""
        return memoryview(self._map)[offset : offset + count]

    def close(self) -> None:
        if self._map is not None:
            with suppress(BufferError):  # a view of it is still held: it is unmapped when that goes
                self._map.close()

    def __enter__(self) -> LogFile:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


@dataclass
class Scan:
    """One read of a log from ``offset`` on: ``batches`` gives its records a batch at a time; afterwards
    ``offset`` is where the next read starts, ``problems`` the damage got past, ``tail`` the damage not
    got past at the end, and ``refused`` why the header is not the kind's ("" when it is).

    ``header`` bytes start the file; ``check`` (the kind's hook) says why they are refused, given them
    or, in a file not all written yet, fewer ("" when they are the kind's or may still become it).
    """

    offset: int = 0
    file: str = ""
    header: int = 0
    check: Callable[[bytes], str] | None = None
    problems: list[Problem] = field(default_factory=list)
    tail: list[Problem] = field(default_factory=list)
    refused: str = ""

    def batches(self, log: bytes | LogFile, batch: int | None = None) -> Iterator[Frames]:
        """The records from ``offset`` on, about ``batch`` bytes (``tracker_batch_bytes``) of the log at a
        time, so a long run's log is never all in memory; a record longer than that is read whole."""
        read = log.read if isinstance(log, LogFile) else lambda at, count: log[at : at + count]
        size = log.size if isinstance(log, LogFile) else len(log)
        if self.offset > size:
            self.tail.append(
                Problem(
                    self.file,
                    f"the log is shorter ({size} bytes) than where the last read stopped ({self.offset})",
                )
            )
            return
        if self.header:
            head = bytes(read(0, self.header))
            self.refused = self.check(head) if self.check is not None else ""
            if self.refused or len(head) < self.header:
                return  # not the kind's log, or its header not all written yet
            self.offset = max(self.offset, self.header)
        batch = batch or config.sizes().tracker_batch_bytes
        span = batch
        while True:
            data = read(self.offset, span)
            frames = frame(data, self.offset, self.file)
            self.problems.extend(frames.problems)
            if len(frames):
                yield frames
            if len(data) < span:  # the end of the file: what is not got past is the tail
                self.tail.extend(frames.tail)
                self.offset = frames.resume
                return
            # more follows: damage at the batch's end is read again from its start with what follows
            span = span * 2 if frames.resume == self.offset else batch  # a record longer than a batch
            self.offset = frames.resume
