"""Segments written past the page cache: the same bytes, the same mode, whatever the file system takes."""

from __future__ import annotations

import errno
import os
import zlib
from pathlib import Path

import google_crc32c
import numpy as np
import pyarrow as pa
import pytest

from rl_board import config
from rl_board.rollouts.cache import segments


def _table(rows: int = 64, tokens: int = 2_000) -> pa.Table:
    rng = np.random.default_rng(0)
    return pa.table(
        {
            "step": pa.array(np.arange(rows)),
            "reward": pa.array(rng.normal(size=rows)),
            "logprobs": pa.array([rng.normal(size=tokens) for _ in range(rows)]),
            "response_tokens": pa.array([[f"t{i}" for i in range(tokens)] for _ in range(rows)]),
            "_line": pa.array(np.arange(rows) + 1),
        }
    )


def _ipc_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=table.num_rows)
    return sink.getvalue().to_pybytes()


def test_a_segment_reads_back_byte_for_byte(tmp_path: Path, direct_state) -> None:
    table = _table()
    record = segments.write_segment(tmp_path, table)
    path = tmp_path / record["name"]
    data = path.read_bytes()
    assert data == _ipc_bytes(table)
    assert record["bytes"] == len(data) == path.stat().st_size
    assert record["crc"] == google_crc32c.value(data)
    assert record["mtime_ns"] == path.stat().st_mtime_ns
    assert pa.ipc.open_file(pa.memory_map(str(path))).read_all().equals(table)
    assert not list(tmp_path.glob("*.tmp"))


def test_only_whole_pages_of_big_buffers_go_past_the_page_cache(tmp_path: Path, direct_state) -> None:
    if not direct_state["has"]:
        pytest.skip("no O_DIRECT on this platform")  # Linux has it: the CI machine runs this test
    table = _table()
    size = segments._ipc_size(table)
    scratch = segments._scratch(segments._aligned(size))
    segments._serialise(table, scratch)
    spans = segments._bulk_spans(scratch, size)
    data = _ipc_bytes(table)
    assert spans, "the per-token arrays are big enough to go direct"
    big = config.sizes().direct_write_min_bytes
    assert all(lo % 4096 == 0 and hi % 4096 == 0 and hi - lo >= big for lo, hi in spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))  # in order, not overlapping
    # the schema at the start and the footer at the end stay in the page cache: opening reads them
    assert spans[0][0] > 0 and spans[-1][1] < len(data)
    small = sum(hi - lo for lo, hi in spans)
    assert small > 0.8 * len(data)  # what a run's open never reads is most of a token-level segment


def test_a_file_system_that_refuses_o_direct_gets_the_page_cache(
    tmp_path: Path, direct_state, monkeypatch
) -> None:
    if not direct_state["has"]:
        pytest.skip("no O_DIRECT on this platform")
    opened = os.open
    refused = []

    def refusing(path, flags, *args):
        if flags & os.O_DIRECT:  # as some network file systems and older tmpfs do
            refused.append(path)
            raise OSError(errno.EINVAL, "Invalid argument")
        return opened(path, flags, *args)

    monkeypatch.setattr(os, "open", refusing)
    table = _table()
    record = segments.write_segment(tmp_path, table)
    assert refused and direct_state["device"] in direct_state["off"]  # refused once: no more asking here
    assert (tmp_path / record["name"]).read_bytes() == _ipc_bytes(table)
    again = segments.write_segment(tmp_path, table)
    assert len(refused) == 1
    assert (tmp_path / again["name"]).read_bytes() == _ipc_bytes(table)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([record["name"], again["name"]])


def test_a_slow_disk_turns_direct_writes_off(tmp_path: Path, direct_state, monkeypatch) -> None:
    if not direct_state["has"]:
        pytest.skip("no O_DIRECT on this platform")
    monkeypatch.setattr(segments, "_MIN_DIRECT_BYTES_PER_S", float("inf"))
    table = _table(rows=96)
    records = []
    for _ in range(segments._SLOW_WRITES):
        assert direct_state["device"] not in direct_state["off"]  # one slow write may be a busy moment
        records.append(segments.write_segment(tmp_path, table))
    assert direct_state["device"] in direct_state["off"]  # three in a row: a slow disk
    records.append(segments.write_segment(tmp_path, table))
    for record in records:
        assert (tmp_path / record["name"]).read_bytes() == _ipc_bytes(table)


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_a_segment_is_0600_whatever_the_umask(tmp_path: Path, direct_state, umask: int) -> None:
    old = os.umask(umask)
    try:
        record = segments.write_segment(tmp_path, _table(rows=8))
    finally:
        os.umask(old)
    assert (tmp_path / record["name"]).stat().st_mode & 0o777 == 0o600


def test_a_segment_bigger_than_the_kept_buffer_is_written_from_its_own(
    tmp_path: Path, direct_state, monkeypatch
) -> None:
    monkeypatch.setenv("RL_BOARD_WRITE_BUFFER_BYTES", "4096")
    config.reset()
    monkeypatch.setattr(segments._local, "scratch", None, raising=False)
    table = _table(rows=16)
    record = segments.write_segment(tmp_path, table)
    assert (tmp_path / record["name"]).read_bytes() == _ipc_bytes(table)
    assert segments._local.scratch is None  # the one-off buffer was let go, not kept
    monkeypatch.delenv("RL_BOARD_WRITE_BUFFER_BYTES")
    config.reset()


def test_the_checksum_is_crc32c_and_zlib_stands_in_without_its_c_code(monkeypatch) -> None:
    """Segments are summed with CRC-32C (~3x zlib's CRC-32 here); where google-crc32c would sum in pure
    Python (minutes a GB), zlib's CRC-32 stands in. Summing in parts gives the sum of the whole."""
    data = bytes(range(256)) * 5000
    view = memoryview(bytearray(data))  # a writable buffer, as the write buffer's map is
    assert segments.checksum(view) == google_crc32c.value(data) != zlib.crc32(data)
    assert segments.checksum(data[1000:], segments.checksum(data[:1000])) == google_crc32c.value(data)
    monkeypatch.setattr(google_crc32c, "implementation", "python")
    assert segments.checksum(view) == zlib.crc32(data)
