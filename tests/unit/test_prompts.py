"""Prompts across training: statuses and histories computed by hand."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rl_board.rollouts.prompts import ALWAYS, LEARNED, MIXED, NEVER, NEWLY_FAILING, prompt_id, prompt_table
from rl_board.rollouts.store import RolloutStore
from tests.unit.test_cli import rl_board


def frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["step", "prompt", "reward"])


def test_statuses_by_hand() -> None:
    rows = [
        (0, "never", 0.0), (1, "never", 0.2),
        (0, "always", 1.0), (1, "always", 0.0), (1, "always", 1.0),
        (0, "newly", 1.0), (1, "newly", 0.0),
        (0, "learned", 0.0), (1, "learned", 1.0), (2, "learned", 1.0),
        (0, "mixed", 0.0), (1, "mixed", 1.0), (2, "mixed", 0.0), (3, "mixed", 1.0),
    ]  # fmt: skip
    table = prompt_table(frame(rows), threshold=1.0).set_index("prompt")
    assert table.loc["never", "status"] == NEVER and pd.isna(table.loc["never", "first_solved"])
    assert table.loc["always", "status"] == ALWAYS and table.loc["always", "samples"] == 3
    assert table.loc["newly", "status"] == NEWLY_FAILING and table.loc["newly", "regressions"] == 1
    assert table.loc["learned", "status"] == LEARNED and table.loc["learned", "first_solved"] == 1
    assert table.loc["mixed", "status"] == MIXED and table.loc["mixed", "regressions"] == 1
    assert table.loc["always", "reward_mean"] == 2 / 3 and table.loc["mixed", "solved_share"] == 0.5
    assert table.loc["mixed", "id"] == prompt_id("mixed") and len(prompt_id("x")) == 12


def test_history_of_one_prompt_in_a_demo_run(tmp_path: Path, cache_dir: Path) -> None:
    assert rl_board("demo", str(tmp_path), "--only", "grpo", "--long-tokens", "200", cache_dir=cache_dir).returncode == 0
    store = RolloutStore.open(tmp_path / "grpo_math", cache_dir=cache_dir)
    table = store.prompts()
    assert table["samples"].sum() == store.num_samples
    prompt = table.iloc[0]["prompt"]
    history = store.prompt_history(prompt=prompt)
    assert len(history) == table.iloc[0]["samples"] and {"step", "sample", "reward"} <= set(history.columns)
