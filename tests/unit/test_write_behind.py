"""Segments written behind: the caller goes on while a thread writes the file, and nothing is handed on,
or left running, before the file is whole."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import google_crc32c
import pyarrow as pa
import pytest

from rl_board.rollouts.cache import segments
from rl_board.rollouts.read import forked
from tests.helpers.fresh_process import run_in_a_fresh_process
from tests.unit.test_segment_writes import _ipc_bytes, _table

LINUX = sys.platform.startswith("linux")
needs_direct = pytest.mark.skipif(
    not segments._HAS_DIRECT, reason="only segments written past the page cache"
)
needs_fork = pytest.mark.skipif(not LINUX, reason="forked helpers are Linux-only")


def _writers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if isinstance(t, segments._Behind)]


def _slowed(seconds: float) -> Callable[..., os.stat_result]:
    """``segments._write_file`` taking ``seconds`` longer: still writing when the next step comes."""
    real = segments._write_file

    def slow(*args):
        time.sleep(seconds)
        return real(*args)

    return slow


def _held_writes(monkeypatch, gate: threading.Event) -> list[Path]:
    """Every segment file's writing waits for ``gate`` (at most 5 s); returns the files asked for."""
    asked: list[Path] = []
    real = segments._write_file

    def held(path, *args):
        asked.append(path)
        gate.wait(5)
        return real(path, *args)

    monkeypatch.setattr(segments, "_write_file", held)
    return asked


@needs_direct
def test_a_segment_written_behind_is_whole_once_settled(tmp_path: Path, direct_state, monkeypatch) -> None:
    gate = threading.Event()
    asked = _held_writes(monkeypatch, gate)
    table = _table()
    with segments.writing_behind():
        record = segments.write_segment(tmp_path, table)
    path = tmp_path / record["name"]
    assert not path.exists()  # returned while its file is still being written
    gate.set()
    segments.settle(record)
    data = path.read_bytes()
    assert asked == [tmp_path / (record["name"] + ".tmp")]
    assert data == _ipc_bytes(table) and record["crc"] == google_crc32c.value(data)
    assert record["bytes"] == len(data) and record["mtime_ns"] == path.stat().st_mtime_ns  # the file's own
    assert not list(tmp_path.glob("*.tmp"))


def test_outside_writing_behind_a_segment_is_whole_when_written(tmp_path: Path, direct_state) -> None:
    record = segments.write_segment(tmp_path, _table())
    assert (tmp_path / record["name"]).stat().st_mtime_ns == record["mtime_ns"]
    assert not _writers()
    segments.settle(record)  # nothing to wait for


def test_a_small_segment_is_written_in_place_even_behind(tmp_path: Path, direct_state) -> None:
    """Nothing of it goes past the page cache: writing it takes less than starting a thread."""
    with segments.writing_behind():
        record = segments.write_segment(tmp_path, pa.table({"_line": [1, 2]}))
        assert not _writers()
    assert (tmp_path / record["name"]).stat().st_mtime_ns == record["mtime_ns"]


@needs_direct
def test_the_next_segment_waits_for_the_buffer_the_last_one_is_written_from(
    tmp_path: Path, direct_state, monkeypatch
) -> None:
    """Both are made in one buffer: were the second made while the first is still being written, the first
    file would hold the second's bytes."""
    monkeypatch.setattr(segments, "_write_file", _slowed(0.3))  # the next one is asked for meanwhile
    tables = [_table(rows=64), _table(rows=32, tokens=3_000)]
    with segments.writing_behind():
        records = [segments.write_segment(tmp_path, table) for table in tables]
    for record, table in zip(records, tables, strict=True):
        segments.settle(record)
        data = (tmp_path / record["name"]).read_bytes()
        assert data == _ipc_bytes(table) and google_crc32c.value(data) == record["crc"]


@needs_direct
def test_a_full_disk_behind_raises_when_settled_and_leaves_nothing(
    tmp_path: Path, direct_state, monkeypatch
) -> None:
    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(segments.os, "pwrite", full)
    with segments.writing_behind():
        record = segments.write_segment(tmp_path, _table())  # does not raise here
    with pytest.raises(OSError) as caught:
        segments.settle(record)
    assert caught.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []
    segments.settle(record)  # settled once: the error is not raised again


def test_writing_behind_ends_with_its_block() -> None:
    with segments.writing_behind():
        with segments.writing_behind():
            pass
        assert segments._local.started is not None
    assert segments._local.started is None


