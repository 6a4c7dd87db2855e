"""A cache folder that cannot be written: read-only, not ours, or full. The run still opens, the report
says what happened and names the folder, and nothing half-written is left behind."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rl_board.rollouts.cache import segments
from rl_board.rollouts.cache import sync as cache
from rl_board.rollouts.store import RolloutStore
from tests.unit.test_cache import make_run
from tests.unit.test_hostile import as_unprivileged

OPEN = (
    "import json, sys; from rl_board.rollouts.store import RolloutStore; "
    "s = RolloutStore.open(sys.argv[1], cache_dir=sys.argv[2]); "
    "print(json.dumps({'samples': s.num_samples, 'notice': s.report.notice, 'cached': s.report.from_cache}))"
)


def open_unprivileged(run: Path, cache_dir: Path) -> dict:
    out = subprocess.run(
        as_unprivileged([sys.executable, "-c", OPEN, str(run), str(cache_dir)]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def read_only(path: Path) -> None:
    for folder, dirs, files in os.walk(path):
        for name in [*dirs, *files, "."]:
            p = Path(folder) / name
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def test_a_warm_cache_on_a_read_only_disk_is_used_as_it_is(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(40))
    RolloutStore.open(run, cache_dir=cache_dir)
    read_only(cache_dir)
    got = open_unprivileged(run, cache_dir)
    assert got["samples"] == 40 and got["cached"]
    assert str(cache_dir) in got["notice"] and "read-only" in got["notice"]


def test_a_cold_cache_that_cannot_be_written_reads_into_memory(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(40))
    read_only(cache_dir)
    got = open_unprivileged(run, cache_dir)
    assert got["samples"] == 40 and str(cache_dir) in got["notice"] and "into memory" in got["notice"]
    assert str(run) not in got["notice"]  # the cache folder is blamed, not the run


def test_a_full_disk_leaves_nothing_behind_and_the_run_still_opens(
    tmp_path: Path, cache_dir: Path, monkeypatch
) -> None:
    run = make_run(tmp_path, range(40))
    real_write = segments.write_segment

    def full_disk(directory: Path, table):
        if str(directory).startswith(str(cache_dir)):
            (directory / "seg-partial.arrow.tmp").write_bytes(b"half")
            (directory / "seg-partial.arrow.tmp").unlink()
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(directory, table)

    monkeypatch.setattr("rl_board.rollouts.read.ingest.write_segment", full_disk)
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert (
        store.num_samples == 40
        and "No space left" in store.report.notice
        and str(cache_dir) in store.report.notice
    )
    leftovers = [p.name for p in cache_dir.rglob("*") if p.suffix == ".tmp" or p.name.startswith("seg-")]
    assert leftovers == []
    monkeypatch.setattr("rl_board.rollouts.read.ingest.write_segment", real_write)  # space is back
    again = RolloutStore.open(run, cache_dir=cache_dir)
    assert again.num_samples == 40 and again.report.notice == ""


def test_write_segment_removes_its_partial_file(tmp_path: Path, monkeypatch) -> None:
    """A full disk through the page cache (a small segment) leaves nothing behind."""
    import pyarrow as pa

    def full(fd, data, offset):  # the file is made, then nothing more fits
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(segments.os, "pwrite", full)
    with pytest.raises(OSError):
        segments.write_segment(tmp_path, pa.table({"_line": [1]}))
    assert list(tmp_path.iterdir()) == []


def test_write_segment_removes_its_partial_file_written_direct(tmp_path: Path, monkeypatch) -> None:
    """A full disk half way through a segment written past the page cache leaves nothing behind."""
    import numpy as np
    import pyarrow as pa

    calls = []
    pwrite = os.pwrite

    def fills_up(fd, data, offset):
        calls.append(offset)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return pwrite(fd, data, offset)

    if not hasattr(os, "O_DIRECT"):
        pytest.skip("no O_DIRECT on this platform")  # Linux has it: the CI machine runs this test
    monkeypatch.setattr(segments, "_direct_off", set())
    monkeypatch.setattr(segments.os, "pwrite", fills_up)
    table = pa.table({"logprobs": pa.array([np.zeros(50_000)] * 8), "_line": list(range(8))})
    with pytest.raises(OSError):
        segments.write_segment(tmp_path, table)
    assert len(calls) == 2
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_under_a_big_segment_is_a_disk_error(tmp_path: Path, monkeypatch) -> None:
    """A segment bigger than the kept buffer (a compaction's, a Parquet file's) is written from a buffer of
    its own; a full disk there must reach the load as the OSError it is (which sends the cache to memory),
    not as an error about the buffer, whose views the traceback still holds."""
    import numpy as np
    import pyarrow as pa

    from rl_board import config

    monkeypatch.setenv("RL_BOARD_WRITE_BUFFER_BYTES", "4096")
    config.reset()

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(segments.os, "pwrite", full)
    monkeypatch.setattr(segments, "_direct_off", set())
    table = pa.table({"logprobs": pa.array([np.zeros(50_000)] * 8), "_line": list(range(8))})
    try:
        for _ in range(2):  # the second while the first one's traceback is still about
            with pytest.raises(OSError) as caught:
                segments.write_segment(tmp_path, table)
            assert caught.value.errno == errno.ENOSPC
        assert list(tmp_path.iterdir()) == []
    finally:
        monkeypatch.undo()
        config.reset()


def test_memory_cache_root_is_writable() -> None:
    root = cache.memory_cache_root()
    assert root is not None and os.access(root, os.W_OK)


def test_summary_says_when_the_cache_could_not_be_written(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(10))
    read_only(cache_dir)
    cmd = as_unprivileged(
        [sys.executable, "-m", "rl_board", "summary", str(run), "--json", "--cache-dir", str(cache_dir)]
    )
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["samples"] == 10 and str(cache_dir) in data["notice"]
    assert out.stderr.startswith("rl-board: note: the cache folder") and out.stderr.count("\n") == 1
