"""W&B: wandb 0.31 itself logs the tracker test run offline (tests/helpers/wandb_writer.py, in a
subprocess with a temporary HOME), and rl-board reads the run log back without wandb.

Two runs: ``plain`` (``run.log(row, step=step)``, as verl and ROLL call it) and ``trl`` (as
transformers' callback and TRL's GRPOTrainer log: a declared step metric, no ``step=``, profiling rows
in between, a completions table logged twice at the last step). Only offline runs: an online run needs
the W&B server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rl_board.metrics.kind import RunSource
from rl_board.metrics.table import merge_results
from rl_board.metrics.wandb_log import WandbKind, logged_tables
from tests.helpers import tracker_truth, wandb_writer
from tests.helpers.tracker_writers import run_writer

WRITER = Path(wandb_writer.__file__)
KIND = WandbKind()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """Both runs, written once: variant -> {folder, start, end}."""
    out = tmp_path_factory.mktemp("wandb")
    home = out / "home"
    home.mkdir()
    printed = run_writer(
        [str(WRITER), str(out / "runs")], env=wandb_writer.environment(home), what="wandb writer"
    )
    lines = [json.loads(line) for line in printed.splitlines() if line.startswith("{")]
    return {line["variant"]: {**line, "folder": Path(line["folder"])} for line in lines}


def source_of(folder: Path) -> RunSource:
    (found,) = KIND.claim_folder(folder, [], [entry.name for entry in folder.iterdir()])
    assert found.whole and found.reason == "W&B run (offline)"
    return RunSource(run=folder.name, kind=KIND.name, path=found.path, files=found.files)


def truth_points(scalars: pd.DataFrame) -> dict[tuple[str, int], float]:
    chosen = scalars[scalars["tag"].isin(tracker_truth.TAGS)]
    out = {
        (str(t), int(s)): float(v)
        for t, s, v in zip(chosen["tag"], chosen["step"], chosen["value"], strict=True)
    }
    assert len(out) == len(chosen), "a (tag, step) point came twice"
    return out


def test_plain_run_points_are_exact(runs):
    result = KIND.read(source_of(runs["plain"]["folder"]), None)
    assert result.problems == []
    assert tracker_truth.mismatches(truth_points(result.scalars)) == []
    assert set(result.scalars["tag"]) == set(tracker_truth.TAGS)
    assert result.extras["step_source"].startswith("_step")


def test_plain_run_wall_times(runs):
    run = runs["plain"]
    scalars = KIND.read(source_of(run["folder"]), None).scalars
    assert scalars["wall_time"].between(run["start"], run["end"]).all()
    for _, series in scalars.groupby("tag"):
        assert series.sort_values("step")["wall_time"].is_monotonic_increasing


def test_plain_run_config_and_summary(runs):
    extras = KIND.read(source_of(runs["plain"]["folder"]), None).extras
    assert json.loads(extras["config_text"]) == tracker_truth.CONFIG
    assert extras["hparams"] == {
        "algorithm": "grpo",
        "lr": 1e-6,
        "rollout.n": 8,
        "rollout.temperature": 1.0,
        "model": "tiny-random",
    }
    last = {tag: tracker_truth.value(tag, step) for step, row in tracker_truth.logged_rows() for tag in row}
    assert all(tracker_truth.same_value(extras["summary"][tag], value) for tag, value in last.items())


def test_trl_run_is_at_the_trainer_step(runs):
    result = KIND.read(source_of(runs["trl"]["folder"]), None)
    assert result.problems == []
    assert tracker_truth.mismatches(truth_points(result.scalars)) == []
    tags = set(result.scalars["tag"])
    assert wandb_writer.TRL_STEP not in tags and "_step" not in tags
    assert set(wandb_writer.PROFILING) <= tags
    profiling = result.scalars[result.scalars["tag"].isin(wandb_writer.PROFILING)]
    assert profiling["step"].between(0, 50).all() and len(profiling) == 2 * 50  # _step ran to about 150
    assert result.extras["step_source"] == f"{wandb_writer.TRL_STEP} (the run's declared step metric)"


def test_trl_completions_tables_once_per_step(runs):
    tables = logged_tables(runs["trl"]["folder"])
    assert [(t.key, t.step) for t in tables] == [("completions", step) for step in wandb_writer.TABLE_STEPS]
    for table in tables:
        assert table.columns == wandb_writer.COMPLETION_COLUMNS
        assert table.rows == wandb_writer.completions(table.step)


def test_the_wandb_folder_holds_two_runs_and_no_third_by_its_link(runs):
    wandb_dir = runs["plain"]["folder"].parent
    assert (wandb_dir / "latest-run").is_symlink()
    found = [
        f.path
        for folder, dirs, files in os.walk(wandb_dir)
        for f in KIND.claim_folder(Path(folder), dirs, files)
    ]
    assert sorted(found) == sorted(run["folder"] for run in runs.values())
    assert KIND.claim_folder(wandb_dir / "latest-run", ["files"], os.listdir(wandb_dir / "latest-run")) == []


def test_a_real_log_read_in_two_parts(runs, tmp_path):
    whole_source = source_of(runs["trl"]["folder"])
    data = whole_source.files[0].read_bytes()
    whole = KIND.read(whole_source, None)
    copy = tmp_path / "offline-run-x-abc" / "run-abc.wandb"
    copy.parent.mkdir()
    source = RunSource(run=whole_source.run, kind=KIND.name, path=copy.parent, files=(copy,))
    for cut in (len(data) // 3, len(data) // 2 + 11, len(data) - 3):
        copy.write_bytes(data[:cut])
        first = KIND.read_from(source, None, None)
        copy.write_bytes(data)
        rest = KIND.read_from(source, first.resume, None)
        joined = merge_results([first.committed, rest.committed])
        pd.testing.assert_frame_equal(joined.scalars, whole.scalars)
        assert rest.committed.extras["step_source"] == whole.extras["step_source"]
