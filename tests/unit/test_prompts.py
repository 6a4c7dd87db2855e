"""Prompts across training: statuses and histories computed by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from rl_board.rollouts.groups import group_table
from rl_board.rollouts.matchup import prompt_rewards
from rl_board.rollouts.prompts import (
    ALWAYS,
    LEARNED,
    MIXED,
    NEVER,
    NEWLY_FAILING,
    per_step,
    prompt_id,
    prompt_table,
)
from rl_board.rollouts.store import RolloutStore
from tests.unit.test_cli import rl_board


def frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["step", "prompt", "reward"])


def test_statuses_by_hand() -> None:
    rows = [
        (0, "never", 0.0),
        (1, "never", 0.2),
        (0, "always", 1.0),
        (1, "always", 0.0),
        (1, "always", 1.0),
        (0, "newly", 1.0),
        (1, "newly", 0.0),
        (0, "learned", 0.0),
        (1, "learned", 1.0),
        (2, "learned", 1.0),
        (0, "mixed", 0.0),
        (1, "mixed", 1.0),
        (2, "mixed", 0.0),
        (3, "mixed", 1.0),
    ]
    table = prompt_table(frame(rows), threshold=1.0).set_index("prompt")
    assert table.loc["never", "status"] == NEVER and pd.isna(table.loc["never", "first_solved"])
    assert table.loc["always", "status"] == ALWAYS and table.loc["always", "samples"] == 3
    assert table.loc["newly", "status"] == NEWLY_FAILING and table.loc["newly", "regressions"] == 1
    assert table.loc["learned", "status"] == LEARNED and table.loc["learned", "first_solved"] == 1
    assert table.loc["mixed", "status"] == MIXED and table.loc["mixed", "regressions"] == 1
    assert table.loc["always", "reward_mean"] == 2 / 3 and table.loc["mixed", "solved_share"] == 0.5
    assert table.loc["mixed", "id"] == prompt_id("mixed") and len(prompt_id("x")) == 12


def test_history_of_one_prompt_in_a_demo_run(tmp_path: Path, cache_dir: Path) -> None:
    assert (
        rl_board(
            "demo", str(tmp_path), "--only", "grpo", "--long-tokens", "200", cache_dir=cache_dir
        ).returncode
        == 0
    )
    store = RolloutStore.open(tmp_path / "grpo_math", cache_dir=cache_dir)
    table = store.prompts()
    assert table["samples"].sum() == store.num_samples
    prompt = table.iloc[0]["prompt"]
    history = store.prompt_history(prompt=prompt)
    assert len(history) == table.iloc[0]["samples"] and {"step", "sample", "reward"} <= set(history.columns)


def unscored_rows(seed: int) -> pd.DataFrame:
    """Prompts over steps, some rewards NaN (unscored rows); one prompt never scored at all."""
    rng = np.random.default_rng(seed)
    rows = []
    for step in range(4):
        for n in range(15):  # three samples of each of five prompts
            reward = float(rng.choice([0.0, 0.5, 1.0])) if rng.random() > 0.35 else math.nan
            rows.append((step, f"prompt {n // 3}", reward if n >= 3 else math.nan, n))
    return pd.DataFrame(rows, columns=["step", "prompt", "reward", "sample"])


def scored_mean(rewards: pd.Series) -> float:
    """The mean of the scored rewards, NaN when there is none (worked out apart from pandas' groupby)."""
    scored = [r for r in rewards if not math.isnan(r)]
    return sum(scored) / len(scored) if scored else math.nan


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b)


def test_prompt_means_leave_unscored_rows_out() -> None:
    rows = unscored_rows(5)
    table = prompt_table(rows, threshold=1.0).set_index("prompt")
    assert rows[rows["prompt"] == "prompt 0"]["reward"].isna().all()
    for prompt, mine in rows.groupby("prompt"):
        assert same(table.loc[prompt, "reward_mean"], scored_mean(mine["reward"])), prompt
        assert table.loc[prompt, "samples"] == len(mine)
    assert math.isnan(table.loc["prompt 0", "reward_mean"]), "no scored reward: no mean, not 0"
    assert table.loc["prompt 0", "status"] == NEVER and pd.isna(table.loc["prompt 0", "first_solved"])
    steps = per_step(rows, threshold=1.0).set_index(["prompt", "step"])
    for (prompt, step), mine in rows.groupby(["prompt", "step"]):
        assert same(steps.loc[(prompt, step), "reward_mean"], scored_mean(mine["reward"]))


def test_solved_share_counts_scored_steps_only() -> None:
    rows = frame([(0, "p", 1.0), (1, "p", math.nan), (2, "p", 1.0), (0, "q", 0.0), (1, "q", math.nan)])
    table = prompt_table(rows, threshold=1.0).set_index("prompt")
    assert table.loc["p", "status"] == ALWAYS and table.loc["p", "solved_share"] == 1.0
    assert table.loc["p", "regressions"] == 0 and table.loc["p", "steps"] == 3
    assert table.loc["q", "status"] == NEVER and table.loc["q", "solved_share"] == 0.0


def test_matchup_and_group_means_leave_unscored_rows_out() -> None:
    rows = unscored_rows(11)
    rewards = prompt_rewards(rows).set_index("prompt")
    groups = group_table(rows, threshold=1.0).set_index(["step", "group"])
    for prompt, mine in rows.groupby("prompt"):
        assert same(rewards.loc[prompt, "reward_mean"], scored_mean(mine["reward"]))
    for (step, prompt), mine in rows.groupby(["step", "prompt"]):
        scored = mine["reward"].dropna()
        solved = (scored >= 1.0).mean() if len(scored) else math.nan
        assert same(groups.loc[(step, prompt), "reward_mean"], scored_mean(mine["reward"]))
        assert same(groups.loc[(step, prompt), "solved"], solved), "an unscored sample is not an unsolved one"