@needs_direct
def test_a_block_left_by_an_error_waits_for_the_writes_it_began(
    tmp_path: Path, direct_state, monkeypatch
) -> None:
    monkeypatch.setattr(segments, "_write_file", _slowed(0.3))
    with pytest.raises(ValueError, match="a later step failed"), segments.writing_behind():
        segments.write_segment(tmp_path, _table())
        raise ValueError("a later step failed")
    assert not _writers() and not segments._pending  # nothing left writing, nothing left to settle
    assert len(list(tmp_path.glob("seg-*.arrow"))) == 1  # its file whole, for the next sync to collect


@needs_direct
def test_a_disk_slower_than_the_next_job_turns_writing_past_the_page_cache_off(
    tmp_path: Path, direct_state, monkeypatch
) -> None:
    """Timed by how long the next segment waits for the last one: the writer's own clock would count the
    GIL it waits for between its writes."""
    monkeypatch.setattr(segments, "_write_file", _slowed(0.4))  # ~1 MB at a few MB/s
    with segments.writing_behind():
        records = [segments.write_segment(tmp_path, _table()) for _ in range(segments._SLOW_WRITES + 1)]
    for record in records:
        segments.settle(record)
    assert direct_state["device"] in direct_state["off"]


# ---------------------------------------------------------------- forked.run's settle


def _in_a_fresh_process(name: str) -> None:
    run_in_a_fresh_process("tests.unit.test_write_behind", name)


def _events(log: Path) -> list[tuple[str, int, int]]:
    return [(w, int(i), int(pid)) for w, i, pid in (line.split() for line in log.read_text().splitlines())]


def _logged_jobs(log: Path):
    """A job that notes it was made, a settle that notes it was settled (each with the process)."""

    def note(what: str, i: int) -> None:
        with open(log, "a") as f:
            f.write(f"{what} {i} {os.getpid()}\n")

    def local(i: int) -> int:
        time.sleep(0.005)
        note("made", i)
        return i

    def settle(i: int) -> None:
        note("settled", i)

    return local, settle


def _handed_on_settled_after_the_next_was_made(helpers: int) -> None:
    log = Path(tempfile.mkdtemp(prefix="rlb-behind-")) / "log"
    try:
        local, settle = _logged_jobs(log)
        got = []
        for i in forked.run(30, helpers, local, str, int, settle=settle):
            assert ("settled", i) in {(w, j) for w, j, _ in _events(log)}  # settled before it came here
            got.append(i)
        assert got == list(range(30))
        events = _events(log)
        assert sorted(i for w, i, _ in events if w == "settled") == list(range(30))
        pids = {pid for _, _, pid in events}
        assert len(pids) == helpers + 1  # every process did jobs
        for pid in pids:  # each process made its next job before it settled the one before
            mine = [(w, i) for w, i, p in events if p == pid]
            made = [i for w, i in mine if w == "made"]
            for before, after in zip(made, made[1:], strict=False):
                assert mine.index(("made", after)) < mine.index(("settled", before))
    finally:
        shutil.rmtree(log.parent, ignore_errors=True)


def test_one_process_hands_each_result_on_settled_after_making_the_next() -> None:
    _handed_on_settled_after_the_next_was_made(0)


@needs_fork
def test_helpers_answer_each_result_settled_after_making_the_next() -> None:
    _in_a_fresh_process("helpers_answer_settled")


def helpers_answer_settled() -> None:
    assert forked.usable()
    _handed_on_settled_after_the_next_was_made(1)


def test_a_run_left_early_settles_what_it_held(tmp_path: Path) -> None:
    log = tmp_path / "log"
    local, settle = _logged_jobs(log)
    run = forked.run(10, 0, local, str, int, settle=settle)
    assert next(run) == 0
    run.close()
    events = _events(log)
    assert [i for w, i, _ in events if w == "made"] == [0, 1]
    assert [i for w, i, _ in events if w == "settled"] == [0, 1]  # the one held is waited for too


# ---------------------------------------------------------------- a load


@needs_fork
@needs_direct
def test_a_forked_load_records_each_segment_as_written() -> None:
    _in_a_fresh_process("forked_load_records_segments_as_written")


def forked_load_records_segments_as_written() -> None:
    from rl_board.rollouts.store import RolloutStore
    from tests.unit.test_forked import _set_sizes, _write_run

    tmp_path = Path(tempfile.mkdtemp(prefix="rlb-behind-"))
    try:
        _write_run(tmp_path / "run")
        forks = []
        real_fork = forked._fork
        forked._fork = lambda: forks.append(1) or real_fork()  # type: ignore[assignment]
        behind = []
        real_start = segments._Behind.start
        segments._Behind.start = lambda self: behind.append(1) or real_start(self)  # type: ignore[method-assign]
        segments._write_file = _slowed(0.02)  # still writing when a result would be handed on unsettled
        _set_sizes(block_bytes=65536, direct_write_min_bytes=4096, fork_min_bytes=1, pool_min_bytes=1 << 40)
        store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
        assert forks and behind and store.num_samples > 0  # this process's own segments written behind
        assert threading.active_count() == 1  # no write of the load outlives it
        (manifest,) = (tmp_path / "cache").rglob("manifest.json")
        files = json.loads(manifest.read_text())["files"]
        written = [seg for entry in files for seg in entry["segments"]]
        assert len(written) > 4
        for seg in written:  # the file's size, CRC and mtime, as after its writing ended
            path = manifest.parent / seg["name"]
            assert seg["bytes"] == path.stat().st_size and seg["mtime_ns"] == path.stat().st_mtime_ns
            assert seg["crc"] == google_crc32c.value(path.read_bytes())
        assert not list(manifest.parent.glob("*.tmp"))
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


