"""The shared store registry behind st.cache_resource: one load, real progress, refresh on append."""

from __future__ import annotations

import json

from rl_board.config import Served
from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.ui.cached import StoreRegistry


def test_one_store_per_run_with_real_progress_and_refresh(tmp_path):
    run = tmp_path / "run"
    paths = write_run(run, DemoSpec(steps=3, samples=4, ranks=1, tokens=8))
    total = sum(p.stat().st_size for p in paths)
    calls: list[tuple[int, int]] = []
    registry = StoreRegistry()
    store = registry.get(str(run), Served(tmp_path / "cache"), lambda done, size: calls.append((done, size)))
    assert calls and calls[-1] == (total, total)
    assert all(size == total for _, size in calls)
    assert registry.is_open(str(run), Served(tmp_path / "cache"))
    assert registry.get(str(run), Served(tmp_path / "cache")) is store  # shared, not reloaded

    record = {"step": 3, "prompt": "p", "response": "r", "reward": 1.0}
    with paths[0].open("a") as f:
        f.write(json.dumps(record) + "\n")
    again = registry.get(str(run), Served(tmp_path / "cache"))
    assert again is store and store.steps == [0, 1, 2, 3]


def test_registry_drops_least_recently_used(tmp_path):
    registry = StoreRegistry(limit=1)
    for name in ("a", "b"):
        write_run(tmp_path / name, DemoSpec(steps=1, samples=1, ranks=1, tokens=4))
        registry.get(str(tmp_path / name), Served(tmp_path / "cache"))
    assert not registry.is_open(str(tmp_path / "a"), Served(tmp_path / "cache"))
    assert registry.is_open(str(tmp_path / "b"), Served(tmp_path / "cache"))
