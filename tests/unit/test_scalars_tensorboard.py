"""TensorBoard reading: event files written at test time with TensorBoard's own writer."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from rl_board.metrics.reader import load_metrics
from rl_board.metrics.tensorboard import read_event_folder
from tests.helpers.metric_fixtures import append_partial_record, write_tensorboard_run

REAL = Path(__file__).parents[2].parent / "shared/real-logs/di-engine-mappo-ant"


def test_old_and_new_style_scalars_are_both_read(tmp_path):
    write_tensorboard_run(tmp_path, steps=12)
    result = read_event_folder(tmp_path, "r")
    reward = result.scalars[result.scalars["tag"] == "env/reward_mean"]  # simple_value
    pg = result.scalars[result.scalars["tag"] == "actor/pg_loss"].sort_values("step")  # rank-0 tensor
    assert len(reward) == 12 and reward["step"].tolist() == list(range(12))
    assert pg["value"].tolist() == pytest.approx([-0.01 * s for s in range(12)], abs=1e-6)
    assert result.scalars["wall_time"].between(1000, 1011).all()
    assert result.problems == []


def test_histograms_old_and_new_style_become_bucket_lists(tmp_path):
    write_tensorboard_run(tmp_path, steps=3)
    hist = read_event_folder(tmp_path, "r").histograms
    assert set(hist["tag"]) == {"ppo/policy/ratio", "objective/kl_dist"}
    ratio = hist[(hist["tag"] == "ppo/policy/ratio") & (hist["step"] == 0)].iloc[0]
    assert sum(ratio["count"]) == 64
    assert len(ratio["left"]) == len(ratio["right"]) == len(ratio["count"])
    assert ratio["left"][0] == pytest.approx(0.9) and ratio["right"][-1] == pytest.approx(1.1)


def test_text_and_hparams_are_kept(tmp_path):
    write_tensorboard_run(tmp_path, steps=11)
    result = read_event_folder(tmp_path, "r")
    assert result.texts["step"].tolist() == [0, 10]
    assert result.texts["text"].iloc[0] == "step 0: <b>hello</b>"
    assert result.extras["hparams"] == {"lr": pytest.approx(1e-5), "algo": "ppo"}


def test_no_reservoir_sampling(tmp_path):
    writer = EventFileWriter(str(tmp_path))
    for step in range(12_000):
        value = summary_pb2.Summary.Value(tag="loss", simple_value=float(step))
        writer.add_event(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=[value])))
    writer.close()
    scalars = read_event_folder(tmp_path, "r").scalars
    assert len(scalars) == 12_000 and scalars["value"].iloc[-1] == 11_999


def test_truncated_last_record_keeps_everything_before(tmp_path):
    path = write_tensorboard_run(tmp_path, steps=5)
    append_partial_record(path, event_pb2.Event(step=5), keep=0.4)
    result = read_event_folder(tmp_path, "r")
    assert result.scalars["step"].max() == 4
    assert len(result.scalars[result.scalars["tag"] == "env/reward_mean"]) == 5
    assert len(result.problems) == 1 and "incomplete or damaged" in result.problems[0].reason


def test_damaged_record_in_the_middle_is_a_problem_not_an_exception(tmp_path):
    path = write_tensorboard_run(tmp_path, steps=5)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    result = read_event_folder(tmp_path, "r")
    assert result.problems and 0 < len(result.scalars) < 5 * 8


def test_each_folder_of_event_files_is_a_run(tmp_path):
    write_tensorboard_run(tmp_path / "a", steps=2)
    write_tensorboard_run(tmp_path / "b" / "nested", steps=3)
    bundle = load_metrics(tmp_path)
    assert [(r.run, r.kind) for r in bundle.runs] == [("a", "tensorboard"), ("b/nested", "tensorboard")]
    assert bundle.scalars.groupby("run")["step"].max().to_dict() == {"a": 1, "b/nested": 2}


def test_nan_values_survive(tmp_path):
    write_tensorboard_run(tmp_path, steps=30, unstable=True)
    loss = read_event_folder(tmp_path, "r").scalars.query("tag == 'ppo/loss/value'")
    assert np.isnan(loss["value"]).sum() == 1


@pytest.mark.skipif(
    not REAL.is_dir(),
    reason=(
        "needs the real DI-engine folder ../shared/real-logs/di-engine-mappo-ant beside the project "
        "(generated DI-engine folders cover the same code)"
    ),
)
def test_real_event_file_reads_all_records_quickly():
    start = time.perf_counter()
    result = read_event_folder(REAL / "log" / "serial", "real")
    elapsed = time.perf_counter() - start
    assert len(result.scalars) == 17_683
    assert result.scalars["tag"].nunique() == 83
    assert result.problems == []
    assert elapsed < 5.0
