"""TRL's GRPOTrainer, run for real on CPU (``trainers/trl_grpo.py``), read back with rl-board.

Every expectation is computed from TRL's own parquet files, the reward function names / weights the
run was given (``specs.TRL_VARIANTS``) and TRL's own logged metrics (``log_history``): never from
rl-board code.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rl_board.api import RolloutStore
from rl_board.metrics.reader import load_metrics
from tests.real import expected as E
from tests.real.conftest import REPO
from tests.real.trainers import specs

VARIANTS = list(specs.TRL_VARIANTS)
WITH_EXTRAS = [n for n, v in specs.TRL_VARIANTS.items() if v.extra_numeric]
GROUPS_PER_STEP = specs.BATCH // specs.NUM_GENERATIONS


@pytest.fixture(scope="module")
def stores(trl_root: Path, real_cache: Path) -> dict[str, RolloutStore]:
    """rl-board's store of each variant's ``completions/`` folder (the run rl-board's catalogue finds)."""
    return {
        name: RolloutStore.open(trl_root / name / "completions", cache_dir=real_cache) for name in VARIANTS
    }


def frames(trl_root: Path, name: str) -> dict[int, pd.DataFrame]:
    return E.trl_steps(trl_root / name)


def rl_board_rows(store: RolloutStore, step: int, columns: list[str]) -> pd.DataFrame:
    assert step in store.steps, f"rl-board has no step {step} (its steps: {store.steps})"
    return store.samples(step=step, columns=columns).sort_values("sample").reset_index(drop=True)


# --------------------------------------------------------------------------- what TRL wrote (fixture checks)


@pytest.mark.parametrize("name", VARIANTS)
def test_trl_wrote_parquet_logs_and_checkpoints(trl_root: Path, name: str) -> None:
    """The run is what the spec says: one parquet per step, TRL's columns, its metrics and checkpoints."""
    variant = specs.TRL_VARIANTS[name]
    run = trl_root / name
    steps = frames(trl_root, name)
    assert sorted(steps) == list(range(1, specs.MAX_STEPS + 1))
    expected_columns = [
        "step",
        "prompt",
        "completion",
        *variant.reward_funcs,
        *sorted(variant.extra_numeric + variant.extra_text),
        "advantage",
    ]
    for frame in steps.values():
        assert list(frame.columns) == expected_columns
        assert len(frame) == specs.BATCH
        for i in range(0, specs.BATCH, specs.NUM_GENERATIONS):  # groups are consecutive rows of one prompt
            assert len({E.text_of(p) for p in frame["prompt"][i : i + specs.NUM_GENERATIONS]}) == 1
    manifest = json.loads((trl_root / "manifest.json").read_text())["runs"][name]
    assert manifest["reward_func_names"] == list(variant.reward_funcs)
    assert manifest["reward_weights"] == list(variant.weights().values())
    log = E.trl_log(run)
    assert sorted(log) == sorted(steps)
    for entry in log.values():
        assert {"reward", "reward_std", "frac_reward_zero_std"} <= entry.keys()
        assert {f"rewards/{fn}/mean" for fn in variant.reward_funcs} <= entry.keys()
    for step in range(specs.SAVE_STEPS, specs.MAX_STEPS + 1, specs.SAVE_STEPS):
        state = json.loads((run / f"checkpoint-{step}" / "trainer_state.json").read_text())
        assert [h for h in state["log_history"] if "reward" in h] == [log[s] for s in range(1, step + 1)]
    assert (run / "runs").is_dir() == variant.tensorboard
    assert (run / specs.RL_BOARD_TOML).is_file() == bool(variant.reward_weights)


def test_the_runs_cover_the_cases(trl_root: Path) -> None:
    """Ties (zero-variance groups), all-None rows and one-None rows really occur in the real runs."""
    shares = [h["frac_reward_zero_std"] for h in E.trl_log(trl_root / "plain").values()]
    assert any(s > 0 for s in shares) and any(s < 1 for s in shares)
    rows = pd.concat(frames(trl_root, "unscorable").values())
    missing = rows[["judge_reward", "format_reward"]].isna()
    assert missing.all(axis=1).any(), "no row where every reward function returned None"
    assert (missing.any(axis=1) & ~missing.all(axis=1)).any(), "no row where only one function returned None"
    prompt = frames(trl_root, "conversational")[1]["prompt"][0]
    assert [m["role"] for m in prompt] == ["system", "user"], "TRL keeps conversational prompts as messages"


# --------------------------------------------------------------------------- rows and text


@pytest.mark.parametrize("name", VARIANTS)
def test_sample_count_per_step(trl_root: Path, stores: dict[str, RolloutStore], name: str) -> None:
    written = {step: len(frame) for step, frame in frames(trl_root, name).items()}
    assert stores[name].samples_per_step() == written


@pytest.mark.parametrize("name", VARIANTS)
def test_every_row_read(stores: dict[str, RolloutStore], name: str) -> None:
    """No row of TRL's parquet is refused as a bad line."""
    report = stores[name].report
    assert report.bad_line_count == 0, [(b.file, b.line, b.reason) for b in report.bad_lines[:3]]


@pytest.mark.parametrize("name", VARIANTS)
def test_prompt_and_completion_text(trl_root: Path, stores: dict[str, RolloutStore], name: str) -> None:
    """Plain runs: the same strings, row by row. Conversational: every message's content is in the text."""
    for step, frame in frames(trl_root, name).items():
        got = rl_board_rows(stores[name], step, ["prompt", "response"])
        assert len(got) == len(frame), f"step {step}"
        for i, row in frame.iterrows():
            prompt, response = got.at[i, "prompt"], got.at[i, "response"]
            if specs.TRL_VARIANTS[name].conversational:
                assert all(c in prompt for c in E.contents(row["prompt"])), (step, i, prompt)
                assert all(c in response for c in E.contents(row["completion"])), (step, i, response)
            else:
                assert (prompt, response) == (row["prompt"], row["completion"]), (step, i)


# --------------------------------------------------------------------------- rewards


@pytest.mark.parametrize("name", VARIANTS)
def test_reward_per_row_is_trl_weighted_sum(
    trl_root: Path, stores: dict[str, RolloutStore], name: str
) -> None:
    """reward = sum of weight x function value over the functions that scored the row; NaN when none did."""
    weights = specs.TRL_VARIANTS[name].weights()
    for step, frame in frames(trl_root, name).items():
        want = E.weighted_reward(frame, weights)
        got = rl_board_rows(stores[name], step, ["reward"])["reward"].to_numpy(dtype=np.float64)
        assert len(got) == len(want), f"step {step}: {len(got)} rewards for {len(want)} rows"
        bad = [(i, w, g) for i, (w, g) in enumerate(zip(want, got, strict=True)) if not E.close(w, g, 1e-6)]
        assert not bad, f"step {step}: (row, TRL reward, rl-board reward) differ: {bad[:5]}"


@pytest.mark.parametrize("name", VARIANTS)
def test_reward_components_are_the_reward_functions(
    trl_root: Path, stores: dict[str, RolloutStore], name: str
) -> None:
    """Each reward function is a component column holding TRL's values (NaN kept); nothing else is."""
    variant = specs.TRL_VARIANTS[name]
    store = stores[name]
    assert sorted(store.reward_components) == sorted(variant.reward_funcs)
    for step, frame in frames(trl_root, name).items():
        got = rl_board_rows(store, step, list(variant.reward_funcs))
        for fn in variant.reward_funcs:
            want = frame[fn].to_numpy(dtype=np.float64)
            values = got[fn].to_numpy(dtype=np.float64)
            assert all(E.close(a, b, 1e-9) for a, b in zip(want, values, strict=True)), (step, fn)


@pytest.mark.parametrize("name", WITH_EXTRAS)
def test_log_extra_columns_kept_and_not_in_reward(
    trl_root: Path, stores: dict[str, RolloutStore], name: str
) -> None:
    """``log_extra`` columns stay columns with TRL's values; a numeric one is not a reward component."""
    variant = specs.TRL_VARIANTS[name]
    store = stores[name]
    extras = list(variant.extra_numeric + variant.extra_text)
    assert set(variant.extra_numeric) <= set(store.numeric_extras)
    assert not set(variant.extra_numeric) & set(store.reward_components)
    for step, frame in frames(trl_root, name).items():
        got = rl_board_rows(store, step, [*extras, "reward"])
        for column in extras:
            assert got[column].tolist() == frame[column].tolist(), (step, column)
        with_extra = E.weighted_reward(frame, variant.weights()) + frame[list(variant.extra_numeric)].sum(
            axis=1
        )
        summed = [E.close(g, w, 1e-9) for g, w in zip(got["reward"], with_extra, strict=True)]
        assert not any(summed), (
            f"step {step}: the log_extra column {variant.extra_numeric} was added to reward"
        )


# ------------------------------------------------------------------------- per-step numbers vs TRL's own logs


@pytest.mark.parametrize("name", VARIANTS)
def test_step_mean_reward_matches_trl_log(trl_root: Path, stores: dict[str, RolloutStore], name: str) -> None:
    """rl-board's per-step mean reward (unscored rows left out) == TRL's logged ``reward``."""
    log = E.trl_log(trl_root / name)
    summary = stores[name].step_summary().set_index("step")
    assert sorted(summary.index) == sorted(log)
    diffs = {
        s: (log[s]["reward"], summary.at[s, "reward_mean"])
        for s in log
        if not E.close(log[s]["reward"], summary.at[s, "reward_mean"])
    }
    assert not diffs, f"step: (TRL reward, rl-board reward_mean): {diffs}"


@pytest.mark.parametrize("name", VARIANTS)
def test_function_means_match_trl_log(trl_root: Path, stores: dict[str, RolloutStore], name: str) -> None:
    """Per reward function, rl-board's per-step mean == TRL's ``rewards/<fn>/mean``."""
    variant = specs.TRL_VARIANTS[name]
    log = E.trl_log(trl_root / name)
    summary = stores[name].column_summary(list(variant.reward_funcs)).set_index("step")
    for fn in variant.reward_funcs:
        assert f"{fn}_mean" in summary.columns, f"no per-step mean of {fn}: {list(summary.columns)}"
        for step, entry in log.items():
            assert E.close(entry[f"rewards/{fn}/mean"], summary.at[step, f"{fn}_mean"]), (step, fn)


@pytest.mark.parametrize("name", VARIANTS)
def test_zero_variance_share_matches_frac_reward_zero_std(
    trl_root: Path, stores: dict[str, RolloutStore], name: str
) -> None:
    """rl-board's share of zero-variance groups == TRL's ``frac_reward_zero_std`` (groups all have G
    samples)."""
    log = E.trl_log(trl_root / name)
    stats = stores[name].group_stats().set_index("step")
    got = {s: float(stats.at[s, "zero_variance_share"]) if s in stats.index else None for s in log}
    want = {s: float(log[s]["frac_reward_zero_std"]) for s in log}
    assert got == pytest.approx(want), f"rl-board {got} vs TRL {want}"


def test_expected_zero_std_share_agrees_with_trl(trl_root: Path) -> None:
    """The tests' own reading of ``frac_reward_zero_std`` (per sample, NaN rows out) reproduces TRL's
    numbers."""
    for name, variant in specs.TRL_VARIANTS.items():
        log = E.trl_log(trl_root / name)
        for step, frame in frames(trl_root, name).items():
            share = E.zero_std_share(E.weighted_reward(frame, variant.weights()), specs.NUM_GENERATIONS)
            assert share == pytest.approx(log[step]["frac_reward_zero_std"]), (name, step)
            assert E.close(E.nanmean(E.weighted_reward(frame, variant.weights())), log[step]["reward"]), (
                name,
                step,
            )


# --------------------------------------------------------------------------- groups


@pytest.mark.parametrize("name", VARIANTS)
def test_groups_are_the_generations_of_one_prompt(
    trl_root: Path, stores: dict[str, RolloutStore], name: str
) -> None:
    """One group per prompt of the step, each of ``num_generations`` samples (TRL writes a group as
    consecutive rows)."""
    for step, frame in frames(trl_root, name).items():
        assert step in stores[name].steps, f"rl-board has no step {step} (its steps: {stores[name].steps})"
        table = stores[name].groups(step=step)
        assert table["samples"].tolist() == [specs.NUM_GENERATIONS] * GROUPS_PER_STEP, f"step {step}"
        shown = [str(p) for p in table["prompt"]]
        for i in range(0, specs.BATCH, specs.NUM_GENERATIONS):
            prompt = frame["prompt"][i]
            if specs.TRL_VARIANTS[name].conversational:
                holding = [g for g in shown if all(c in g for c in E.contents(prompt))]
                assert len(holding) == 1, (step, E.contents(prompt), shown)
            else:
                assert shown.count(prompt) == 1, (step, prompt, shown)


# --------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("name", VARIANTS)
def test_cli_summary_json(trl_root: Path, tmp_path: Path, name: str) -> None:
    """``python -m rl_board summary RUN --json`` (a subprocess, as a user runs it) agrees with TRL."""
    run = trl_root / name / "completions"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rl_board",
            "summary",
            str(run),
            "--json",
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    written = {step: len(frame) for step, frame in frames(trl_root, name).items()}
    assert data["samples_per_step"] == {str(k): v for k, v in written.items()}
    log = E.trl_log(trl_root / name)
    means = {row["step"]: row["reward_mean"] for row in data["step_stats"]}
    assert {s: E.close(log[s]["reward"], means.get(s)) for s in log} == dict.fromkeys(log, True), (
        f"TRL {[log[s]['reward'] for s in sorted(log)]} vs rl-board {[means.get(s) for s in sorted(log)]}"
    )


# --------------------------------------------------------------------------- rl-board's own callback


@pytest.fixture(scope="module")
def callback_store(trl_root: Path, real_cache: Path) -> RolloutStore:
    return RolloutStore.open(trl_root / "callback" / specs.CALLBACK_DIR, cache_dir=real_cache)


def test_callback_rows_and_text(trl_root: Path, callback_store: RolloutStore) -> None:
    steps = frames(trl_root, "callback")
    assert callback_store.samples_per_step() == {s: len(f) for s, f in steps.items()}
    for step, frame in steps.items():
        got = rl_board_rows(callback_store, step, ["prompt", "response"])
        assert got["prompt"].tolist() == frame["prompt"].tolist()
        assert got["response"].tolist() == frame["completion"].tolist()


def test_callback_rewards_match_trl(trl_root: Path, callback_store: RolloutStore) -> None:
    """The callback's JSONL gives TRL's per-row rewards, per-step means and zero-variance share."""
    variant = specs.TRL_VARIANTS["callback"]
    log = E.trl_log(trl_root / "callback")
    for step, frame in frames(trl_root, "callback").items():
        want = E.weighted_reward(frame, variant.weights())
        got = rl_board_rows(callback_store, step, ["reward", *variant.reward_funcs, *variant.extra_numeric])
        assert all(E.close(a, b) for a, b in zip(want, got["reward"], strict=True)), step
        for fn in variant.reward_funcs:
            assert all(E.close(a, b, 1e-9) for a, b in zip(frame[fn], got[fn], strict=True)), (step, fn)
        assert (
            got[list(variant.extra_numeric)].to_numpy().tolist()
            == frame[list(variant.extra_numeric)].to_numpy().tolist()
        )
    summary = callback_store.step_summary().set_index("step")
    stats = callback_store.group_stats().set_index("step")
    for step, entry in log.items():
        assert E.close(entry["reward"], summary.at[step, "reward_mean"]), step
        assert float(stats.at[step, "zero_variance_share"]) == pytest.approx(entry["frac_reward_zero_std"]), (
            step
        )
    assert sorted(callback_store.reward_components) == sorted(variant.reward_funcs)


def test_callback_wrote_every_row(trl_root: Path) -> None:
    facts = json.loads((trl_root / "manifest.json").read_text())["runs"]["callback"]
    assert facts["callback_problems"] == 0
    assert facts["callback_samples"] == specs.BATCH * specs.MAX_STEPS


# ------------------------------------------------------------------------- TensorBoard beside the completions


def test_tensorboard_scalars_match_trl_log(trl_root: Path, real_cache: Path) -> None:
    """``report_to=["tensorboard"]``: rl-board's metrics reader finds TRL's ``train/*`` scalars with its
    values."""
    bundle = load_metrics(trl_root / "plain", cache_dir=real_cache)
    runs = [r.run for r in bundle.runs if r.kind == "tensorboard"]
    assert len(runs) == 1 and runs[0].startswith("runs/"), [r.run for r in bundle.runs]
    log = E.trl_log(trl_root / "plain")
    for key in ("reward", "frac_reward_zero_std", "rewards/length_reward/mean", "rewards/vowel_reward/mean"):
        series = bundle.series(runs[0], f"train/{key}")
        got = dict(zip(series["step"].astype(int), series["value"], strict=True))
        assert sorted(got) == sorted(log), key
        assert all(E.close(got[s], log[s][key]) for s in log), (key, got)
    assert not math.isnan(float(np.nanmean(bundle.series(runs[0], "train/loss")["value"])))
