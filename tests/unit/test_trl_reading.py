"""TRL's completions tables read as TRL means them (fast checks on generated tables; the real trainer's
output is checked in tests/real/)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rl_board.formats import trl
from rl_board.metrics.kinds import metric_catalogue as catalogue
from rl_board.metrics.reader import load_metrics
from rl_board.rollouts.store import RolloutStore


def trl_advantage(reward: np.ndarray, size: int) -> np.ndarray:
    """TRL's default: (r − group mean) / (group sample std + 1e-4), NaN-aware, NaN -> 0 (computed here
    anew)."""
    out = np.zeros(len(reward))
    for start in range(0, len(reward), size):
        part = reward[start : start + size]
        kept = part[~np.isnan(part)]
        if len(kept) < 2:
            continue
        out[start : start + size] = (part - kept.mean()) / (kept.std(ddof=1) + 1e-4)
    return np.nan_to_num(out, nan=0.0)


def write_completions(
    out: Path,
    step: int,
    *,
    accuracy: list[float],
    fmt: list[float],
    extra: list[float] | None,
    prompts: list,
    completions: list,
    advantage: list[float] | None = None,
) -> Path:
    """One ``completions_{step:05d}.parquet`` in TRL's column order."""
    columns: dict[str, list] = {
        "step": [step] * len(prompts),
        "prompt": prompts,
        "completion": completions,
        "accuracy_reward": accuracy,
        "format_reward": fmt,
    }
    if extra is not None:
        columns["length_bonus"] = extra  # a log_extra column that holds numbers
    reward = np.nansum(np.column_stack([accuracy, fmt]), axis=1)
    reward[np.isnan(accuracy) & np.isnan(fmt)] = np.nan
    columns["advantage"] = advantage if advantage is not None else trl_advantage(reward, 2).tolist()
    path = out / "completions" / f"completions_{step:05d}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


ACC = [1.0, 0.0, 1.0, 1.0, math.nan, 0.0]
FMT = [0.5, 0.5, math.nan, 0.0, math.nan, 1.0]
EXTRA = [7.0, 3.0, 4.0, 9.0, 2.0, 5.0]
PROMPTS = ["a", "a", "b", "b", "c", "c"]
COMPLETIONS = ["x1", "x2", "y1", "y2", "z1", "z2"]


def expected_reward() -> list[float]:
    out = []
    for a, f in zip(ACC, FMT, strict=True):
        parts = [v for v in (a, f) if not math.isnan(v)]
        out.append(sum(parts) if parts else math.nan)
    return out


def same(a: list[float], b: list[float]) -> bool:
    return all(
        (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9)
        for x, y in zip(a, b, strict=True)
    )


def test_reward_functions_found_from_the_advantages(tmp_path: Path) -> None:
    """No metrics beside: the logged advantages tell that length_bonus is a log_extra column."""
    write_completions(
        tmp_path / "out", 1, accuracy=ACC, fmt=FMT, extra=EXTRA, prompts=PROMPTS, completions=COMPLETIONS
    )
    store = RolloutStore.open(tmp_path / "out" / "completions", cache_dir=tmp_path / "cache")
    rewards = store.samples(columns=["reward"])["reward"].tolist()
    assert same(rewards, expected_reward())
    assert store.reward_components == ["accuracy_reward", "format_reward"]
    assert "length_bonus" in store.numeric_extras
    summary = store.step_summary()
    assert math.isclose(summary["reward_mean"].iloc[0], np.nanmean(expected_reward()))  # NaN left out


def test_the_groups_of_each_step_are_apart_in_a_table_of_several_steps() -> None:
    """A tracker keeps TRL's rows of many steps in one table: the first group of one step is not the first
    group of the next, so each step's advantages are reproduced from its own groups."""
    acc2 = [0.0, 0.0, 1.0, 0.0, 1.0, 1.0]
    fmt2 = [1.0, 0.0, 0.5, 0.5, math.nan, 0.0]
    columns: dict[str, list] = {
        "step": [1] * 6 + [2] * 6,
        "prompt": PROMPTS * 2,
        "completion": COMPLETIONS * 2,
    }
    columns["accuracy_reward"], columns["format_reward"] = ACC + acc2, FMT + fmt2
    columns["length_bonus"] = EXTRA * 2
    advantages = []
    for acc, fmt in ((ACC, FMT), (acc2, fmt2)):
        reward = np.nansum(np.column_stack([acc, fmt]), axis=1)
        reward[np.isnan(acc) & np.isnan(fmt)] = np.nan  # no function could score it
        advantages += trl_advantage(reward, 2).tolist()
    columns["advantage"] = advantages
    table = pa.table(columns)
    assert trl.group_ids(table).tolist() == [0, 0, 1, 1, 2, 2] * 2  # numbered from 0 at each step
    candidates = ["accuracy_reward", "format_reward", "length_bonus"]
    assert trl.prefix_from_advantages(table, candidates) == 2
    unread = table.append_column("reward", pa.nulls(table.num_rows, pa.float64()))  # as the reader hands it
    read = trl._adapt(unread, {}).table  # with the group column TRL's order gives, and the reward made
    assert read.column("group").to_pylist() == [str(g) for g in [0, 0, 1, 1, 2, 2] * 2]
    assert trl.prefix_from_advantages(read, candidates) == 2


