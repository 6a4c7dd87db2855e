"""The LevelDB log framing W&B's and SwanLab's run logs share (rl_board/metrics/leveldb_log.py), and the
protobuf wire helpers both decode with (rl_board/metrics/protowire.py): logs framed here byte by byte as
LevelDB's writer lays them out, cut, damaged and read on; the columnar framing checked against a plain
chunk-by-chunk reader of the same rules."""

from __future__ import annotations

import os
import random
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from rl_board.metrics import leveldb_log
from rl_board.metrics.leveldb_log import BLOCK, CHUNK, FIRST, FULL, LAST, MIDDLE, LogFile, Scan, frame
from rl_board.metrics.protowire import message_fields, slices, varints, walk

HEAD = 7  # both kinds' headers are 7 bytes
FILE = "run.log"


def chunk(kind: int, payload: bytes) -> bytes:
    return CHUNK.pack(zlib.crc32(bytes([kind]) + payload), len(payload), kind) + payload


def write(records: list[bytes], head: int = HEAD) -> tuple[bytes, list[int]]:
    """A log as LevelDB's writer lays it out after a ``head``-byte header, and where each record starts."""
    out = bytearray(b"H" * head)
    starts = []
    for record in records:
        rest, first = record, True
        while True:
            room = BLOCK - len(out) % BLOCK
            if room < CHUNK.size:
                out += bytes(room)
                continue
            if first:
                starts.append(len(out))
            piece, rest = rest[: room - CHUNK.size], rest[room - CHUNK.size :]
            kind = (FULL if first else LAST) if not rest else (FIRST if first else MIDDLE)
            out += chunk(kind, piece)
            first = False
            if not rest:
                break
    return bytes(out), starts


def records_of(count: int, seed: int = 0, big: tuple[int, ...] = ()) -> list[bytes]:
    """Records of a few to a few hundred bytes (the ones at ``big``: longer than a block)."""
    rng = random.Random(seed)
    out = [bytes([i % 251]) * rng.randint(0, 300) + i.to_bytes(4, "little") for i in range(count)]
    for at in big:
        out[at] = bytes(range(256)) * 200 + at.to_bytes(4, "little")  # 51 KiB: FIRST, MIDDLE, LAST
    return out


def payloads(frames: leveldb_log.Frames) -> list[tuple[int, bytes]]:
    return list(frames.payloads())


def read_all(data: bytes, start: int = HEAD, batch: int | None = None) -> tuple[list, Scan]:
    scan = Scan(start, FILE)
    got = [record for frames in scan.batches(data, batch) for record in frames.payloads()]
    return got, scan


# ---------------------------------------------------------------- framing


def test_records_across_block_boundaries_come_whole_and_in_order():
    records = records_of(900, big=(10, 400, 401))
    data, starts = write(records)
    assert len(data) > 8 * BLOCK
    frames = frame(data[HEAD:], HEAD, FILE)
    assert payloads(frames) == list(zip(starts, records, strict=True))
    assert frames.problems == frames.tail == [] and frames.resume == len(data)
    blob = frames.blob  # FULL records in place, the others put together after the data
    assert [bytes(blob[s:e]) for s, e in zip(frames.starts, frames.ends, strict=True)] == records


@pytest.mark.parametrize("head", [0, 7, 12, BLOCK - 3])
def test_blocks_are_counted_from_the_start_of_the_file(head: int):
    records = records_of(300, seed=head, big=(5,))
    data, starts = write(records, head)
    got, scan = read_all(data, head)
    assert got == list(zip(starts, records, strict=True)) and scan.offset == len(data)


def test_a_record_cut_at_every_offset_resumes_exactly():
    records = records_of(240, seed=1)
    data, starts = write(records)
    spanning = next(i for i, s in enumerate(starts) if s < BLOCK < starts[i + 1])  # a FIRST and a LAST chunk
    assert data[starts[spanning] + CHUNK.size - 1] == FIRST
    around = range(starts[spanning - 2] - 1, starts[spanning + 2] + 1)  # it, its neighbours, the block's end
    cuts = sorted({*range(HEAD, 600), *around, *range(600, len(data), 97), len(data)})
    for cut in cuts:
        first, scan = read_all(data[:cut])
        assert scan.problems == scan.tail == [], cut
        assert scan.offset == (starts[len(first)] if len(first) < len(starts) else len(data)), cut
        assert scan.offset <= cut, cut
        rest, again = read_all(data, scan.offset)
        assert again.problems == again.tail == [] and again.offset == len(data), cut
        assert first + rest == list(zip(starts, records, strict=True)), cut


