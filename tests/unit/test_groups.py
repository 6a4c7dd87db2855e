"""GRPO groups: counted by hand on small runs, and through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rl_board.metrics.kinds import metric_catalogue
from rl_board.rollouts.groups import group_table, step_group_stats
from rl_board.rollouts.store import RolloutStore
from tests.helpers import trainer_dumps as T
from tests.unit.test_cli import rl_board


def frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["step", "sample", "prompt", "reward"])


def test_groups_by_prompt_text_by_hand() -> None:
    rows = [
        (0, 0, "a", 1.0),
        (0, 1, "a", 0.0),
        (0, 2, "b", 1.0),
        (0, 3, "b", 1.0),
        (1, 0, "a", 0.5),
        (1, 1, "a", math.nan),
    ]
    table = group_table(frame(rows))
    a0, b0, a1 = (table.iloc[i] for i in range(3))
    assert (a0["step"], a0["group"], a0["samples"], a0["reward_mean"], a0["reward_std"]) == (
        0,
        "a",
        2,
        0.5,
        0.5,
    )
    assert (
        a0["solved"] == 0.5 and not a0["zero_variance"] and (a0["best_sample"], a0["worst_sample"]) == (0, 1)
    )
    assert b0["solved"] == 1.0 and b0["zero_variance"]
    assert (
        a1["samples"] == 2 and a1["reward_mean"] == 0.5 and a1["solved"] == 0.0
    )  # NaN is skipped, not solved
    assert a1["best_sample"] == 0 and a1["worst_sample"] == 0  # a NaN reward is never best or worst
    stats = step_group_stats(table)
    assert stats["zero_variance_share"].tolist() == [0.5, 0.0] and stats["groups"].tolist() == [2, 1]


def test_threshold_sets_what_solved_means() -> None:
    table = group_table(frame([(0, 0, "a", 0.7), (0, 1, "a", 0.2)]), threshold=0.5)
    assert table["solved"].tolist() == [0.5]


def test_group_ids_win_over_prompt_text() -> None:
    rows = frame([(0, 0, "same", 1.0), (0, 1, "same", 0.0)]).assign(group=["g1", "g2"])
    assert group_table(rows)["group"].tolist() == ["g1", "g2"]


@pytest.mark.parametrize("name", ["verl_v1", "roll", "areal", "verl"])
def test_groups_of_trainer_dumps_match_their_writers(name: str, tmp_path: Path, cache_dir: Path) -> None:
    dump = T.ALL_WRITERS[name](tmp_path / "out")
    store = RolloutStore.open(dump.run_folder(tmp_path), cache_dir=cache_dir)
    for step in dump.steps:
        table = store.groups(step=step)
        if dump.groups is not None:
            assert len(table) == len(set(dump.groups[step]))
        assert table["samples"].sum() == len(dump.rewards[step])
        means = pd.Series(dump.rewards[step]).groupby(table_keys(store, step)).mean()
        assert sorted(table["reward_mean"].round(9)) == sorted(means.round(9))


def table_keys(store: RolloutStore, step: int) -> list[str]:
    from rl_board.rollouts.groups import group_keys

    rows = store.samples(step=step, columns=[c for c in ("prompt", "group") if store.has(c)])
    return group_keys(rows).tolist()


def test_groups_cli_json(tmp_path: Path, cache_dir: Path) -> None:
    dump = T.ALL_WRITERS["verl_v1"](tmp_path / "out")
    out = rl_board("groups", str(dump.run_dir), "--step", str(dump.steps[0]), "--json", cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    groups = json.loads(out.stdout)["groups"]
    assert {g["step"] for g in groups} == {dump.steps[0]}
    assert sum(g["samples"] for g in groups) == len(dump.rewards[dump.steps[0]])
    assert set(groups[0]) >= {
        "step",
        "group",
        "prompt",
        "samples",
        "reward_mean",
        "reward_std",
        "solved",
        "zero_variance",
    }


def test_grpo_demo_has_groups_components_and_metrics(tmp_path: Path, cache_dir: Path) -> None:
    out = rl_board(
        "demo",
        str(tmp_path),
        "--only",
        "grpo",
        "--group-size",
        "4",
        "--long-tokens",
        "300",
        cache_dir=cache_dir,
    )
    assert out.returncode == 0, out.stderr
    store = RolloutStore.open(tmp_path / "grpo_math", cache_dir=cache_dir)
    table = store.groups()
    assert (table["samples"] == 4).all() and table["zero_variance"].any()
    assert store.reward_components == ["accuracy_reward", "format_reward"]
    assert store.report.format == "rl-board" and store.has("train_logprobs")
    found = metric_catalogue(tmp_path, skip=(cache_dir,))
    kinds = {(s.role, s.format) for s in found.sources}
    assert kinds == {("rollout", "rl-board"), ("metrics", "text-log")}  # the samples, and metrics.jsonl


def test_own_format_groups_by_uid_as_verl_forks_write_it(tmp_path: Path, cache_dir: Path) -> None:
    """rl-board's own keys with verl's ``uid``: the id's first part is the group, whatever the prompt text."""
    rng = np.random.default_rng(7)
    uids = {
        f"{prefix}_{session}_{k}": prefix for prefix in ("abc", "xyz") for session in (0, 1) for k in (0, 1)
    }
    rows = [
        {
            "step": 3,
            "prompt": "What is 2 + 2?",
            "response": f"answer {n}",
            "reward": float(rng.integers(0, 2)),
            "uid": uid,
        }
        for n, uid in enumerate(uids)
    ]
    run = tmp_path / "fork"
    run.mkdir()
    (run / "rollout_data_rank_0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.report.format == "rl-board"
    table = store.groups(step=3).set_index("group")
    assert sorted(table.index) == sorted(set(uids.values())), "equal prompt text, two uids: two groups"
    for prefix in table.index:
        rewards = [r["reward"] for r in rows if uids[r["uid"]] == prefix]
        assert table.loc[prefix, "samples"] == len(rewards)
        assert math.isclose(table.loc[prefix, "reward_mean"], sum(rewards) / len(rewards))
