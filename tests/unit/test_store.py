"""RolloutStore: merging ranks, queries, sample detail, run discovery."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rl_board.errors import InvalidArgumentError, NotFoundError
from rl_board.rollouts.filters import SampleFilter
from rl_board.rollouts.store import RolloutStore


def test_ranks_are_merged_by_step(train_run: Path, cache_dir: Path) -> None:
    store = RolloutStore.open(train_run, cache_dir=cache_dir)
    assert store.num_samples == 48
    assert store.steps == [0, 1, 2, 3, 4, 5]
    assert set(store.samples_per_step().values()) == {8}
    rows = store.samples(step=2)
    assert (
        rows["file"].astype(str).tolist()
        == ["rollout_data_rank_0.jsonl"] * 4 + ["rollout_data_rank_1.jsonl"] * 4
    )
    assert rows["sample"].tolist() == list(range(8))


def test_irregular_steps_sort_numerically(tmp_path: Path, cache_dir: Path, write_lines) -> None:
    run = tmp_path / "run"
    write_lines(run / "a.jsonl", [{"step": s, "reward": float(s)} for s in (200, 0, 1000, 100)])
    write_lines(run / "b.jsonl", [{"step": "20", "reward": 1.0}])
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.steps == [0, 20, 100, 200, 1000]
    assert store.step_summary()["step"].tolist() == [0, 20, 100, 200, 1000]


def test_every_field_and_extra_keys_are_kept(train_run: Path, cache_dir: Path) -> None:
    store = RolloutStore.open(train_run, cache_dir=cache_dir)
    for name in (
        "prompt",
        "response",
        "reward",
        "response_tokens",
        "logprobs",
        "ref_logprobs",
        "values",
        "token_rewards",
        "ref_response",
        "ref_reward",
        "ground_truth",
        "valid_reward",
        "ref_valid_reward",
        "rank_seed",
    ):
        assert name in store.fields
    assert store.extra_fields == ["rank_seed"]
    assert "rank_seed" in store.samples(step=0).columns


def test_step_summary_matches_the_samples(train_run: Path, cache_dir: Path) -> None:
    store = RolloutStore.open(train_run, cache_dir=cache_dir)
    summary = store.step_summary().set_index("step")
    rows = store.samples(step=3)
    assert summary.loc[3, "reward_mean"] == pytest.approx(rows["reward"].mean())
    assert summary.loc[3, "reward_std"] == pytest.approx(rows["reward"].std(ddof=0))
    assert summary.loc[3, "kl_max"] == pytest.approx(rows["kl_mean"].max())
    assert summary.loc[3, "length_mean"] == pytest.approx(rows["n_tokens"].mean())


def test_samples_sorted_by_kl(train_run: Path, cache_dir: Path) -> None:
    store = RolloutStore.open(train_run, cache_dir=cache_dir)
    rows = store.samples(step=4, sort_by="kl_mean", descending=True)
    kl = rows["kl_mean"].to_numpy()
    assert np.all(kl[:-1] >= kl[1:])
    top = store.sample(step=4, index=int(rows["sample"].iloc[0]))
    assert top.fields["reward"] == pytest.approx(rows["reward"].iloc[0])


def test_filters_ranges_and_text(train_run: Path, cache_dir: Path) -> None:
    store = RolloutStore.open(train_run, cache_dir=cache_dir)
    everything = store.samples()
    flt = SampleFilter.build(ranges={"reward": (0.5, None)})
    assert store.count(filters=flt) == int((everything["reward"] >= 0.5).sum())
    step_rows = store.samples(step=1)
    gt = str(step_rows["ground_truth"].iloc[0])
    found = store.samples(step=1, filters=SampleFilter.build(text=gt))
    assert len(found) >= 1 and (found["ground_truth"] == gt).any()
    regex = SampleFilter.build(text=r"what is \d+ \+ \d+", regex=True)
    assert store.count(filters=regex) == 48  # case-insensitive by default
    with pytest.raises(InvalidArgumentError):
        SampleFilter.build(text="(", regex=True)


def test_limit_and_offset_page_through_a_step(train_run: Path, cache_dir: Path) -> None:
    store = RolloutStore.open(train_run, cache_dir=cache_dir)
    whole = store.samples(step=0, sort_by="reward")
    page = store.samples(step=0, sort_by="reward", offset=3, limit=2)
    assert page["sample"].tolist() == whole["sample"].tolist()[3:5]


def test_sample_detail_tokens(train_run: Path, cache_dir: Path) -> None:
    store = RolloutStore.open(train_run, cache_dir=cache_dir)
    detail = store.sample(step=5, index=0)
    raw = json.loads((train_run / "rollout_data_rank_0.jsonl").read_text().splitlines()[detail.line - 1])
    assert detail.fields["response"] == raw["response"]
    n = min(len(raw["response_tokens"]), len(raw["logprobs"]))
    assert len(detail.tokens) == n
    expected = np.array(raw["logprobs"][:n]) - np.array(raw["ref_logprobs"][:n])
    assert np.allclose(detail.tokens["log_ratio"], expected, atol=1e-6)
    assert detail.length_mismatch == (len(raw["response_tokens"]) != len(raw["logprobs"]))


def test_bad_arguments_raise_clear_errors(train_run: Path, cache_dir: Path, tmp_path: Path) -> None:
    store = RolloutStore.open(train_run, cache_dir=cache_dir)
    with pytest.raises(InvalidArgumentError, match="step 99"):
        store.samples(step=99)
    with pytest.raises(InvalidArgumentError, match="not 8"):
        store.sample(step=0, index=8)
    with pytest.raises(InvalidArgumentError):
        store.samples(sort_by="logprobs")
    with pytest.raises(NotFoundError):
        RolloutStore.open(tmp_path / "missing", cache_dir=cache_dir)


def test_eval_run_without_token_fields(eval_run: Path, cache_dir: Path) -> None:
    store = RolloutStore.open(eval_run, cache_dir=cache_dir)
    assert store.steps == [0, 100, 200, 400, 800, 1000]
    assert store.samples_per_step()[1000] == 5
    assert not store.has("kl_mean")
    summary = store.step_summary()
    assert "kl_mean" not in summary.columns and "ref_reward_mean" in summary.columns
    detail = store.sample(step=0, index=0)
    assert detail.tokens.empty


def test_nested_runs_are_listed(tmp_path: Path, cache_dir: Path, write_lines) -> None:
    root = tmp_path / "root"
    write_lines(root / "exp_a" / "train" / "r0.jsonl", [{"step": 0, "reward": 1}])
    write_lines(root / "exp_b" / "x.jsonl", [{"step": 0, "reward": 1}, {"step": 1, "reward": 2}])
    (root / "exp_c").mkdir()
    (root / "exp_c" / "notes.txt").write_text("no jsonl here")
    runs = RolloutStore.list_runs(root, cache_dir=cache_dir)
    assert runs["run"].tolist() == ["exp_a/train", "exp_b"]
    assert runs["samples"].isna().all()  # not opened yet
    RolloutStore.open(root / "exp_b", cache_dir=cache_dir)
    runs = RolloutStore.list_runs(root, cache_dir=cache_dir).set_index("run")
    assert runs.loc["exp_b", "samples"] == 2 and runs.loc["exp_b", "steps"] == 2


def test_empty_run_and_empty_files(tmp_path: Path, cache_dir: Path) -> None:
    run = tmp_path / "empty"
    run.mkdir()
    (run / "a.jsonl").write_text("")
    (run / "notes.md").write_text("ignored")
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.num_samples == 0 and store.steps == []
    assert store.step_summary().empty
    assert store.samples().empty
    assert [f.name for f in store.report.files] == ["a.jsonl"]


def test_list_valued_user_fields_are_not_sortable(tmp_path: Path, cache_dir: Path, write_lines) -> None:
    run = tmp_path / "run"
    write_lines(
        run / "a.jsonl",
        [
            {"step": 0, "reward": 1.0, "tags": ["a", "b"], "judge": "x"},
            {"step": 0, "reward": 2.0, "tags": ["c"], "judge": "y"},
        ],
    )
    store = RolloutStore.open(run, cache_dir=cache_dir)
    with pytest.raises(InvalidArgumentError, match="cannot sort by 'tags'"):
        store.samples(step=0, sort_by="tags")
    assert store.samples(step=0, sort_by="judge", descending=True)["judge"].tolist() == ["y", "x"]


def test_files_linking_outside_allowed_roots_are_not_read(
    tmp_path: Path, cache_dir: Path, write_lines
) -> None:
    outside = write_lines(
        tmp_path / "outside" / "secret.jsonl", [{"step": 0, "reward": 1.0, "prompt": "secret"}]
    )
    run = tmp_path / "root" / "run"
    write_lines(run / "a.jsonl", [{"step": 1, "reward": 1.0}])
    (run / "b.jsonl").symlink_to(outside)
    store = RolloutStore.open(run, cache_dir=cache_dir, allowed_roots=[(tmp_path / "root").resolve()])
    assert store.steps == [1]
    errors = {f.name: f.error for f in store.report.files}
    assert "outside the served folders" in errors["b.jsonl"]
