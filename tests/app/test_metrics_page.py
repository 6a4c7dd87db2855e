"""AppTest of the Metrics page on a root with a DI-engine folder, TensorBoard runs and a rollout run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from rl_board import config
from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.ui.metric_charts import chart_key, ema
from tests.helpers.apptest import assert_clean, decode, figures, svg_charts, texts
from tests.helpers.metric_fixtures import (
    write_di_engine_folder,
    write_many_tags_run,
    write_tensorboard_run,
)

APP = Path(__file__).resolve().parents[2] / "rl_board" / "ui" / "app.py"
METRICS = "views/metrics.py"


@pytest.fixture(scope="module")
def metrics_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("metrics-root")
    write_di_engine_folder(root / "di" / "exp1")
    write_tensorboard_run(root / "tb" / "trl_run", steps=40)
    write_tensorboard_run(root / "tb" / "trl_unstable", steps=40, unstable=True)
    write_run(root / "rollouts" / "ppo", DemoSpec(steps=4, samples=4, ranks=1, tokens=8, seed=1))
    return root


def open_metrics(root: Path, cache: Path, monkeypatch, **widgets: object) -> AppTest:
    monkeypatch.setenv("RL_BOARD_ROOTS", str(root))
    config.reset()  # read the new environment, as a server started now would
    monkeypatch.setenv("RL_BOARD_CACHE_DIR", str(cache))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.switch_page(METRICS)
    for key, value in widgets.items():
        at.session_state[key] = value
    at.run()
    assert_clean(at)
    return at


@pytest.fixture
def metrics_page(metrics_root, tmp_path, monkeypatch):
    def _open(**widgets: object) -> AppTest:
        return open_metrics(metrics_root, tmp_path / "cache", monkeypatch, **widgets)

    return _open


def group_labels(at: AppTest) -> list[str]:
    return [e.label.split(" · ")[0].strip("*").replace("\\", "") for e in at.expander if "tag(s)" in e.label]


def choose(at: AppTest, **values: object) -> AppTest:
    """Set bound widgets (runs, q, smooth, x: the view fields metric_runs, metric_filter, smoothing, x_axis)
    and rerun."""
    fields = {"runs": "metric_runs", "q": "metric_filter", "smooth": "smoothing", "x": "x_axis"}
    for name, value in values.items():
        key = f"w.{fields[name]}"
        if name == "runs":
            at.multiselect(key=key).set_value(value)
        elif name == "q":
            at.text_input(key=key).input(value)
        elif name == "smooth":
            at.slider(key=key).set_value(value)
        else:
            at.radio(key=key).set_value(value)
    at.run()
    assert_clean(at)
    return at


def test_metric_runs_are_listed_but_not_rollout_runs(metrics_page):
    at = metrics_page()
    options = at.multiselect(key="w.metric_runs").options
    assert [o.split(" · ")[0] for o in options] == ["di/exp1", "tb/trl_run", "tb/trl_unstable"]
    assert at.multiselect(key="w.metric_runs").value == ["di/exp1"]  # the first run by default


def test_di_engine_run_shows_episodes_config_network_checkpoints_and_loggers(metrics_page):
    at = metrics_page()
    episodes = figures(at)["Evaluator reward per episode"]
    mean = next(t for t in episodes["data"] if t.get("name") == "mean")
    assert list(decode(mean["x"])) == [0, 200, 400] and list(decode(mean["y"])) == [100.5, 300.5, 500.5]
    codes = [c.value for c in at.code]
    assert any("raise SystemExit('never run me')" in c for c in codes)  # the config, as text
    assert any("VAC(" in c for c in codes)  # the network printout
    frames = [f.value for f in at.dataframe]
    ckpts = next(f for f in frames if "checkpoint" in f.columns)
    assert set(ckpts["checkpoint"]) >= {"ckpt_best.pth.tar", "iteration_500.pth.tar"}
    loggers = next(f for f in frames if "logger" in f.columns)
    assert list(loggers["logger"]) == ["collector", "evaluator", "learner"] and set(loggers["status"]) == {
        "ok"
    }


def test_chart_x_values_are_the_logged_steps(metrics_page):
    at = choose(metrics_page(), q="total_loss")
    assert group_labels(at) == ["learner_iter"]
    spec = figures(at)["learner_iter/total_loss_avg"]
    raw = spec["data"][0]
    assert list(decode(raw["x"])) == [0, 100, 200, 300, 400, 500]
    np.testing.assert_allclose(decode(raw["y"]), [1 / (i + 1) for i in range(6)], rtol=1e-6)


def test_tag_filter_narrows_groups(metrics_page):
    at = choose(metrics_page(), runs=["tb/trl_run"])
    everything = group_labels(at)
    assert {"env", "objective", "ppo", "actor"} <= set(everything)
    choose(at, q="kl")
    assert group_labels(at) == ["objective", "ppo"]  # objective/kl*, ppo/policy/approxkl and policykl
    choose(at, q="objective kl")
    assert group_labels(at) == ["objective"]
    assert set(figures(at)) >= {"objective/kl", "objective/kl_coef"}
    choose(at, q="no such tag")
    assert any("No tag contains" in t for t in texts(at.info))


def test_smoothing_changes_the_curve_and_keeps_the_raw_line(metrics_page):
    at = choose(metrics_page(), runs=["tb/trl_run"], q="env/reward_mean")
    raw, smooth = figures(at)["env/reward_mean"]["data"]
    raw_y, smooth_y = decode(raw["y"]), decode(smooth["y"])
    np.testing.assert_allclose(smooth_y, ema(raw_y, 0.6), rtol=1e-6)
    assert not np.allclose(raw_y, smooth_y) and "rgba" in raw["line"]["color"]
    choose(at, smooth=0.9)
    smoother = decode(figures(at)["env/reward_mean"]["data"][1]["y"])
    assert np.std(np.diff(smoother)) < np.std(np.diff(smooth_y))
    choose(at, smooth=0.0)
    [only] = figures(at)["env/reward_mean"]["data"]
    np.testing.assert_allclose(decode(only["y"]), raw_y)


def test_runs_overlay_and_wall_time_axis(metrics_page):
    at = choose(metrics_page(), runs=["tb/trl_run", "tb/trl_unstable"], q="objective/kl_coef")
    names = [t["name"] for t in figures(at)["objective/kl_coef"]["data"]]
    assert names == ["trl_run (raw)", "trl_run", "trl_unstable (raw)", "trl_unstable"]  # short aliases
    choose(at, x="wall_time")
    spec = figures(at)["objective/kl_coef"]
    assert spec["layout"]["xaxis"]["title"]["text"] == "wall time"
    assert str(spec["data"][0]["x"][0]).startswith("1970-01-01")  # the fixture logs wall time 1000 s + step


def test_histograms_draw_as_heatmaps_over_steps(metrics_page):
    at = choose(metrics_page(), runs=["tb/trl_run"], q="ratio")
    spec = figures(at)["ppo/policy/ratio (histogram over steps)"]
    assert spec["data"][0]["type"] == "heatmap" and len(decode(spec["data"][0]["y"])) == 40


def test_glossary_caption_next_to_charts(metrics_page):
    at = choose(metrics_page(), runs=["tb/trl_run"], q="objective/kl")
    captions = texts(at.caption)
    assert any("Healthy:" in c for c in captions)


def test_damaged_file_is_a_warning_with_file_and_reason(tmp_path, monkeypatch):
    root = tmp_path / "root"
    write_tensorboard_run(root / "cut", steps=3, truncate_last=True)
    (root / "bad.jsonl").write_text(
        '{"step": 1, "loss": 0.5}\n{"step": 2, "loss": \n{"step": 3, "loss": 0.4}\n'
    )
    at = open_metrics(root, tmp_path / "cache", monkeypatch)
    warnings = texts(at.warning)
    assert any("bad.jsonl" in w for w in warnings), warnings


def test_hundreds_of_tags_render_lazily(tmp_path, monkeypatch):
    root = tmp_path / "root"
    write_many_tags_run(root / "roll", groups=30, per_group=15, steps=20)
    at = open_metrics(root, tmp_path / "cache", monkeypatch)
    assert len(group_labels(at)) == 30
    assert len(svg_charts(at)) == 12  # only the open group, one page of it (SVG charts by default)
    assert len(at.get("pagination")) == 1
    at.session_state[chart_key("group", "g05", "")] = True  # the user opens a second group
    at.run()
    assert len(svg_charts(at)) == 24


def test_no_metric_runs_is_a_message(tmp_path, monkeypatch):
    root = tmp_path / "root"
    write_run(root / "ppo", DemoSpec(steps=2, samples=2, ranks=1, tokens=4, seed=1))
    at = open_metrics(root, tmp_path / "cache", monkeypatch)
    assert any("No training metrics" in t for t in texts(at.info))
    assert not at.get("plotly_chart") and not svg_charts(at)


def test_di_engine_copies_toggle(tmp_path, monkeypatch):
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    root = tmp_path / "root"
    write_di_engine_folder(root / "exp")
    writer = EventFileWriter(str(root / "exp" / "log" / "serial"))
    for step in range(3):  # the env-step copy DI-engine writes beside learner_iter/
        value = summary_pb2.Summary.Value(tag="learner_step/total_loss_avg", simple_value=1.0)
        writer.add_event(event_pb2.Event(step=step * 500, summary=summary_pb2.Summary(value=[value])))
    writer.close()
    at = open_metrics(root, tmp_path / "cache", monkeypatch)
    toggle = at.toggle(key="w.one_copy")
    assert toggle.value is True and "learner_step" not in group_labels(at)
    toggle.set_value(False).run()
    assert "learner_step" in group_labels(at)


def test_metrics_page_state_is_in_the_link(metrics_root, tmp_path, serve):
    serve(metrics_root)
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params.update({"metric_filter": "loss", "smoothing": "0.3", "x_axis": "relative"})
    at.run()
    at.switch_page("views/metrics.py").run()
    assert_clean(at)
    assert at.text_input(key="w.metric_filter").value == "loss" and at.query_params["metric_filter"] in (
        "loss",
        ["loss"],
    )
    assert at.query_params["smoothing"] in ("0.3", ["0.3"]) and at.query_params["x_axis"] in (
        "relative",
        ["relative"],
    )


def test_a_sweep_lists_every_run_and_reads_only_the_chosen_ones(tmp_path, monkeypatch):
    root = tmp_path / "root"
    for k in range(12):
        write_many_tags_run(root / "sweep" / f"seed_{k:02d}", groups=2, per_group=3, steps=5)
    cache = tmp_path / "cache"
    at = open_metrics(root, cache, monkeypatch)
    box = at.multiselect(key="w.metric_runs")
    assert box.label == "Metric runs (12)" and len(box.options) == 12
    assert box.value == ["sweep/seed_00"]
    assert len(svg_charts(at)) == 3  # the first group of the one chosen run
    from rl_board.ui import metrics_cached

    build = metrics_cached.index_build(root)  # the background index of every run (started by the page)
    build.thread.join(timeout=60)
    assert build.index is not None and len(build.index.runs) == 12
    at.run()
    assert_clean(at)
    labels = at.multiselect(key="w.metric_runs").options
    assert all(label.endswith("· 6 tags") for label in labels), labels
    assert not at.get("progress")
