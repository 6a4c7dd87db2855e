"""Metric chart builders: tag grouping, smoothing and figures, asserted on the figure objects."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rl_board.metrics.reader import load_metrics
from rl_board.ui.metric_charts import (
    NO_PREFIX,
    chart_key,
    ema,
    episodes_figure,
    filter_tags,
    group_tags,
    histogram_figure,
    rebin,
    scalar_figure,
)
from tests.helpers.metric_fixtures import write_di_engine_folder, write_tensorboard_run


def points(values: list[float], steps: list[int] | None = None, wall0: float = 1000.0) -> pd.DataFrame:
    steps = steps if steps is not None else list(range(len(values)))
    return pd.DataFrame({"step": steps, "value": values, "wall_time": [wall0 + 60 * s for s in steps]})


def test_group_and_filter_tags():
    tags = ["actor/pg_loss", "time/rollout", "actor/lr", "loss", "memory/generate/start"]
    assert group_tags(tags) == {
        "actor": ["actor/lr", "actor/pg_loss"],
        "memory": ["memory/generate/start"],
        "time": ["time/rollout"],
        NO_PREFIX: ["loss"],
    }
    assert filter_tags(tags, "ACTOR lr") == ["actor/lr"]
    assert filter_tags(tags, "  ") == tags


def test_ema_is_tensorboards_debiased_ema():
    values = np.array([1.0, 2.0, np.nan, 4.0, np.inf, 6.0])
    last, n, expected = 0.0, 0, []
    for v in values:
        if not np.isfinite(v):
            expected.append(np.nan)
            continue
        last, n = last * 0.6 + 0.4 * v, n + 1
        expected.append(last / (1 - 0.6**n))
    np.testing.assert_allclose(ema(values, 0.6), expected)
    np.testing.assert_allclose(ema(values, 0.0), [1, 2, np.nan, 4, np.nan, 6])
    assert ema(np.array([5.0]), 0.9)[0] == pytest.approx(5.0)  # no pull towards 0


def test_scalar_figure_raw_faint_behind_smoothed():
    fig = scalar_figure({"run": points([1.0, 3.0, 2.0, 5.0], steps=[0, 10, 20, 30])}, tag="x", smoothing=0.5)
    raw, smooth = fig.data
    assert list(raw.x) == [0, 10, 20, 30] and list(raw.y) == [1.0, 3.0, 2.0, 5.0]
    assert "rgba" in raw.line.color and raw.line.width < smooth.line.width
    np.testing.assert_allclose(smooth.y, ema(np.array([1.0, 3.0, 2.0, 5.0]), 0.5))
    [only] = scalar_figure({"run": points([1.0, 3.0])}, tag="x", smoothing=0).data
    assert list(only.y) == [1.0, 3.0]


def test_scalar_figure_overlays_runs_and_x_axes():
    series = {"a": points([1.0, 2.0]), "b": points([3.0, 4.0, 5.0])}
    fig = scalar_figure(series, tag="x", smoothing=0.6)
    assert [t.name for t in fig.data] == ["a (raw)", "a", "b (raw)", "b"] and fig.layout.showlegend
    assert fig.data[1].line.color != fig.data[3].line.color
    wall = scalar_figure(series, tag="x", x_axis="wall_time")
    assert pd.Timestamp(wall.data[0].x[1]) == pd.Timestamp(1060, unit="s")
    relative = scalar_figure(series, tag="x", x_axis="relative")
    assert list(relative.data[2].x) == pytest.approx([0.0, 1 / 60, 2 / 60])
    assert wall.layout.xaxis.title.text == "wall time"


def test_scalar_figure_duplicates_nan_and_downsampling():
    fig = scalar_figure({"r": points([1.0, 9.0, float("nan")], steps=[0, 0, 1])}, tag="x", smoothing=0)
    assert list(fig.data[0].x) == [0, 1] and fig.data[0].y[0] == 9.0 and np.isnan(fig.data[0].y[1])
    assert "1 NaN/Inf point(s) not drawn" in fig.layout.annotations[0].text
    many = scalar_figure({"r": points(list(np.arange(5000.0)))}, tag="x", max_points=100)
    assert len(many.data[0].x) == 100 and many.data[0].x[-1] == 4999


def test_labels_from_logs_are_escaped():
    fig = scalar_figure({"<img src=x>": points([1.0])}, tag="<b>tag</b>")
    assert fig.layout.title.text == "&lt;b&gt;tag&lt;/b&gt;" and "<img" not in fig.data[1].name


def test_histogram_heatmap_keeps_counts(tmp_path):
    write_tensorboard_run(tmp_path, steps=5)
    bundle = load_metrics(tmp_path)
    records = bundle.histograms[bundle.histograms["tag"] == "ppo/policy/ratio"]
    steps, centres, z = rebin(records, bins=16)
    assert list(steps) == [0, 1, 2, 3, 4] and z.shape == (5, 16) and len(centres) == 16
    totals = [float(np.sum(c)) for c in records.sort_values("step")["count"]]
    np.testing.assert_allclose(z.sum(axis=1), totals)
    fig = histogram_figure(records, tag="ppo/policy/ratio")
    assert list(fig.data[0].y) == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(np.asarray(fig.data[0].z).sum(axis=1), 1.0)


def test_episodes_figure_mean_band_and_points(tmp_path):
    write_di_engine_folder(tmp_path / "exp")
    episodes = load_metrics(tmp_path).episodes
    fig = episodes_figure(episodes)
    upper, lower, dots, mean = fig.data
    assert list(mean.x) == [0, 200, 400] and list(mean.y) == [100.5, 300.5, 500.5]
    assert list(upper.y) == [101.0, 301.0, 501.0] and list(lower.y) == [100.0, 300.0, 500.0]
    assert len(dots.x) == 6 and lower.fill == "tonexty"


def test_chart_keys_are_stable_and_distinct():
    assert chart_key("run", "a/b") == chart_key("run", "a/b") != chart_key("run", "a_b")


def test_a_constant_series_is_drawn_at_its_value():
    import pandas as pd

    from rl_board.ui.metric_charts import scalar_figure

    frame = pd.DataFrame({"step": range(10), "value": [5e-4] * 10, "wall_time": range(10)})
    fig = scalar_figure({"run": frame}, tag="lr", smoothing=0.0)
    low, high = fig.layout.yaxis.range
    assert low < 5e-4 < high and high - low < 1e-3


def test_several_runs_keep_the_legend_below_and_short():
    import pandas as pd

    from rl_board.ui.metric_charts import aliases, scalar_figure

    frame = pd.DataFrame({"step": range(3), "value": [1.0, 2.0, 3.0], "wall_time": range(3)})
    fig = scalar_figure({"exp/a/run_one": frame, "exp/b/run_two": frame}, tag="loss", smoothing=0.0)
    assert fig.layout.legend.y < 0 and {t.name for t in fig.data} == {"run_one", "run_two"}
    assert aliases(["x/same", "y/same"]) == {"x/same": "x/same", "y/same": "y/same"}
