"""DI-engine / LightZero folders: synthetic ones and the real MAPPO Ant run."""

from __future__ import annotations

from pathlib import Path

import pytest

from rl_board.metrics.dilogs import read_di_engine_texts
from rl_board.metrics.reader import load_metrics
from tests.helpers.metric_fixtures import write_di_engine_folder

REAL = Path(__file__).parents[2].parent / "shared/real-logs/di-engine-mappo-ant"


def test_synthetic_folder_steps_and_tags(tmp_path):
    result = read_di_engine_texts(write_di_engine_folder(tmp_path, iterations=4), "exp")
    s = result.scalars
    assert s.query("tag == 'learner/value_loss_avg'")["step"].tolist() == [0, 100, 200, 300]
    assert s.query("tag == 'evaluator/reward_mean'")["step"].tolist() == [0, 200]
    assert s.query("tag == 'collector/reward_mean'")["step"].tolist() == [500, 1000, 1500, 2000]
    assert result.texts.query("tag == 'evaluator/ckpt_name'")["text"].tolist() == [
        "iteration_0.pth.tar",
        "iteration_200.pth.tar",
    ]
    assert result.episodes.groupby("train_iter")["reward"].apply(list).to_dict() == {
        0: [100.0, 101.0],
        200: [300.0, 301.0],
    }


def test_config_is_text_never_executed(tmp_path):
    result = read_di_engine_texts(write_di_engine_folder(tmp_path), "exp")
    assert result.extras["config_text"].startswith("raise SystemExit")  # still here: it was not run


def test_network_and_checkpoints(tmp_path):
    extras = read_di_engine_texts(write_di_engine_folder(tmp_path, iterations=3), "exp").extras
    assert extras["network_text"].startswith("VAC(")
    ckpts = {c["name"]: c for c in extras["checkpoints"]}
    assert ckpts["ckpt_best.pth.tar"]["kind"] == "best" and ckpts["ckpt_best.pth.tar"]["size"] == 128
    assert ckpts["iteration_200.pth.tar"]["iteration"] == 200 and ckpts["iteration_200.pth.tar"]["exists"]
    assert ckpts["iteration_100.pth.tar"]["exists"] is False  # only known from the learner log
    assert ckpts["iteration_100.pth.tar"]["logged_at"]


def test_empty_logger_and_aborted_run_show_what_exists(tmp_path):
    folder = write_di_engine_folder(tmp_path, iterations=3, aborted=True, empty_collector=True)
    result = read_di_engine_texts(folder, "exp")
    status = {f["role"]: f["status"] for f in result.extras["files"]}
    assert status == {"collector": "empty", "evaluator": "ok", "learner": "ok"}
    assert (
        result.scalars.query("source == 'learner'")["step"].max() == 200
    )  # the unfinished table is left out
    assert result.problems == []


def test_missing_logger_is_listed_as_missing(tmp_path):
    folder = write_di_engine_folder(tmp_path)
    (folder / "log/evaluator/evaluator_logger.txt").unlink()
    status = {f["role"]: f["status"] for f in read_di_engine_texts(folder, "exp").extras["files"]}
    assert status["evaluator"] == "missing"


def test_folder_is_one_run_including_its_event_files(tmp_path):
    write_di_engine_folder(tmp_path / "exp")
    bundle = load_metrics(tmp_path)
    assert [(r.run, r.kind) for r in bundle.runs] == [("exp", "di-engine")]
    assert set(bundle.scalars["source"]) == {"collector", "evaluator", "learner", "tensorboard"}


@pytest.mark.skipif(
    not REAL.is_dir(),
    reason=(
        "needs the real DI-engine folder ../shared/real-logs/di-engine-mappo-ant beside the project "
        "(generated DI-engine folders cover the same code)"
    ),
)
def test_real_folder():
    bundle = load_metrics(REAL)
    [run] = bundle.runs
    assert run.kind == "di-engine" and bundle.problems == []
    s = bundle.scalars
    counts = s.groupby("source").size().to_dict()
    assert counts == {"collector": 261 * 17, "evaluator": 29 * 11, "learner": 283 * 15, "tensorboard": 17_683}
    learner = s.query("tag == 'learner/total_loss_avg'")
    assert learner["step"].iloc[0] == 0 and learner["step"].iloc[-1] == 28200
    assert learner["value"].iloc[0] == pytest.approx(460.940308)
    # the text logger and the event file agree where both have the number
    tb = s.query("tag == 'learner_iter/total_loss_avg'").set_index("step")["value"]
    assert learner.set_index("step")["value"].sub(tb).abs().max() < 1e-4
    assert len(bundle.episodes) == 29 * 8
    # per-episode rewards agree with the round's table
    last = bundle.episodes.query("train_iter == 28224")["reward"]
    table = s.query("tag == 'evaluator/reward_max' and step == 28224")["value"].item()
    assert last.max() == pytest.approx(table, abs=1e-3) and 2292.5483 in last.tolist()
    assert "MAVAC(" in run.network_text and "multi_mujoco_ant_2x4_ppo" in run.config_text
    assert [c["name"] for c in run.checkpoints][0] == "ckpt_best.pth.tar"
    assert all(c["exists"] is False for c in run.checkpoints)  # ckpt/ was not committed upstream


def test_evaluation_summary_skips_non_finite_episodes():
    import math

    import pandas as pd

    from rl_board.metrics.dilogs import evaluation_summary

    episodes = pd.DataFrame({"train_iter": [10, 10, 0, 10], "reward": [1.0, 3.0, 5.0, math.nan]})
    stats = evaluation_summary(episodes)
    assert stats["train_iter"].tolist() == [0, 10]
    assert stats["mean"].tolist() == [5.0, 2.0]
    assert stats["min"].tolist() == [5.0, 1.0] and stats["max"].tolist() == [5.0, 3.0]
    assert stats["size"].tolist() == [1, 2]