def test_reward_functions_named_by_the_logged_metrics(tmp_path: Path) -> None:
    """The advantages cannot tell (all zero), the trainer state beside can."""
    out = tmp_path / "out"
    write_completions(
        out,
        1,
        accuracy=ACC,
        fmt=FMT,
        extra=EXTRA,
        prompts=PROMPTS,
        completions=COMPLETIONS,
        advantage=[0.0] * 6,
    )
    state = out / "checkpoint-1" / "trainer_state.json"
    state.parent.mkdir()
    state.write_text(
        json.dumps(
            {
                "log_history": [
                    {
                        "step": 1,
                        "reward": 0.9,
                        "rewards/accuracy_reward/mean": 0.6,
                        "rewards/format_reward/mean": 0.5,
                    }
                ]
            }
        )
    )
    store = RolloutStore.open(out / "completions", cache_dir=tmp_path / "cache")
    assert same(store.samples(columns=["reward"])["reward"].tolist(), expected_reward())
    assert store.reward_components == ["accuracy_reward", "format_reward"]


def test_weights_from_a_field_map_sum(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_completions(out, 1, accuracy=ACC, fmt=FMT, extra=None, prompts=PROMPTS, completions=COMPLETIONS)
    (out / "completions" / "rl-board.toml").write_text(
        '[fields]\nreward = "accuracy_reward + 0.5*format_reward"\n'
    )
    store = RolloutStore.open(out / "completions", cache_dir=tmp_path / "cache")
    want = []
    for a, f in zip(ACC, FMT, strict=True):
        parts = [w * v for w, v in ((1.0, a), (0.5, f)) if not math.isnan(v)]
        want.append(sum(parts) if parts else math.nan)
    assert same(store.samples(columns=["reward"])["reward"].tolist(), want)


def test_conversational_prompts_are_read_as_text_and_messages(tmp_path: Path) -> None:
    prompts = [[{"role": "system", "content": "be brief"}, {"role": "user", "content": p}] for p in PROMPTS]
    completions = [[{"role": "assistant", "content": c}] for c in COMPLETIONS]
    write_completions(
        tmp_path / "out", 2, accuracy=ACC, fmt=FMT, extra=None, prompts=prompts, completions=completions
    )
    store = RolloutStore.open(tmp_path / "out" / "completions", cache_dir=tmp_path / "cache")
    assert store.num_samples == 6 and not store.report.bad_lines
    frame = store.samples(columns=["prompt", "response", "messages"])
    assert frame["prompt"].iloc[0] == "system: be brief\n\nuser: a"
    assert frame["response"].tolist() == COMPLETIONS
    assert json.loads(frame["messages"].iloc[0]) == [*prompts[0], *completions[0]]
    groups = store.groups()
    assert groups["samples"].tolist() == [2, 2, 2]


def test_groups_follow_trl_order_not_prompt_text(tmp_path: Path) -> None:
    """The same prompt drawn twice in a batch is two groups, as TRL scores them."""
    prompts = ["a", "a", "b", "b", "a", "a"]
    write_completions(
        tmp_path / "out", 1, accuracy=ACC, fmt=FMT, extra=None, prompts=prompts, completions=COMPLETIONS
    )
    store = RolloutStore.open(tmp_path / "out" / "completions", cache_dir=tmp_path / "cache")
    assert store.groups()["samples"].tolist() == [2, 2, 2]


def test_trainer_state_is_a_metric_source_newest_checkpoint_only(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for step in (2, 4):
        state = out / f"checkpoint-{step}" / "trainer_state.json"
        state.parent.mkdir(parents=True)
        history = [
            {"step": s, "epoch": s / 4, "reward": 0.1 * s, "rewards/accuracy_reward/mean": 0.05 * s}
            for s in range(1, step + 1)
        ]
        state.write_text(json.dumps({"log_history": history}))
    found = catalogue(tmp_path)
    metric_files = [s.path for s in found.of_role("metrics")]
    assert metric_files == [out / "checkpoint-4" / "trainer_state.json"]
    bundle = load_metrics(tmp_path)
    rewards = bundle.series("out", "reward")
    assert rewards["step"].tolist() == [1, 2, 3, 4]
    assert np.allclose(rewards["value"], [0.1, 0.2, 0.3, 0.4])


def test_trainer_state_outside_the_served_roots_is_not_read(tmp_path: Path) -> None:
    """A server serving out/completions never reads out/checkpoint-*; the command line looks beside the
    run."""
    out = tmp_path / "out"
    write_completions(
        out,
        1,
        accuracy=ACC,
        fmt=FMT,
        extra=EXTRA,
        prompts=PROMPTS,
        completions=COMPLETIONS,
        advantage=[0.0] * 6,
    )
    state = out / "checkpoint-1" / "trainer_state.json"
    state.parent.mkdir()
    state.write_text(json.dumps({"log_history": [{"step": 1, "rewards/accuracy_reward/mean": 0.6}]}))
    served = out / "completions"
    source = catalogue(served, allowed=[served]).of_role("rollout")[0]
    assert source.reading is not None and trl.FUNCTIONS_OPTION not in source.reading.options
    assert catalogue(out, allowed=[out]).of_role("rollout")[0].reading.options[trl.FUNCTIONS_OPTION] == [
        "accuracy_reward"
    ]
    assert catalogue(served).of_role("rollout")[0].reading.options[trl.FUNCTIONS_OPTION] == [
        "accuracy_reward"
    ]
    store = RolloutStore.open(served, cache_dir=tmp_path / "cache", allowed_roots=[served])
    # Nothing tells here (no metrics inside the served folder, advantages all 0): every float column counts,
    # and the load report says so and how to name the reward functions.
    assert store.reward_components == ["accuracy_reward", "format_reward", "length_bonus"]
    assert any("name the reward in rl-board.toml" in w.reason for w in store.report.warnings)


def _trainer_state(
    out: Path, steps: dict[int, tuple[list[float], list[float]]], weights: tuple[float, float]
) -> None:
    """What TRL logs per step: reward = mean over scored rows of the weighted sum; per-function nanmeans."""
    history = []
    for step, (acc, fmt) in steps.items():
        a, f = np.array(acc), np.array(fmt)
        total = np.nansum(np.column_stack([weights[0] * a, weights[1] * f]), axis=1)
        total[np.isnan(a) & np.isnan(f)] = np.nan
        history.append(
            {
                "step": step,
                "reward": float(np.nanmean(total)),
                "rewards/accuracy_reward/mean": float(np.nanmean(a)),
                "rewards/format_reward/mean": float(np.nanmean(f)),
            }
        )
    state = out / f"checkpoint-{max(steps)}" / "trainer_state.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"log_history": history}))


def test_a_reward_off_from_trl_is_flagged_with_the_weights_that_fit(tmp_path: Path) -> None:
    from rl_board.health.checks import RolloutRun, check_rollouts

    out = tmp_path / "out"
    rng = np.random.default_rng(0)
    steps = {}
    for step in (1, 2, 3):
        acc = rng.integers(0, 2, 6).astype(float).tolist()
        fmt = rng.random(6).round(2).tolist()
        write_completions(
            out, step, accuracy=acc, fmt=fmt, extra=None, prompts=PROMPTS, completions=COMPLETIONS
        )
        steps[step] = (acc, fmt)
    _trainer_state(out, steps, (1.0, 0.5))
    store = RolloutStore.open(out / "completions", cache_dir=tmp_path / "cache")
    findings = [
        f for f in check_rollouts(RolloutRun.from_store("out", store)) if f.rule == "trainer_reward_mismatch"
    ]
    assert len(findings) == 1 and findings[0].steps == [1, 2, 3]
    assert "reward_weights {'accuracy_reward': 1.0, 'format_reward': 0.5}" in findings[0].message
    (out / "completions" / "rl-board.toml").write_text(
        '[fields]\nreward = "accuracy_reward + 0.5*format_reward"\n'
    )
    store = RolloutStore.open(out / "completions", cache_dir=tmp_path / "cache")
    assert not [
        f for f in check_rollouts(RolloutRun.from_store("out", store)) if f.rule == "trainer_reward_mismatch"
    ]


def test_group_ids_over_whole_columns_are_the_row_by_row_ids() -> None:
    """Runs of one prompt (and step) back to back, cut into the common run length, numbered from 0 at each
    step: the definition, row by row, that the whole-column ids are held to (missing prompts and steps
    included)."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        size = int(rng.integers(1, 4))
        prompts = [
            None if rng.random() < 0.1 else f"p{rng.integers(0, 3)}" for _ in range(rng.integers(0, 8))
        ]
        prompts = [p for p in prompts for _ in range(size)]
        steps = [None if rng.random() < 0.1 else int(rng.integers(0, 3)) for _ in prompts]
        table = pa.table({"step": pa.array(steps, pa.int64()), "prompt": pa.array(prompts, pa.string())})
        starts = [
            i
            for i in range(len(prompts))
            if i == 0 or (prompts[i], steps[i]) != (prompts[i - 1], steps[i - 1])
        ]
        common = int(np.gcd.reduce(np.diff([*starts, len(prompts)]))) if starts else 1
        first: dict = {}
        expected = [(i - first.setdefault(s, i)) // max(common, 1) for i, s in enumerate(steps)]
        assert trl.group_ids(table).tolist() == expected, (prompts, steps)
