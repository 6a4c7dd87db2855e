"""AppTest fixtures: a served root with demo runs, fresh caches, and helpers to read the page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st

from rl_board import config
from rl_board.rollouts.demo import DemoSpec, write_eval_run, write_run
from rl_board.rollouts.demo_grpo import GrpoSpec, write_grpo_run
from rl_board.rollouts.store import RolloutStore
from tests.helpers.apptest import open_page


@pytest.fixture(scope="session")
def served_root(tmp_path_factory) -> Path:
    """One root with every kind of run the pages must handle."""
    root = tmp_path_factory.mktemp("served")
    write_run(root / "ppo", DemoSpec(steps=6, samples=8, ranks=2, tokens=16, seed=3))
    write_eval_run(root / "eval")
    write_run(root / "single", DemoSpec(steps=1, samples=1, ranks=1, tokens=6, seed=4))
    write_run(root / "noref", DemoSpec(steps=3, samples=4, ranks=1, tokens=6, seed=5, with_ref=False))
    (root / "empty").mkdir()
    (root / "empty" / "rollout_data_rank_0.jsonl").write_text("")
    write_run(root / "big", DemoSpec(steps=2, samples=1100, ranks=1, seed=6, token_level=False))
    write_hostile_run(root / "hostile")
    write_broken_run(root / "broken")
    write_extras_run(root / "extras")
    return root


def write_extras_run(run: Path) -> None:
    """User fields of every shape: text, numbers, lists, objects."""
    run.mkdir()
    with (run / "r.jsonl").open("w") as f:
        for i in range(4):
            f.write(
                json.dumps(
                    {
                        "step": 0,
                        "prompt": f"p{i}",
                        "response": "r",
                        "reward": i / 10,
                        "tags": ["a", str(i)],
                        "meta": {"k": i},
                        "note": f"n{i}",
                        "score2": 3 - i,
                    }
                )
                + "\n"
            )


def write_broken_run(run: Path) -> None:
    """Two good samples around a line that is not JSON."""
    run.mkdir()
    good = {"step": 0, "prompt": "p", "response": "r", "reward": 0.5}
    (run / "r.jsonl").write_text(json.dumps(good) + "\n{not json\n" + json.dumps(good) + "\n")


def write_hostile_run(run: Path) -> None:
    """Model text that tries to be markup: HTML, Markdown, attribute breakouts."""
    run.mkdir()
    record = {
        "step": 0,
        "prompt": "# Heading [x](javascript:alert(1))",
        "reward": 1.0,
        "response": "<script>alert(1)</script><img src=x onerror=alert(2)>",
        "response_tokens": ["<script>", '" onmouseover="alert(1)'],
        "logprobs": [-0.1, -0.2],
        "ref_logprobs": [-0.2, -0.1],
    }
    (run / "r.jsonl").write_text(json.dumps(record) + "\n")


@pytest.fixture(autouse=True)
def _fresh_caches():
    """st.cache_data / st.cache_resource outlive an AppTest: clear them around every test."""
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture
def app_env(monkeypatch, served_root, tmp_path) -> Path:
    monkeypatch.setenv("RL_BOARD_ROOTS", str(served_root))
    monkeypatch.setenv("RL_BOARD_CACHE_DIR", str(tmp_path / "cache"))
    return served_root


@pytest.fixture
def serve(monkeypatch, tmp_path):
    """serve(root): the app serves ``root`` with a cache of this test's own."""

    def _serve(root: Path) -> Path:
        monkeypatch.setenv("RL_BOARD_ROOTS", str(root))
        monkeypatch.setenv("RL_BOARD_CACHE_DIR", str(tmp_path / "cache"))
        config.reset()  # the app reads its settings afresh, as a server started now would
        return root

    return _serve


@pytest.fixture
def grpo_root(tmp_path, serve) -> Path:
    """Two identical small GRPO demo runs (grpo, grpo_b): 9 prompts, 3 per step, each back every 3 steps."""
    spec = GrpoSpec(steps=8, prompts=3, group_size=4, tokens=20, long_tokens=60, seed=4)
    for name in ("grpo", "grpo_b"):
        write_grpo_run(tmp_path / "served" / name, spec)
    return serve(tmp_path / "served")


@pytest.fixture
def open_app(app_env):
    """open_app(page="steps", run="ppo", step="3") -> AppTest after the first run on that page."""

    return open_page


@pytest.fixture
def store_of(app_env, tmp_path):
    def _store(run: str) -> RolloutStore:
        return RolloutStore.open(app_env / run, cache_dir=tmp_path / "expected-cache")

    return _store
