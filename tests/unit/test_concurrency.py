"""Growing files and a shared cache: no error, no duplicate, no lost sample."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from rl_board.rollouts.store import RolloutStore

N_LINES = 400


def record(i: int) -> bytes:
    return (
        json.dumps(
            {"step": i // 20, "prompt": f"p{i}", "response": "r" * (i % 13), "reward": float(i), "uid": i}
        )
        + "\n"
    ).encode()


def write_slowly(path: Path, stop: threading.Event) -> None:
    """Append lines in uneven pieces, often leaving half a line for a while."""
    with open(path, "ab", buffering=0) as f:
        for i in range(N_LINES):
            data = record(i)
            cut = (i * 7) % len(data)
            f.write(data[:cut])
            if i % 5 == 0:
                time.sleep(0.002)  # a reader will see this half line
            f.write(data[cut:])
    stop.set()


def uids(store: RolloutStore) -> list[int]:
    if not store.has("uid"):
        return []
    return store.samples(columns=["uid"], sort_by="uid")["uid"].tolist()


def test_reader_follows_a_writer(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    path = run / "rank0.jsonl"
    path.write_bytes(b"")
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    stop = threading.Event()
    writer = threading.Thread(target=write_slowly, args=(path, stop))
    writer.start()
    seen_counts = []
    while not stop.is_set():
        store.refresh()
        got = uids(store)
        assert got == list(range(len(got)))  # a prefix: nothing duplicated, nothing skipped
        assert store.report.bad_line_count == 0
        seen_counts.append(len(got))
    writer.join()
    store.refresh()
    assert uids(store) == list(range(N_LINES))
    assert len(set(seen_counts)) > 3  # it really followed the writer
    reopened = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    assert uids(reopened) == list(range(N_LINES)) and reopened.report.from_cache


LOADER = """
import sys, json
from rl_board.rollouts.store import RolloutStore
run, cache, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
for _ in range(rounds):
    store = RolloutStore.open(run, cache_dir=cache)
    uids = store.samples(columns=["uid"], sort_by="uid")["uid"].tolist()
    assert uids == list(range(len(uids))), "duplicated or skipped samples"
    assert store.report.bad_line_count == 0
print(len(uids))
"""


def test_two_processes_share_one_cache_while_the_run_grows(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    path = run / "rank0.jsonl"
    path.write_bytes(b"".join(record(i) for i in range(50)))
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOADER, str(run), str(cache), "15"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    stop = threading.Event()
    with open(path, "ab", buffering=0) as f:
        for i in range(50, N_LINES):
            f.write(record(i))
    stop.set()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        assert 50 <= int(out.strip()) <= N_LINES
    final = RolloutStore.open(run, cache_dir=cache)
    assert uids(final) == list(range(N_LINES))
    assert not final.report.rebuilt_cache