def test_small_batches_read_the_same_as_one():
    records = records_of(600, seed=2, big=(100, 300))
    data, starts = write(records)
    one, _ = read_all(data)
    for batch in (50, 700, 5000, BLOCK + 1):
        got, scan = read_all(data, batch=batch)
        assert got == one == list(zip(starts, records, strict=True)) and scan.offset == len(data), batch


def test_the_batch_size_is_the_configured_one(set_sizes, monkeypatch):
    data, _ = write(records_of(300, seed=3))
    seen = []
    real = leveldb_log.frame
    monkeypatch.setattr(leveldb_log, "frame", lambda chunk, *a: seen.append(len(chunk)) or real(chunk, *a))
    set_sizes(tracker_batch_bytes=4096)
    got, _ = read_all(data)
    assert len(got) == 300 and max(seen) <= 2 * 4096 and len(seen) > 5


# ---------------------------------------------------------------- damage


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


def test_a_damaged_chunk_in_the_middle_is_one_problem_and_the_rest_is_read():
    records = records_of(500, seed=4)
    data, starts = write(records)
    bad = starts[250]
    got, scan = read_all(flip(data, bad + CHUNK.size + 1))  # in its payload
    (problem,) = scan.problems
    assert problem.file == FILE and f"at byte {bad}" in problem.reason and "checksum" in problem.reason
    assert scan.tail == [] and scan.offset == len(data)
    assert got == [(s, r) for s, r in zip(starts, records, strict=True) if s != bad]


def test_damage_inside_a_record_over_several_blocks_loses_that_record_only():
    records = records_of(300, seed=5, big=(120,))
    data, starts = write(records)
    big = starts[120]
    got, scan = read_all(flip(data, big + BLOCK + 100))  # in its MIDDLE chunk
    (problem,) = scan.problems
    assert f"the record from byte {big} is lost" in problem.reason
    assert got == [(s, r) for s, r in zip(starts, records, strict=True) if s != big]


def test_a_damaged_chunk_header_skips_the_rest_of_its_block():
    records = records_of(700, seed=6)
    data, starts = write(records)
    at = starts[10]
    damaged = data[: at + 6] + bytes([9]) + data[at + 7 :]  # type 9: not a chunk
    got, scan = read_all(damaged)
    (problem,) = scan.problems
    assert f"a damaged chunk header at byte {at}" in problem.reason
    assert [s for s, _ in got] == [s for s in starts if s < at or s >= BLOCK]


def test_a_second_bad_chunk_is_not_trusted_the_block_is_skipped():
    records = records_of(700, seed=7)
    data, starts = write(records)
    damaged = flip(flip(data, starts[3] + 9), starts[4] + 9)
    got, scan = read_all(damaged)
    assert len(scan.problems) == 1 and f"at byte {starts[3]}" in scan.problems[0].reason
    assert [s for s, _ in got] == [s for s in starts if s < starts[3] or s >= BLOCK]


def test_damage_at_the_end_is_a_tail_and_the_next_read_starts_at_it():
    records = records_of(400, seed=8)
    data, starts = write(records)
    got, scan = read_all(flip(data, len(data) - 2))
    assert scan.problems == [] and len(scan.tail) == 1 and scan.offset == starts[-1]
    rest, again = read_all(data, scan.offset)  # it was a write still under way
    assert again.problems == again.tail == [] and got + rest == list(zip(starts, records, strict=True))


