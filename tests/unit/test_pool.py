"""The worker pool is started once per process, kept warm, and never outlives its parent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rl_board.rollouts.read import pool
from rl_board.rollouts.store import RolloutStore

REPO = Path(__file__).resolve().parents[2]


def _write_run(run: Path, n: int = 400, bad_every: int = 97) -> None:
    run.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n):
        if i % bad_every == 5:
            lines.append("not json")
        else:
            lines.append(
                json.dumps(
                    {
                        "step": i // 20,
                        "prompt": f"p{i}",
                        "response": "r" * (i % 13),
                        "reward": i / 7,
                        "logprobs": [-0.5 - i / 1000] * 40,
                        "ref_logprobs": [-0.25] * 40,
                        "response_tokens": ["a"] * 40,
                    }
                )
            )
    for rank in range(2):
        (run / f"r{rank}.jsonl").write_text("\n".join(lines[rank::2]) + "\n")


@pytest.fixture
def pooled(set_sizes):
    """Every load uses the pool (small blocks, no size threshold); the pool is stopped after the test."""
    set_sizes(block_bytes=8192, pool_min_bytes=1)
    pool.shutdown()
    yield
    pool.shutdown()


def _gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether a process has exited (a zombie waiting for its reaper counts as exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/status").read_text()
        except (FileNotFoundError, ProcessLookupError):
            return True
        if "\nState:\tZ" in state:
            return True
        time.sleep(0.05)
    return False


def test_two_opens_reuse_the_same_workers(tmp_path: Path, pooled) -> None:
    _write_run(tmp_path / "a")
    _write_run(tmp_path / "b", n=300)
    RolloutStore.open(tmp_path / "a", cache_dir=tmp_path / "cache")
    first = pool.running()
    assert first is not None and len(first.pids) >= 2
    pids = first.pids
    store = RolloutStore.open(tmp_path / "b", cache_dir=tmp_path / "cache")
    assert pool.running() is first and first.pids == pids
    assert store.num_samples == 300 - len(range(5, 300, 97))
    with open(tmp_path / "b" / "r0.jsonl", "a") as f:  # a refresh uses it too
        f.write(
            "".join(
                json.dumps({"step": 99, "reward": 1.0, "logprobs": [0.0] * 500}) + "\n" for _ in range(40)
            )
        )
    assert store.refresh() and pool.running() is first and first.pids == pids
    pool.shutdown()
    assert pool.running() is None
    assert all(_gone(pid) for pid in pids)


def test_workers_set_numpy_up_as_commands_do(tmp_path: Path, pooled, monkeypatch) -> None:
    """A worker is a process rl-board starts: OpenBLAS's threads would spin ~0.1 s of CPU at its numpy
    import, beside the load it is there to speed up, and its arrays would be zeroed in huge pages."""
    for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS", "NUMPY_MADVISE_HUGEPAGE"):
        monkeypatch.delenv(name, raising=False)
    _write_run(tmp_path / "a")
    RolloutStore.open(tmp_path / "a", cache_dir=tmp_path / "cache")
    running = pool.running()
    assert running is not None and running.pids
    for pid in running.pids:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"OPENBLAS_NUM_THREADS=1" in environ  # (what they do to numpy: test_cli_startup)
        assert b"NUMPY_MADVISE_HUGEPAGE=0" in environ
    assert "OPENBLAS_NUM_THREADS" not in os.environ  # this process (a notebook's, say) is left as it was
    assert "NUMPY_MADVISE_HUGEPAGE" not in os.environ


def test_pool_and_in_process_give_identical_runs(tmp_path: Path, set_sizes) -> None:
    _write_run(tmp_path / "run", n=600, bad_every=41)
    frames, reports = [], []
    for use_pool in (False, True):
        pool.shutdown()
        set_sizes(block_bytes=8192, pool_min_bytes=1 if use_pool else 1 << 40)
        store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / f"cache-{use_pool}")
        assert (pool.running() is not None) == use_pool
        frames.append(store.samples(columns=[c for c in store.fields if c != "file"] + ["line"]))
        reports.append([(b.file, b.line, b.reason) for b in store.report.bad_lines])
        sample = store.sample(step=store.steps[3], index=2)
        frames.append(sample.tokens)
    pool.shutdown()
    assert frames[0].equals(frames[2]) and frames[1].equals(frames[3])
    assert reports[0] == reports[1] and reports[0]


def test_a_second_load_meanwhile_parses_in_its_own_thread(pooled) -> None:
    with pool.borrowed(2, start=True) as held:
        assert held is not None
        seen = []
        thread = threading.Thread(target=lambda: seen.append(pool.borrowed(2, start=True).__enter__()))
        thread.start()
        thread.join()
        assert seen == [None]
    with pool.borrowed(2, start=True) as again:
        assert again is held


def test_a_killed_worker_costs_its_jobs_here_and_the_pool_is_replaced(tmp_path: Path, pooled) -> None:
    _write_run(tmp_path / "a")
    RolloutStore.open(tmp_path / "a", cache_dir=tmp_path / "c1")
    first = pool.running()
    os.kill(first.pids[0], signal.SIGKILL)
    assert _gone(first.pids[0])
    _write_run(tmp_path / "b")
    store = RolloutStore.open(tmp_path / "b", cache_dir=tmp_path / "c2")  # a dead worker: a new pool
    assert store.num_samples == 400 - len(range(5, 400, 97))
    assert pool.running() is not None and pool.running() is not first


def test_a_worker_that_dies_mid_load_is_covered(tmp_path: Path, monkeypatch, pooled) -> None:
    _write_run(tmp_path / "a", n=2000)
    held = pool.WorkerPool(2)
    assert held.wait_ready()  # else this process might parse every block while they start
    real_run = held.run

    def run_and_kill(requests, local, decode):
        for k, result in enumerate(real_run(requests, local, decode)):
            if k == 1:
                os.kill(held.pids[1], signal.SIGKILL)
            yield result

    monkeypatch.setattr(held, "run", run_and_kill)
    monkeypatch.setattr(pool, "_pool", held)
    store = RolloutStore.open(tmp_path / "a", cache_dir=tmp_path / "c")
    assert store.num_samples == 2000 - len(range(5, 2000, 97))
    assert [b.line for b in store.report.bad_lines if b.file == "r1.jsonl"] == [
        i // 2 + 1 for i in range(1, 2000, 2) if i % 97 == 5
    ]
    assert pool.running() is not held  # broken: closed, not reused
    assert all(_gone(pid) for pid in held.pids)


def test_idle_workers_exit_and_the_pool_starts_again(tmp_path: Path, pooled) -> None:
    held = pool.WorkerPool(2, idle_seconds=0.3)
    pids = held.pids
    assert all(_gone(pid) for pid in pids)
    for proc in held.procs:
        proc.wait()
    assert not held.healthy()
    pool._pool = held
    _write_run(tmp_path / "a")
    RolloutStore.open(tmp_path / "a", cache_dir=tmp_path / "c")
    assert pool.running() is not None and not set(pool.running().pids) & set(pids)


_CHILD = textwrap.dedent("""
    import os, sys, json
    # before the settings are read
    os.environ.update(RL_BOARD_BLOCK_BYTES="8192", RL_BOARD_POOL_MIN_BYTES="1")
    from rl_board.rollouts.read import pool
    from rl_board.rollouts.store import RolloutStore
    RolloutStore.open(sys.argv[1], cache_dir=sys.argv[2])
    print(json.dumps(pool.running().pids), flush=True)
    if sys.argv[3] == "kill":
        os.kill(os.getpid(), 9)
    if sys.argv[3] == "exit":
        os._exit(0)  # no atexit: the workers see their stdin close
