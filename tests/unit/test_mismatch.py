"""Train-vs-inference mismatch: per token, per sample, per step, and the health rule that watches it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa

from rl_board.health.checks import RolloutRun, check_rollouts
from rl_board.rollouts import mismatch
from rl_board.rollouts.demo_grpo import GrpoSpec, write_grpo_run
from rl_board.rollouts.store import RolloutStore


def test_per_sample_by_hand() -> None:
    table = pa.table(
        {
            "logprobs": [[-1.0, -2.0], [-0.5], None, [-1.0, -1.0]],
            "train_logprobs": [[-1.0, -1.0], [-0.5], [-0.1], [-1.0]],
        }
    )
    mean, top = mismatch.per_sample(table)
    k = math.exp(1.0) - 1 - 1.0  # r = -1 - (-2) = 1
    assert np.allclose(mean[:2], [k / 2, 0.0]) and np.allclose(top[:2], [k, 0.0])
    assert np.isnan(mean[2]) and np.isnan(mean[3])  # missing, and arrays of different length


def test_demo_run_drifts_and_the_rule_fires(tmp_path: Path, cache_dir: Path) -> None:
    write_grpo_run(
        tmp_path / "grpo", GrpoSpec(steps=10, prompts=3, group_size=4, tokens=40, long_tokens=80, seed=1)
    )
    store = RolloutStore.open(tmp_path / "grpo", cache_dir=cache_dir)
    per_step = store.mismatch_summary().set_index("step")["mismatch_mean"]
    assert per_step.iloc[:5].max() < 1e-5 < per_step.iloc[-1]  # agree at first, apart at the end
    detail = store.sample(step=9, index=0)
    assert {"train_logp", "mismatch"} <= set(detail.tokens.columns) and (detail.tokens["mismatch"] >= 0).all()
    [finding] = [
        f for f in check_rollouts(RolloutRun.from_store("grpo", store)) if f.rule == "logprob_mismatch"
    ]
    assert finding.steps[-1] == 9 and finding.link.step is not None and finding.link.sample is not None


def test_runs_without_trainer_logprobs_have_no_mismatch(train_run: Path, cache_dir: Path) -> None:
    store = RolloutStore.open(train_run, cache_dir=cache_dir)
    assert store.mismatch().empty and "mismatch" not in store.sample(step=0, index=0).tokens.columns
