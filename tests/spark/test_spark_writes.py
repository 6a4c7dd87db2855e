"""Spark writes, rl-board reads: raw rank JSONL files through the README's plain Spark write, opened as a run.

The answers are computed by hand from the logged lines (``by_hand``: ``json.loads`` and ``math.fsum``, no
rl-board code) and compared with the same JSONL opened by rl-board: sample counts per step exactly, the
per-step means (reward, length, KL from the token arrays) to 1e-12 relative: Spark stores a step's samples
in another order, and a sum taken in another order may differ in its last bit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from rl_board.rollouts import lazy
from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.store import RolloutStore
from tests.helpers.spark import by_hand, rl_board, run_recipe, write_rich_run

SPEC = DemoSpec(steps=6, samples=16, ranks=2, tokens=24, seed=11)
SAMPLE_KEYS = ["step", "prompt", "response", "reward", "kl_mean", "n_tokens", "ref_reward"]


def spark_write(spark: Any, root: Path) -> Path:
    """The README's recipe: ``root/grpo_7b/raw/*.jsonl`` -> ``root/grpo_7b.parquet``."""
    run_recipe("json", spark, root)
    return root / "grpo_7b.parquet"


def raw_folder(root: Path) -> Path:
    return root / "grpo_7b" / "raw"


def by_content(store: RolloutStore) -> pd.DataFrame:
    """A run's samples in an order that does not depend on which file or row holds them."""
    frame = store.samples(columns=SAMPLE_KEYS)[SAMPLE_KEYS]
    return frame.sort_values(SAMPLE_KEYS[:4]).reset_index(drop=True)


def same_frames(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-12, atol=0)


def same_stats(a: list[dict], b: list[dict]) -> None:
    """``summary --json`` step stats: the same keys, counts exactly, means to 1e-12."""
    assert [sorted(r) for r in a] == [sorted(r) for r in b]
    for x, y in zip(a, b, strict=True):
        assert x == {k: pytest.approx(v, rel=1e-12) for k, v in y.items()}


def matches_hand(stats: list[dict[str, Any]], hand: dict[int, dict[str, float]]) -> None:
    """Step stats (``step_summary()`` rows or ``summary --json``'s ``step_stats``) against ``by_hand``."""
    assert [r["step"] for r in stats] == list(hand)
    for row in stats:
        want = hand[row["step"]]
        assert row["samples"] == want["samples"], row["step"]
        got = [row["reward_mean"], row["length_mean"], row["kl_mean"]]
        assert got == pytest.approx([want["reward"], want["length"], want["kl"]], rel=1e-12), row["step"]


def opened(root: Path, where: Path, name: str) -> RolloutStore:
    return RolloutStore.open(where, cache_dir=root / f"cache-{name}")


