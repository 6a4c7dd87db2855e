"""What Spark's partitioned write does with steps rl-board's own reader takes, and with a job still running.

Spark names each folder after the step's value as Spark typed it: ``step=-1`` for a negative step,
``step=1.0`` when the JSON steps are floats (``"step": 1.0``), ``step=__HIVE_DEFAULT_PARTITION__``
for rows without a step (a line missing it, or a broken line Spark keeps as ``_corrupt_record``), and
while a job runs its committed tasks wait under ``_temporary/0/task_*/step=N/``. The JSONL these come
from is one run to rl-board; the Spark write of it must be one run with the same samples.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.store import RolloutStore
from rl_board.writer import RolloutWriter
from tests.helpers.spark import rl_board, run_recipe


def raw_and_spark(spark: Any, root: Path) -> tuple[RolloutStore, RolloutStore, Path]:
    """``root/grpo_7b/raw`` opened, and the README's Spark write of it opened; and the written folder."""
    run_recipe("json", spark, root)
    out = root / "grpo_7b.parquet"
    raw = RolloutStore.open(root / "grpo_7b" / "raw", cache_dir=root / "cache-raw")
    return raw, RolloutStore.open(out, cache_dir=root / "cache-spark"), out


def runs_under(root: Path, cache: Path) -> list[str]:
    """The runs the start page (and ``rl-board runs``) lists under a root."""
    return list(RolloutStore.list_runs(root, cache_dir=cache)["run"])


def write_steps(folder: Path, steps: list[int], per_step: int = 3) -> None:
    with RolloutWriter(folder, rank=0) as writer:
        for step in steps:
            for i in range(per_step):
                writer.write(
                    step,
                    f"p{i}",
                    f"r{i}",
                    float(i + step),
                    response_tokens=["a", "b"],
                    logprobs=[-0.5, -0.25],
                    ref_logprobs=[-0.25, -0.25],
                )


def test_a_negative_step_comes_back_from_its_folder(spark: Any, tmp_path: Path) -> None:
    """RolloutWriter takes step -1 (an evaluation before training); Spark writes it to ``step=-1/``."""
    write_steps(tmp_path / "grpo_7b" / "raw", [-1, 0, 1])
    raw, store, out = raw_and_spark(spark, tmp_path)
    assert (out / "step=-1").is_dir()
    assert raw.samples_per_step() == {-1: 3, 0: 3, 1: 3}
    assert store.samples_per_step() == raw.samples_per_step()
    assert runs_under(out, tmp_path / "cache-list") == ["."], "step=-1 is a partition, not a run"


def test_whole_number_float_steps_come_back_from_their_folders(spark: Any, tmp_path: Path) -> None:
    """``"step": 1.0`` (a logger that writes ``float(step)``) is step 1 to rl-board's JSONL reader; Spark
    infers a double column and names the folders ``step=1.0``."""
    raw_dir = tmp_path / "grpo_7b" / "raw"
    raw_dir.mkdir(parents=True)
    lines = [
        {
            "step": float(step),
            "prompt": f"p{i}",
            "response": f"r{i}",
            "reward": float(i),
            "logprobs": [-0.5, -0.25],
            "ref_logprobs": [-0.25, -0.25],
        }
        for step in (1, 2)
        for i in range(3)
    ]
    (raw_dir / "rollout_data_rank_0.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    raw, store, out = raw_and_spark(spark, tmp_path)
    assert sorted(p.name for p in out.glob("step=*")) == ["step=1.0", "step=2.0"]
    assert raw.samples_per_step() == {1: 3, 2: 3}
    summary = rl_board("summary", str(out), "--json", cache_dir=tmp_path / "cache-cli")
    assert summary.returncode == 0, summary.stderr
    assert json.loads(summary.stdout)["samples_per_step"] == {"1": 3, "2": 3}
    assert store.samples_per_step() == raw.samples_per_step()


def test_rows_spark_could_not_place_are_reported(spark: Any, tmp_path: Path) -> None:
    """A line without a step and a broken line are bad lines of the JSONL run. Spark writes both (the broken
    one as ``_corrupt_record``, every other column null) to ``step=__HIVE_DEFAULT_PARTITION__/``: they
    belong to the run's load report, not to a run of their own."""
    raw_dir = tmp_path / "grpo_7b" / "raw"
    write_steps(raw_dir, [0, 1])
    with (raw_dir / "rollout_data_rank_0.jsonl").open("a") as f:
        f.write(json.dumps({"prompt": "no step", "response": "r", "reward": 1.0}) + "\n")
        f.write('{"step": 1, "prompt": "cut\n')
        f.write(json.dumps({"step": 1, "prompt": "p9", "response": "r9", "reward": 9.0}) + "\n")
    raw, store, out = raw_and_spark(spark, tmp_path)
    assert (out / "step=__HIVE_DEFAULT_PARTITION__").is_dir()
    assert raw.samples_per_step() == {0: 3, 1: 4} and raw.report.bad_line_count == 2
    assert store.samples_per_step() == raw.samples_per_step()
    assert store.report.bad_line_count == raw.report.bad_line_count, (
        f"the JSONL run reports {[(b.line, b.reason) for b in raw.report.bad_lines]}; "
        "the Spark write, nothing"
    )
    assert runs_under(out, tmp_path / "cache-list") == ["."]


def test_a_job_still_writing_is_not_listed_as_a_run(spark: Any, tmp_path: Path) -> None:
    """While a Spark job appends steps 2-3, the task that finished waits in ``_temporary/0/task_*/step=2/``
    (Hadoop's committer moves it into place when the whole job commits). The run stays one run: its
    steps so far, then all of them once the job is done, never the uncommitted files as a run beside it."""
    write_run(tmp_path / "raw", DemoSpec(steps=4, samples=8, ranks=2, tokens=12, seed=2))
    rows = spark.read.json(str(tmp_path / "raw" / "*.jsonl"))
    out, gate = tmp_path / "live.parquet", tmp_path / "gate"
    rows.filter("step < 2").write.partitionBy("step").parquet(str(out))
    store = RolloutStore.open(out, cache_dir=tmp_path / "cache")

    def hold_step_3(batches: Any) -> Any:  # runs in Spark's Python worker: waits for the gate file
        import os
        import time

        for batch in batches:
            if 3 in batch.column("step").to_pylist():
                while not os.path.exists(gate):
                    time.sleep(0.05)
            yield batch

    more = rows.filter("step >= 2").repartition(2, "step").mapInArrow(hold_step_3, rows.schema)
    job = threading.Thread(target=lambda: more.write.mode("append").partitionBy("step").parquet(str(out)))
    job.start()
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("_temporary/*/task_*/step=*/*.parquet")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(out.glob("_temporary/*/task_*/step=2/*.parquet")), "the job is under way, one task done"
        assert store.samples_per_step() == {0: 8, 1: 8}
        assert runs_under(out, tmp_path / "cache-list") == ["."]
    finally:
        gate.touch()
        job.join(timeout=120)
    assert not job.is_alive() and not (out / "_temporary").exists()
    assert store.stale() and store.refresh()
    assert store.samples_per_step() == {s: 8 for s in range(4)}
