"""rl-board exports, Spark reads: ``rl-board export RUN OUT`` (the CLI), then the README's Spark recipe.

Spark takes ``step`` from the ``step=N`` folders and skips rl-board's ``_rl_board/`` index; every
sample comes back once, with its token arrays as array columns holding the logged values.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.store import RolloutStore
from tests.helpers.spark import by_hand, rl_board, run_recipe, write_rich_run

SPEC = DemoSpec(steps=5, samples=12, ranks=2, tokens=20, seed=4)


def exported(run: Path, root: Path) -> tuple[RolloutStore, Path]:
    """``rl-board export RUN root/grpo_7b.parquet`` (where the README's recipe reads), and the run opened."""
    out = root / "grpo_7b.parquet"
    done = rl_board("export", str(run), str(out), cache_dir=root / "cache-export")
    assert done.returncode == 0, done.stderr
    return RolloutStore.open(run, cache_dir=root / "cache"), out


def per_step(names: dict[str, Any]) -> dict[int, tuple[int, float]]:
    """The recipe's ``per_step`` collected: {step: (samples, mean reward)}."""
    return {r["step"]: (r["samples"], r["reward"]) for r in names["per_step"].collect()}


def test_spark_reads_the_export(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import types as T

    run = tmp_path / "runs" / "grpo_7b"
    write_run(run, SPEC)
    store, out = exported(run, tmp_path)
    names = run_recipe("parquet", spark, tmp_path)
    samples = names["samples"]

    assert isinstance(samples.schema["step"].dataType, T.IntegerType), "step inferred from the folder names"
    files = sorted(Path(f.removeprefix("file:")).relative_to(out).as_posix() for f in samples.inputFiles())
    assert files == [f"step={s}/part-0.parquet" for s in store.steps], (
        "the index under _rl_board/ is not data"
    )
    assert (out / "_rl_board" / "index.arrow").exists()

    got, hand = per_step(names), by_hand(run)
    summary = store.step_summary()
    assert {s: n for s, (n, _) in got.items()} == {s: h["samples"] for s, h in hand.items()}
    assert (
        store.samples_per_step()
        == {s: SPEC.samples for s in range(SPEC.steps)}
        == {s: n for s, (n, _) in got.items()}
    )
    for step, mean in zip(summary["step"], summary["reward_mean"], strict=True):
        assert got[step][1] == pytest.approx(hand[step]["reward"], rel=1e-12) == mean, step

    floats, texts = T.ArrayType(T.FloatType()), T.ArrayType(T.StringType())
    assert [samples.schema[c].dataType for c in ("logprobs", "ref_logprobs", "response_tokens")] == [
        floats,
        floats,
        texts,
    ]
    logged = {
        (p.name, k): json.loads(line)
        for p in run.glob("*.jsonl")
        for k, line in enumerate(p.read_text().splitlines(), start=1)
    }
    rows = samples.select(
        "step", "file", "line", "logprobs", "ref_logprobs", "response_tokens", "n_tokens"
    ).collect()
    assert len(rows) == len(logged) == store.num_samples
    for row in rows:
        record = logged[(row["file"], row["line"])]
        assert row["step"] == record["step"] and row["response_tokens"] == record["response_tokens"]
        assert row["n_tokens"] == len(record["response_tokens"])
        for name in ("logprobs", "ref_logprobs"):  # kept as float32, as the cache keeps them
            assert np.array_equal(np.float32(row[name]), np.float32(record[name])), (row["file"], row["line"])


def test_spark_reads_nested_extras_and_nan_from_an_export(spark: Any, tmp_path: Path) -> None:
    """Nested extra keys come back as Spark structs and nested arrays, a key that is always null as an
    all-null column. A NaN reward makes Spark's ``avg`` NaN for its step; leaving NaN out, Spark's mean
    is rl-board's."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    run = tmp_path / "runs" / "grpo_7b"
    write_rich_run(run)
    store, _ = exported(run, tmp_path)
    names = run_recipe("parquet", spark, tmp_path)
    samples = names["samples"]

    got, hand = per_step(names), by_hand(run)
    assert {s: n for s, (n, _) in got.items()} == store.samples_per_step() == {0: 6, 1: 6, 2: 6}
    assert {s: h["samples"] for s, h in hand.items()} == {0: 6, 1: 6, 2: 6}
    assert math.isnan(got[1][1]) and [got[s][1] for s in (0, 2)] == pytest.approx(
        [hand[s]["reward"] for s in (0, 2)], rel=1e-12
    )
    scored = (
        samples.groupBy("step").agg(F.avg(F.when(~F.isnan("reward"), F.col("reward"))).alias("r")).collect()
    )
    summary = store.step_summary().set_index("step")["reward_mean"]
    assert {r["step"]: r["r"] for r in scored} == pytest.approx(
        {s: h["reward"] for s, h in hand.items()}, rel=1e-12
    )
    assert summary.to_dict() == pytest.approx({s: h["reward"] for s, h in hand.items()}, rel=1e-12)

    schema = samples.schema
    assert schema["meta"].dataType == T.StructType(
        [T.StructField("a", T.LongType()), T.StructField("tags", T.ArrayType(T.StringType()))]
    )
    assert schema["pairs"].dataType == T.ArrayType(T.ArrayType(T.LongType()))
    rows = samples.collect()  # every column Spark sees, nested ones included, reads
    assert len(rows) == 18 and all(r["note"] is None for r in rows)
    for row in rows:
        i = int(re.search(r"What is (\d+)", row["prompt"])[1])
        assert row["meta"].asDict() == {"a": i, "tags": ["x"] * i} and row["pairs"] == [[i, row["step"]], [1]]
        assert [m["role"] for m in json.loads(row["messages"])] == ["user", "assistant"]
    assert sum(r["nonfinite_tokens"] for r in rows) == 1
