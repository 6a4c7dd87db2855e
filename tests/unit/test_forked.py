"""Loads shared with forked helpers read exactly what one process reads, and leave no process behind."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from rl_board import config
from rl_board.rollouts.read import forked, pool
from rl_board.rollouts.store import RolloutStore
from tests.helpers.fresh_process import run_in_a_fresh_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked helpers are Linux-only")


def _in_a_fresh_process(name: str) -> None:
    run_in_a_fresh_process("tests.unit.test_forked", name)


def _set_sizes(**values: int) -> None:
    for name, value in values.items():
        os.environ[f"RL_BOARD_{name.upper()}"] = str(value)
    config.reset()


def _write_run(run: Path, n: int = 600) -> None:
    run.mkdir(parents=True, exist_ok=True)
    for rank in range(3):
        lines = []
        for i in range(rank, n, 3):
            if i % 97 == 5:
                lines.append("not json")
            elif i % 89 == 7:
                lines.append(json.dumps({"step": i // 30, "prompt": "p", "reward": 1.0, "logprobs": ["x"]}))
            else:
                record = {
                    "step": i // 30,
                    "prompt": f"p{i}",
                    "response": "loop " * (i % 40),
                    "reward": i / 7,
                    "logprobs": [-0.5 - i / 1000] * 40,
                    "ref_logprobs": [-0.25] * 40,
                    "response_tokens": ["a"] * 40,
                    "extra": i,
                }
                lines.append(json.dumps(record))
        (run / f"rank_{rank}.jsonl").write_text("\n".join(lines) + "\n")


def _read(store: RolloutStore) -> tuple:
    report = store.report
    return (
        store.samples(columns=None).to_json(),
        [(b.file, b.line, b.reason) for b in report.bad_lines],
        [(f.name, f.lines, f.samples, f.bad) for f in report.files],
        store.step_summary().to_json(),
    )


def test_a_forked_load_reads_what_one_process_reads() -> None:
    _in_a_fresh_process("forked_load_reads_what_one_process_reads")


def forked_load_reads_what_one_process_reads() -> None:
    tmp_path = Path(tempfile.mkdtemp(prefix="rlb-forked-"))
    try:
        _forked_load_reads_what_one_process_reads(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)  # a folder of its own (a fresh process has no tmp_path)


def _forked_load_reads_what_one_process_reads(tmp_path: Path) -> None:
    _write_run(tmp_path / "run")
    forks = []
    real_fork = forked._fork
    forked._fork = lambda: forks.append(1) or real_fork()  # type: ignore[assignment]
    assert forked.usable()
    _set_sizes(block_bytes=8192, fork_min_bytes=1 << 40, pool_min_bytes=1 << 40)
    alone = _read(RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "alone"))
    assert not forks
    _set_sizes(block_bytes=8192, fork_min_bytes=1, pool_min_bytes=1 << 40)
    shared = _read(RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "shared"))
    assert shared == alone
    assert forks  # helpers were forked
    assert pool.running() is None  # no interpreter was started for it


def _job(i: int) -> tuple[int, int]:
    time.sleep(0.002)
    return i, os.getpid()


def _encode(result: tuple[int, int]) -> str:
    return json.dumps(result)


def _decode(line: str) -> tuple[int, int]:
    i, pid = json.loads(line)
    return i, pid


def test_results_come_back_in_job_order_from_every_process() -> None:
    _in_a_fresh_process("results_come_back_in_job_order_from_every_process")


def results_come_back_in_job_order_from_every_process() -> None:
    assert forked.usable()
    out = list(forked.run(60, 1, _job, _encode, _decode, order=list(reversed(range(60)))))
    assert [i for i, _ in out] == list(range(60))
    assert len({pid for _, pid in out}) == 2  # this process and one helper both did jobs


def test_jobs_of_a_helper_that_dies_are_done_here() -> None:
    _in_a_fresh_process("jobs_of_a_helper_that_dies_are_done_here")


def jobs_of_a_helper_that_dies_are_done_here() -> None:
    assert forked.usable()
    parent = os.getpid()

    def local(i: int) -> tuple[int, int]:
        if os.getpid() != parent and i % 5 == 0:
            os._exit(3)  # a helper killed mid-job: its answer never comes
        return _job(i)

    out = list(forked.run(40, 2, local, _encode, _decode))
    assert [i for i, _ in out] == list(range(40))


def test_an_error_in_a_helper_raises_here_as_it_would_alone() -> None:
    _in_a_fresh_process("an_error_in_a_helper_raises_here_as_it_would_alone")


def an_error_in_a_helper_raises_here_as_it_would_alone() -> None:
    assert forked.usable()

    def local(i: int) -> tuple[int, int]:
        if i == 7:
            raise ValueError("job 7")
        return _job(i)

    with pytest.raises(ValueError, match="job 7"):
        list(forked.run(20, 1, local, _encode, _decode))


def test_no_helper_outlives_a_load_left_early() -> None:
    _in_a_fresh_process("no_helper_outlives_a_load_left_early")


def no_helper_outlives_a_load_left_early() -> None:
    assert forked.usable()
    pids: set[int] = set()
    run = forked.run(50, 2, _job, _encode, _decode)
    for _, pid in run:
        pids.add(pid)
        if len(pids) > 1:
            break
    run.close()
    for pid in pids - {os.getpid()}:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # already reaped: no zombie, no orphan


def test_a_process_with_threads_does_not_fork() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not forked.usable()
        out = list(forked.run(10, 1, _job, _encode, _decode))
        assert {pid for _, pid in out} == {os.getpid()}
    finally:
        stop.set()
        thread.join()