@pytest.fixture(scope="module")
def demo(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo run's rank files and the README's Spark write of them (``root/grpo_7b.parquet``)."""
    root = tmp_path_factory.mktemp("spark-writes")
    write_run(raw_folder(root), SPEC)
    spark_write(spark, root)
    return root


def test_a_plain_spark_write_is_the_run_it_came_from(demo: Path) -> None:
    out = demo / "grpo_7b.parquet"
    parts = sorted(p.relative_to(out).as_posix() for p in out.glob("step=*/*.parquet"))
    assert (out / "_SUCCESS").exists() and list(out.rglob(".*.crc")), (
        "Spark's bookkeeping is there to pass over"
    )
    assert parts and all(p.split("/")[1].startswith("part-") and p.endswith(".snappy.parquet") for p in parts)
    assert "step" not in pq.read_schema(out / parts[0]).names, "Spark keeps the step in the folder name only"

    raw, store = opened(demo, raw_folder(demo), "raw"), opened(demo, out, "spark")
    assert not isinstance(store._view, lazy.LazyRunView), "only logged columns: read through the cache"
    assert sorted(f.name for f in store.report.files) == parts
    assert [f.error for f in store.report.files if f.error] == [] and store.report.bad_lines == []
    assert store.samples_per_step() == raw.samples_per_step() == {s: SPEC.samples for s in range(SPEC.steps)}
    assert store.fields == raw.fields
    matches_hand(store.step_summary().to_dict("records"), by_hand(raw_folder(demo)))
    same_frames(store.step_summary(), raw.step_summary())  # every column of it, stds and ref rewards too
    same_frames(by_content(store), by_content(raw))
    assert list(RolloutStore.list_runs(out, cache_dir=demo / "cache-list")["run"]) == ["."]


def test_spark_computes_the_same_kl_from_the_token_arrays(spark: Any, demo: Path) -> None:
    """k3 per token (exp(-r) - 1 + r, r = logprobs - ref_logprobs), averaged per sample, then per step, in
    Spark SQL over the raw JSON: the KL rl-board derives from the Spark-written dataset."""
    raw = spark.read.json(str(raw_folder(demo) / "*.jsonl"))
    sample_kl = (
        "aggregate(zip_with(logprobs, ref_logprobs, (a, b) -> expm1(-(a - b)) + (a - b)), 0D, "
        "(acc, k) -> acc + k) / size(logprobs)"
    )
    rows = raw.selectExpr("step", f"{sample_kl} AS kl").groupBy("step").avg("kl").collect()
    by_spark = {r["step"]: r["avg(kl)"] for r in rows}
    summary = opened(demo, demo / "grpo_7b.parquet", "spark").step_summary()
    by_rl_board = dict(zip(summary["step"], summary["kl_mean"], strict=True))
    assert by_spark.keys() == by_rl_board.keys()
    for step, value in by_rl_board.items():
        assert value == pytest.approx(by_spark[step], rel=1e-12), step


def test_summary_cli_reads_the_spark_dataset(demo: Path) -> None:
    results = {
        name: rl_board("summary", str(where), "--json", cache_dir=demo / f"cli-{name}")
        for name, where in (("raw", raw_folder(demo)), ("spark", demo / "grpo_7b.parquet"))
    }
    for result in results.values():
        assert result.returncode == 0, result.stderr
    raw, spark = (json.loads(results[k].stdout) for k in ("raw", "spark"))
    assert spark["samples"] == raw["samples"] == SPEC.steps * SPEC.samples
    assert spark["samples_per_step"] == raw["samples_per_step"]
    matches_hand(spark["step_stats"], by_hand(raw_folder(demo)))
    same_stats(spark["step_stats"], raw["step_stats"])
    assert spark["bad_lines"] == [] and all(f["error"] is None for f in spark["files"])
    assert all(f["name"].endswith(".snappy.parquet") for f in spark["files"])
    assert [s["path"] for s in spark["skipped"]] == ["_SUCCESS"], "only Spark's marker is named, not read"


def test_nested_extras_nan_and_conversations(spark: Any, tmp_path: Path) -> None:
    """RolloutWriter rank files with what real runs add: nested extra keys (a dict, a list of lists), a key
    that is always null, chat messages, a NaN reward and a NaN log-prob. Spark's JSON reader unifies the
    dicts into one struct (absent keys become null); rl-board reads every sample, number and turn as from
    the JSONL and says the same about the unscored sample."""
    write_rich_run(raw_folder(tmp_path))
    out = spark_write(spark, tmp_path)
    raw, store = opened(tmp_path, raw_folder(tmp_path), "raw"), opened(tmp_path, out, "spark")
    assert store.samples_per_step() == raw.samples_per_step() == {0: 6, 1: 6, 2: 6}
    assert store.fields == raw.fields
    assert {"meta", "pairs", "messages", "finish_reason"} <= set(store.fields)
    assert "note" not in store.fields, "a key that is always null is no field, on either path"
    same_frames(store.step_summary(), raw.step_summary())
    assert raw.step_summary()["reward_count"].tolist() == [6, 5, 6], "the NaN reward is no reward"
    assert [w.reason for w in store.report.warnings] == [w.reason for w in raw.report.warnings] != []
    nonfinite = [s.samples(columns=["nonfinite_tokens"])["nonfinite_tokens"].sum() for s in (store, raw)]
    assert nonfinite == [1, 1], "the NaN log-prob counted on both paths"
    pd.testing.assert_frame_equal(store.trajectory_summary(), raw.trajectory_summary())
    one = store.samples(step=2, filters=None, columns=["prompt", "meta"]).sort_values("prompt").iloc[-1]
    assert one["meta"]["a"] == 5 and list(one["meta"]["tags"]) == ["x"] * 5


def test_steps_appended_by_spark_are_followed(spark: Any, demo: Path, tmp_path: Path) -> None:
    """A job that appends each new batch of steps (``mode("append")``): a run already open sees it stale,
    and a refresh reads the new step folders and the new files of an old step."""
    raw = spark.read.json(str(raw_folder(demo) / "*.jsonl"))
    out = tmp_path / "appended.parquet"
    raw.filter("step < 2").write.partitionBy("step").parquet(str(out))
    store = opened(tmp_path, out, "follow")
    assert store.samples_per_step() == {0: SPEC.samples, 1: SPEC.samples}
    raw.filter("step >= 2").write.mode("append").partitionBy("step").parquet(str(out))
    assert store.stale() and store.refresh()
    assert store.samples_per_step() == {s: SPEC.samples for s in range(SPEC.steps)}
    raw.filter("step = 5").write.mode("append").partitionBy("step").parquet(str(out))  # step 5 twice
    assert store.stale() and store.refresh()
    assert (
        store.samples_per_step()[5] == 2 * SPEC.samples
        and store.num_samples == (SPEC.steps + 1) * SPEC.samples
    )


def test_a_spark_rewrite_of_an_export_is_read_in_place(spark: Any, demo: Path, tmp_path: Path) -> None:
    """A Spark job that writes rl-board's columns (here an export read and written again: several part files
    per step, no index, ``_SUCCESS``) is opened in place, with the run's own answers."""
    exported = tmp_path / "export"
    done = rl_board("export", str(raw_folder(demo)), str(exported), cache_dir=tmp_path / "cache-export")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "rewritten.parquet"
    spark.read.parquet(str(exported)).repartition(2).write.partitionBy("step").parquet(str(out))
    assert len(list(out.glob("step=0/*.parquet"))) == 2 and not (out / "_rl_board").exists()
    raw, store = opened(tmp_path, raw_folder(demo), "raw"), opened(tmp_path, out, "rewritten")
    assert isinstance(store._view, lazy.LazyRunView) and "read in place" in store.report.read_as
    assert not (tmp_path / "cache-rewritten").exists(), "nothing copied into a cache"
    assert store.samples_per_step() == raw.samples_per_step()
    same_frames(store.step_summary(), raw.step_summary())
    same_frames(by_content(store), by_content(raw))
