"""The folder names a Spark ``partitionBy("step")`` write makes, without Spark (tests/spark runs the real
thing).

``step=-1`` (a negative step), ``step=2.0`` (a double step column), ``step=__HIVE_DEFAULT_PARTITION__`` (rows
whose step was null) and ``_temporary/0/task_*/step=N/`` (a job's uncommitted output) are one run, not runs of
their own; the null-step rows are bad lines of it, not samples of a step guessed from a folder above.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rl_board.formats import step_from_name
from rl_board.rollouts.store import RolloutStore


@pytest.mark.parametrize(
    ("name", "step"),
    [
        ("step=-1", -1),
        ("step=0", 0),
        ("step=12", 12),
        ("step=2.0", 2),
        ("step=__HIVE_DEFAULT_PARTITION__", None),
    ],
)
def test_step_of_a_spark_partition_folder(name: str, step: int | None) -> None:
    # the run folder above holds a step number: a partition's own answer wins, a null partition's too
    assert step_from_name(Path("/runs/step_7_eval") / name / "part-00000-1a2b.c000.snappy.parquet") == step


def _part(folder: Path, prompts: list[str | None]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table({"prompt": prompts, "response": ["r"] * len(prompts), "reward": [1.0] * len(prompts)})
    pq.write_table(table, folder / "part-00000-1a2b.c000.snappy.parquet")


def test_a_spark_layout_is_one_run(tmp_path: Path) -> None:
    out = tmp_path / "step_7.parquet"  # a step number in the dataset's own name is not a partition's step
    _part(out / "step=-1", ["a", "b"])
    _part(out / "step=0", ["c"])
    _part(out / "step=2.0", ["d", "e", "f"])
    _part(out / "step=__HIVE_DEFAULT_PARTITION__", ["no step", None])
    _part(out / "_temporary" / "0" / "task_202601010000_0001_m_000000" / "step=3", ["uncommitted"])
    (out / "_SUCCESS").touch()

    assert list(RolloutStore.list_runs(out, cache_dir=tmp_path / "list")["run"]) == ["."]
    store = RolloutStore.open(out, cache_dir=tmp_path / "cache")
    assert store.samples_per_step() == {-1: 2, 0: 1, 2: 3}
    assert store.report.bad_line_count == 2
    assert {b.reason for b in store.report.bad_lines} == {"missing 'step'"}