@needs_fork
def test_a_helper_whose_write_fails_has_its_jobs_done_here() -> None:
    _in_a_fresh_process("helper_whose_settle_fails")


def helper_whose_settle_fails() -> None:
    assert forked.usable()
    parent = os.getpid()

    def settle(result: tuple[int, int]) -> None:
        if os.getpid() != parent and result[0] % 4 == 1:
            raise OSError(errno.EIO, "the helper's disk failed")

    def local(i: int) -> tuple[int, int]:
        time.sleep(0.005)
        return i, os.getpid()

    out = list(forked.run(40, 1, local, json.dumps, lambda line: tuple(json.loads(line)), settle=settle))
    assert [i for i, _ in out] == list(range(40))


@needs_direct
def test_a_full_disk_behind_a_load_sends_the_cache_to_memory(tmp_path: Path, monkeypatch) -> None:
    """The error reaches the load when its segment is settled, and the load reads into memory as it did
    when segments were written in place (tests/unit/test_cache_faults.py)."""
    from rl_board import config
    from rl_board.rollouts.store import RolloutStore
    from tests.unit.test_forked import _write_run

    _write_run(tmp_path / "run")
    cache_dir = tmp_path / "cache"
    real = segments._write_file
    behind = []

    def full(path, *args):
        if str(path).startswith(str(cache_dir)):
            behind.append(isinstance(threading.current_thread(), segments._Behind))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, *args)

    monkeypatch.setattr(segments, "_write_file", full)
    monkeypatch.setattr(segments, "_direct_off", set())
    monkeypatch.setenv("RL_BOARD_DIRECT_WRITE_MIN_BYTES", "4096")
    monkeypatch.setenv("RL_BOARD_BLOCK_BYTES", "65536")
    config.reset()
    try:
        store = RolloutStore.open(tmp_path / "run", cache_dir=cache_dir)
    finally:
        monkeypatch.undo()
        config.reset()
    assert any(behind)  # it was written behind when it failed
    assert store.num_samples > 0 and "No space left" in store.report.notice
    assert not [p for p in cache_dir.rglob("*") if p.suffix == ".tmp" or p.name.startswith("seg-")]
    assert not _writers()


def test_a_full_disk_under_the_held_job_is_raised_before_the_next_jobs_error() -> None:
    """Written in place, the held job's segment failed before the next job ran: its error comes first."""

    def local(i: int) -> int:
        if i == 1:
            raise ValueError("job 1")
        return i

    def settle(i: int) -> None:
        raise OSError(errno.ENOSPC, f"No space left under job {i}")

    with pytest.raises(OSError, match="under job 0") as caught:
        list(forked.run(3, 0, local, str, int, settle=settle))
    assert isinstance(caught.value.__context__, ValueError)  # the next job's error is kept beside it


@needs_direct
def test_every_segment_of_a_job_is_settled_though_one_failed(
    tmp_path: Path, direct_state, monkeypatch
) -> None:
    from rl_board.rollouts.read import ingest

    real = segments._write_file
    calls = []

    def first_fails(path, *args):
        calls.append(path)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        time.sleep(0.2)
        return real(path, *args)

    monkeypatch.setattr(segments, "_write_file", first_fails)
    results = []
    with segments.writing_behind():
        for _ in range(2):
            results.append(ingest.BlockResult(segment=segments.write_segment(tmp_path, _table())))
    with pytest.raises(OSError, match="No space"):
        ingest._segments_settled(results)
    assert not _writers() and not segments._pending


@needs_direct
def test_without_a_thread_to_be_had_segments_are_written_in_place(
    tmp_path: Path, direct_state, monkeypatch
) -> None:
    """A limit on threads: each segment is written as it was before, and the next one still can be."""

    def refused(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(segments._Behind, "start", refused)
    with segments.writing_behind():
        records = [segments.write_segment(tmp_path, _table()) for _ in range(2)]
        for record in records:  # whole before anything is settled
            assert (tmp_path / record["name"]).stat().st_mtime_ns == record["mtime_ns"]
    assert not segments._pending