def test_zeroed_space_waits_for_data_and_inside_a_record_is_damage():
    records = records_of(400, seed=9, big=(200,))
    data, starts = write(records)
    got, scan = read_all(data[: starts[100]] + bytes(3000))  # preallocated, not yet written
    assert scan.problems == scan.tail == [] and scan.offset == starts[100] and len(got) == 100
    big = starts[200]
    block_end = (big // BLOCK + 1) * BLOCK
    zeroed = data[:block_end] + bytes(BLOCK) + data[block_end + BLOCK :]  # the block after its FIRST chunk
    got, scan = read_all(zeroed)
    (problem,) = scan.problems
    assert "zeroed bytes" in problem.reason and f"the record from byte {big} is lost" in problem.reason
    assert [s for s, _ in got] == [s for s in starts if s != big and not block_end <= s < block_end + BLOCK]


def test_many_small_chunks_checked_at_once_name_the_bad_one():
    records = [bytes([i % 256]) * (i % 7) for i in range(20_000)]  # thousands of chunks a block
    data, starts = write(records)
    got, scan = read_all(data)
    assert scan.problems == [] and len(got) == len(records)
    victim = starts[12_345]  # a record of 4 bytes
    got, scan = read_all(flip(data, victim + CHUNK.size + 2))
    (problem,) = scan.problems
    assert f"a chunk at byte {victim} fails its checksum" == problem.reason
    assert [s for s, _ in got] == [s for s in starts if s != victim]


def reference(data: bytes, base: int) -> tuple[list[tuple[int, bytes]], list[str], list[str], int]:
    """LevelDB's reader, chunk by chunk, with the damage rules of ``leveldb_log``: the records, the damage
    got past, the damage at the end, and where the next read starts."""
    size, pos = len(data), 0
    records: list[tuple[int, bytes]] = []
    problems: list[str] = []
    pending: list[str] = []
    parts: list[bytes] = []
    start = damaged = -1

    def damage(at: int, reason: str) -> None:
        nonlocal damaged, parts
        if damaged < 0:
            damaged = start if parts else at
            pending.append(reason + (f"; the record from byte {base + start} is lost" if parts else ""))
        parts = []

    while True:
        room = BLOCK - (base + pos) % BLOCK
        if room < CHUNK.size:
            if pos + room > size:
                break
            pos += room
            continue
        if pos + CHUNK.size > size:
            break
        crc, length, kind = CHUNK.unpack_from(data, pos)
        end, at = pos + CHUNK.size + length, base + pos
        if crc == length == kind == 0:
            if parts:
                damage(pos, f"zeroed bytes at byte {at} inside a record")
            if pos + room > size:
                break
            pos += room
            continue
        if length > room - CHUNK.size or not FULL <= kind <= LAST:
            damage(
                pos,
                f"a damaged chunk header at byte {at} (length {length}, type {kind}); the rest of "
                "its block is skipped",
            )
            if pos + room > size:
                break
            pos += room
            continue
        if end > size:
            break
        payload = data[pos + CHUNK.size : end]
        if zlib.crc32(bytes([kind]) + payload) != crc:
            if damaged >= 0:
                if pos + room > size:
                    break
                pos += room
                continue
            damage(pos, f"a chunk at byte {at} fails its checksum")
            pos = end
            continue
        if kind in (FULL, FIRST):
            if parts:
                damage(pos, f"a new record starts at byte {at} before the last one ended")
            if damaged >= 0:
                problems.extend(pending)
                pending.clear()
                damaged = -1
            if kind == FULL:
                records.append((at, payload))
            else:
                parts, start = [payload], pos
        elif parts:
            parts.append(payload)
            if kind == LAST:
                records.append((base + start, b"".join(parts)))
                parts = []
        elif damaged < 0:
            damage(pos, f"a chunk at byte {at} continues a record whose start is missing")
        pos = end
    if damaged >= 0:
        return records, problems, pending, base + damaged
    return records, problems, [], base + (start if parts else pos)


@pytest.mark.parametrize("seed", range(12))
def test_any_damage_frames_as_the_plain_reader_does(seed: int, monkeypatch):
    rng = random.Random(seed)
    small = seed % 2 == 0  # many small chunks (checked at once) or fewer bigger ones
    records = [rng.randbytes(rng.randint(0, 40 if small else 3000)) for _ in range(10_000 if small else 150)]
    for at in rng.sample(range(len(records)), 2):
        records[at] = rng.randbytes(rng.randint(BLOCK, 3 * BLOCK))
    whole, _ = write(records)
    assert len(whole) > 9 * BLOCK
    for _ in range(20):
        data = bytearray(whole)
        for _ in range(rng.randint(1, 5)):
            at = rng.randrange(HEAD, len(data))
            action = rng.random()
            if action < 0.5:
                data[at] ^= 1 << rng.randrange(8)
            elif action < 0.7:
                span = len(data[at : at + rng.randint(1, 60)])
                data[at : at + span] = bytes(span)
            elif action < 0.85:
                del data[at : at + rng.randint(1, 40)]
            else:
                del data[at:]
        data = bytes(data)
        want, problems, tail, resume = reference(data[HEAD:], HEAD)
        for few in (0, 10**9):  # blocks walked side by side, or one at a time
            monkeypatch.setattr(leveldb_log, "_FEW_BLOCKS", few)
            frames = frame(data[HEAD:], HEAD, FILE)
            assert payloads(frames) == want
            assert [p.reason for p in frames.problems] == problems
            assert [p.reason for p in frames.tail] == tail
            assert frames.resume == resume


# ---------------------------------------------------------------- reading a log file


def test_the_header_hook_and_a_log_shorter_than_the_last_read(tmp_path: Path):
    data, starts = write(records_of(50, seed=10))
    log = tmp_path / "run-x.log"
    log.write_bytes(b"NOPE" + data[4:])
    refuse = Scan(0, FILE, HEAD, lambda head: "" if head.startswith(b"HHHH"[: len(head)]) else "not ours")
    with LogFile(log) as opened:
        assert list(refuse.batches(opened)) == []
    assert refuse.refused == "not ours" and refuse.offset == 0
    log.write_bytes(data[:5])  # a header not all written yet: nothing read, nothing said
    waiting = Scan(0, FILE, HEAD, lambda head: "")
    with LogFile(log) as opened:
        assert list(waiting.batches(opened)) == [] and waiting.offset == 0 and not waiting.refused
    log.write_bytes(data)
    fine = Scan(0, FILE, HEAD, lambda head: "")
    with LogFile(log) as opened:
        got = [record for frames in fine.batches(opened) for record in frames.payloads()]
    assert [s for s, _ in got] == starts and fine.offset == len(data)
    shorter = Scan(len(data) + 10, FILE)
    assert list(shorter.batches(data)) == [] and "shorter" in shorter.tail[0].reason


def test_only_regular_files_are_opened(tmp_path: Path):
    (tmp_path / "dir.log").mkdir()
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    for path in (tmp_path / "dir.log", fifo):
        with pytest.raises(OSError, match="not a regular file"):
            LogFile(path)
    with pytest.raises(OSError):
        LogFile(tmp_path / "missing.log")
    (tmp_path / "empty.log").write_bytes(b"")
    with LogFile(tmp_path / "empty.log") as empty:
        assert empty.size == 0 and list(Scan(0, FILE).batches(empty)) == []


# ---------------------------------------------------------------- the wire-format helpers


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def test_varints_of_every_length_at_once():
    values = [0, 1, 127, 128, 300, 2**21 - 1, 2**21, 2**35 + 5, 2**56 - 1, 2**56, 2**63, 2**64 - 1]
    values = [v for v in values for _ in range(3)] + [-1 & (2**64 - 1), -4 & (2**64 - 1)]
    raw = b"".join(varint(v) for v in values)
    places = np.cumsum([0] + [len(varint(v)) for v in values[:-1]])
    got, size = varints(np.frombuffer(raw, np.uint8), places)
    assert [int(v) for v in got] == values and size.tolist() == [len(varint(v)) for v in values]
    _, size = varints(np.frombuffer(b"\x80" * 12, np.uint8), np.array([0]))
    assert size.tolist() == [11]  # longer than a varint can be


def test_walk_reads_fields_in_any_order_and_flags_what_does_not_parse():
    def field(number: int, wire: int, value: int | bytes) -> bytes:
        tag = varint(number << 3 | wire)
        if wire == 0:
            return tag + varint(value)
        if wire == 1:
            return tag + struct.pack("<d", value)
        return tag + varint(len(value)) + value

    layout = ((1, 2), (2, 0), (3, 1))
    messages = [field(1, 2, b"key") + field(2, 0, 2**40) + field(3, 1, 1.5),  # in the layout
                field(3, 1, 2.5) + field(1, 2, b"k") + field(2, 0, 7),  # another order
                field(2, 0, 9) + field(9, 2, b"other") + field(2, 0, 10),  # an unknown field, a repeat
                b"\x0a\x7fabc"]  # fmt: skip  # a length past its end
    blob = b"".join(messages)
    ends = np.cumsum([len(m) for m in messages])
    buf = np.frombuffer(blob, np.uint8)
    fields = walk(buf, ends - [len(m) for m in messages], ends, layout)
    assert fields.ok.tolist() == [True, True, True, False]
    assert fields.value[2].tolist()[:3] == [2**40, 7, 10]
    keys = slices(blob, fields.value[1][:2], fields.value[1][:2] + fields.length[1][:2])
    assert keys.to_pylist() == [b"key", b"k"] and fields.value[1][2] == -1
    at = fields.value[3][:2]
    assert [struct.unpack_from("<d", blob, a)[0] for a in at] == [1.5, 2.5]
    assert message_fields(messages[2]) == {2: [9, 10], 9: [b"other"]}
    with pytest.raises(ValueError):
        message_fields(messages[3])


def test_slices_out_of_order_come_back_in_the_order_asked():
    blob = b"abcdefghij"
    got = slices(blob, np.array([6, 0, 3]), np.array([8, 2, 4]))
    assert got.to_pylist() == [b"gh", b"ab", b"d"]