""")


@pytest.mark.parametrize("how", ["return", "exit", "kill"])
def test_workers_end_with_their_parent(tmp_path: Path, how: str) -> None:
    _write_run(tmp_path / "a")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "a"), str(tmp_path / "c"), how],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    pids = json.loads(out.stdout.strip().splitlines()[0])
    assert len(pids) >= 2
    assert all(_gone(pid) for pid in pids), pids


def test_a_worker_whose_parent_is_gone_leaves() -> None:
    """The parent check (every second, in a thread, even mid-job): a worker started for another parent
    exits."""
    proc = subprocess.Popen([sys.executable, "-c", "import time, sys; time.sleep(60)"])
    try:
        worker = subprocess.Popen(
            [sys.executable, "-m", "rl_board.rollouts.read.worker", str(proc.pid), "60"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=REPO,
        )
        # Its stdin stays open, but the process it was started for is not its parent: it leaves at once.
        assert worker.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_load_read_record_by_record_starts_the_pool_sooner(tmp_path: Path, set_sizes) -> None:
    """A nested format (NeMo-RL here) is parsed in Python, ~8x the cost per byte of a table path: a load of
    it pays for the pool at an eighth of the size (the pool's threshold is in table-path bytes)."""
    from tests.helpers import trainer_dumps as T

    def size(name: str) -> int:
        return sum(f.stat().st_size for f in (tmp_path / name).rglob("*.jsonl"))

    dump = T.ALL_WRITERS["nemo_rl"](tmp_path / "nemo", steps=2, prompts=4, group=2)
    _write_run(tmp_path / "own", n=1200)
    _write_run(tmp_path / "own", n=int(1200 * 1.5 * size("nemo") / size("own")))  # 1.5x NeMo-RL's bytes
    threshold = 2 * size("nemo")  # above either load's bytes, below eight times NeMo-RL's
    assert size("nemo") < size("own") < threshold
    frames = {}
    for name in ("own", "nemo"):
        pool.shutdown()
        set_sizes(block_bytes=2048, pool_min_bytes=threshold)
        run = dump.files[0].parent if name == "nemo" else tmp_path / name  # NeMo-RL's run: its exp_NNN folder
        store = RolloutStore.open(run, cache_dir=tmp_path / f"cache-{name}")
        frames[name] = (pool.running() is not None, store.num_samples)
    pool.shutdown()
    assert frames["own"][0] is False and frames["nemo"][0] is True
    assert frames["nemo"][1] == dump.samples


def test_long_requests_and_long_answers_do_not_wait_on_each_other(tmp_path: Path, pooled) -> None:
    """A request longer than a pipe holds, sent while the worker writes an answer longer than a pipe holds:
    the worker reads its requests whatever it is doing, so neither side waits for the other forever."""
    from rl_board import formats
    from rl_board.formats import Reading
    from rl_board.rollouts.read import ingest

    folder = tmp_path / ("d" * 200)
    folder.mkdir()
    jobs, units = [], []
    for u in range(3):
        unit = []
        for k in range(700):
            path = folder / f"{u}-{k:04d}-{'x' * 40}.jsonl"
            path.write_text(json.dumps({"step": u, "prompt": f"p{k}", "response": "r", "reward": 1.0}) + "\n")
            unit.append(len(jobs))
            jobs.append((path, 0, path.stat().st_size))
        units.append(unit)
    readings = {str(p): Reading(formats.NATIVE) for p, _, _ in jobs}
    (tmp_path / "segments").mkdir()
    requests = [ingest._request(jobs, unit, tmp_path / "segments", readings, None) for unit in units]
    assert min(len(r) for r in requests) > 1 << 17  # more than two pipes' worth each
    workers = pool.WorkerPool(1)
    assert workers.wait_ready()
    answers: list[str] = []
    thread = threading.Thread(
        target=lambda: answers.extend(workers.run(requests, lambda i: "local", lambda line: line)),
        daemon=True,
    )
    thread.start()
    thread.join(timeout=120)
    done = not thread.is_alive()
    workers.close() if done else [p.kill() for p in workers.procs]
    assert done, "the pool and its worker waited on each other"
    assert len(answers) == 3 and all(len(a) > 1 << 16 for a in answers)
    assert [len(json.loads(a)) for a in answers] == [700, 700, 700]
