"""A load runs Python's garbage collector rarely, and leaves the process's own thresholds as they were
(read/collector.py)."""

from __future__ import annotations

import contextlib
import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.read import collector
from rl_board.rollouts.store import RolloutStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def default_thresholds() -> Iterator[tuple[int, int, int]]:
    """CPython's thresholds for the test, whatever the process had; put back after it."""
    had = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*had)


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection made while the test runs."""
    made: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            made.append(info["generation"])

    gc.callbacks.append(seen)
    yield made
    gc.callbacks.remove(seen)


def test_a_load_collects_rarely_and_puts_the_thresholds_back(default_thresholds) -> None:
    with collector.rare():
        assert gc.get_threshold() == (collector.LOAD_GC_EVERY, 10, 10)
    assert gc.get_threshold() == default_thresholds


def test_a_process_that_collects_more_rarely_keeps_its_own(default_thresholds) -> None:
    gc.set_threshold(500_000, 20, 30)
    with collector.rare():
        assert gc.get_threshold() == (500_000, 20, 30)
    assert gc.get_threshold() == (500_000, 20, 30)


def test_overlapping_loads_put_the_thresholds_back_after_the_last(default_thresholds) -> None:
    first, second = collector.rare(), collector.rare()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # (loads in a server's threads end in any order)
    assert gc.get_threshold()[0] == collector.LOAD_GC_EVERY
    second.__exit__(None, None, None)
    assert gc.get_threshold() == default_thresholds


def test_a_load_makes_no_collection_where_the_default_made_many(
    tmp_path: Path, default_thresholds, collections, monkeypatch
) -> None:
    write_run(tmp_path / "run", DemoSpec(steps=16, samples=32, ranks=1, tokens=64))
    RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "first")  # what a first load imports
    before = len(collections)
    with monkeypatch.context() as without:  # the same load at CPython's default thresholds
        without.setattr(collector, "rare", contextlib.nullcontext)
        RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "without")
    made_without = len(collections) - before
    store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    assert store.num_samples == 512
    assert made_without >= 3, made_without
    assert len(collections) - before - made_without == 0
    assert gc.get_threshold() == default_thresholds


def test_a_worker_collects_rarely_while_it_answers_jobs() -> None:
    """A pool worker only ever loads: it collects rarely while it waits for and answers jobs."""
    code = (
        "import gc\n"
        "from rl_board.rollouts.read import worker\n"
        "seen = []\n"
        "jobs = worker._lines\n"
        "def lines(fd, idle):\n"
        "    seen.append(gc.get_threshold()[0])\n"
        "    yield from jobs(fd, idle)\n"
        "worker._lines = lines\n"
        "worker.main([])\n"
        "print(seen[0], gc.get_threshold()[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], input="", capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["ready", f"{collector.LOAD_GC_EVERY} 700"]
