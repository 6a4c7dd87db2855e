"""Shared fixtures: runs written by the package's own demo writer into tmp_path."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from rl_board import config
from rl_board.rollouts.demo import DemoSpec, write_eval_run, write_run


@pytest.fixture(autouse=True)
def fresh_server_config():
    """The app reads its configuration once per process; each test sets its own environment first."""
    config.reset()
    yield
    config.reset()


@pytest.fixture(autouse=True)
def own_labels_file(monkeypatch, tmp_path_factory) -> Path:
    """Labels a test puts on samples go to a file of its own, never the user's data folder."""
    path = tmp_path_factory.mktemp("labels") / "labels.sqlite"
    monkeypatch.setenv("RL_BOARD_LABELS", str(path))
    config.reset()
    return path


@pytest.fixture(autouse=True)
def own_cache_folder(monkeypatch, tmp_path_factory) -> Path:
    """Commands run without --cache-dir (metrics now cache by default, as rollouts do) keep their tables
    in a folder of the test's own, never the user's cache."""
    path = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("RL_BOARD_CACHE_DIR", str(path))
    config.reset()
    return path


@pytest.fixture
def set_sizes(monkeypatch):
    """Set byte sizes as a user would (``RL_BOARD_<NAME>``); workers started after it inherit them too."""

    def set_(**values: int) -> None:
        for name, value in values.items():
            monkeypatch.setenv(f"RL_BOARD_{name.upper()}", str(value))
        config.reset()

    return set_


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    path = tmp_path / "cache"
    path.mkdir()
    return path


@pytest.fixture
def train_run(tmp_path: Path) -> Path:
    """A token-level run: 6 steps x 8 samples over 2 rank files."""
    run = tmp_path / "logs" / "ppo"
    write_run(run, DemoSpec(steps=6, samples=8, ranks=2, tokens=12, seed=3))
    return run


@pytest.fixture
def eval_run(tmp_path: Path) -> Path:
    run = tmp_path / "logs" / "eval"
    write_eval_run(run)
    return run


@pytest.fixture
def write_lines() -> Callable[..., Path]:
    """Write raw lines (dicts become JSON) into a file and return its path."""

    def write(path: Path, lines: list, *, end: str = "\n") -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join((json.dumps(x) if isinstance(x, dict) else x) + end for x in lines)
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def direct_state(tmp_path: Path):
    """Each test starts with O_DIRECT allowed again on its folder's file system (a refusal turns it off
    there for the process); yields whether this platform has it and what turns it off."""
    from rl_board.rollouts.cache import segments

    device = os.stat(tmp_path).st_dev
    off, slow = set(segments._direct_off), dict(segments._slow)
    segments._direct_off.discard(device)
    segments._slow.pop(device, None)
    yield {"has": segments._HAS_DIRECT, "off": segments._direct_off, "device": device}
    segments._direct_off.clear()
    segments._direct_off.update(off)
    segments._slow.clear()
    segments._slow.update(slow)
