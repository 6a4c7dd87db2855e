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

from rl_board import config
from rl_board.rollouts.cache import sync
from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.read import collector, heap
from rl_board.rollouts.store import RolloutStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def default_thresholds() -> Iterator[tuple[int, int, int]]:
    """CPython's thresholds for the test, whatever the process had; put back after it."""
    had = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*had)


def test_a_load_collects_rarely_and_puts_the_thresholds_back(default_thresholds) -> None:
    with collector.rare():
        assert gc.get_threshold() == (config.RARE_GC_EVERY, 10, 10)
    assert gc.get_threshold() == default_thresholds


@pytest.mark.parametrize("own", [(500_000, 20, 30), (0, 10, 10)])
def test_a_process_that_collects_more_rarely_or_never_keeps_its_own(default_thresholds, own) -> None:
    gc.set_threshold(*own)
    with collector.rare():
        assert gc.get_threshold() == own
    assert gc.get_threshold() == own


def test_overlapping_loads_put_the_thresholds_back_after_the_last(default_thresholds) -> None:
    first, second = collector.rare(), collector.rare()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # (loads in a server's threads end in any order)
    assert gc.get_threshold()[0] == config.RARE_GC_EVERY
    second.__exit__(None, None, None)
    assert gc.get_threshold() == default_thresholds


def test_a_load_makes_no_collection_where_the_default_made_many(
    tmp_path: Path, default_thresholds, monkeypatch
) -> None:
    write_run(tmp_path / "run", DemoSpec(steps=16, samples=32, ranks=1, tokens=64))
    RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "first")  # what a first load imports
    rare = collector.rare
    inside: list[bool] = []  # whether a load is running
    made: list[int] = []  # the collections made while one was

    @contextlib.contextmanager
    def counted(span: contextlib.AbstractContextManager[None]) -> Iterator[None]:
        inside.append(True)
        with span:
            yield
        inside.pop()

    def seen(phase: str, info: dict) -> None:
        if phase == "start" and inside:
            made.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        monkeypatch.setattr(collector, "rare", lambda: counted(contextlib.nullcontext()))
        RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "without")  # at CPython's default
        made_without = len(made)
        monkeypatch.setattr(collector, "rare", lambda: counted(rare()))
        store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    finally:
        gc.callbacks.remove(seen)
    assert store.num_samples == 512
    assert made_without >= 3, made_without
    assert len(made) == made_without  # none more
    assert gc.get_threshold() == default_thresholds


def test_a_load_that_fails_midway_ends_its_span_at_once(
    tmp_path: Path, default_thresholds, monkeypatch
) -> None:
    """The load's span (rare collections, the kept heap) ends when the load fails, not when the traceback
    that holds its frames is let go (a notebook keeps the last one)."""
    write_run(tmp_path / "run", DemoSpec(steps=2, samples=4, ranks=2, tokens=16))

    def fails(entry, result) -> None:
        raise RuntimeError("recording a block failed")

    monkeypatch.setattr(sync, "_record", fails)
    with pytest.raises(RuntimeError) as caught:
        RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    assert caught.value.__traceback__ is not None  # still held here
    assert gc.get_threshold() == default_thresholds
    assert not heap.keeping()


def test_a_worker_collects_rarely_while_it_answers_jobs() -> None:
    """A pool worker only ever loads: it collects rarely while it waits for and answers jobs."""
    code = (
        "import gc\n"
        "from rl_board.rollouts.read import worker\n"
        "own = gc.get_threshold()[0]\n"
        "seen = []\n"
        "jobs = worker._lines\n"
        "def lines(fd, idle):\n"
        "    seen.append(gc.get_threshold()[0])\n"
        "    yield from jobs(fd, idle)\n"
        "worker._lines = lines\n"
        "worker.main([])\n"
        "print(seen[0], gc.get_threshold()[0] == own)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], input="", capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["ready", f"{config.RARE_GC_EVERY} True"]
