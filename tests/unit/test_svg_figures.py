"""The SVG twins of the Plotly builders (svg_figures.py, svg_metric_figures.py): the same numbers, colours
and notes as the interactive charts, names from the logs escaped."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from rl_board.ui import charts, svg_figures
from rl_board.ui.metric_charts import color, ema
from rl_board.ui.svg_charts import render
from rl_board.ui.svg_draw import paint
from rl_board.ui.svg_metric_figures import histogram_chart, scalar_chart

HOSTILE = '<script>alert(1)</script>"onload="x'


def _summary() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "step": [200, 0, 100],
            "samples": 4,
            "reward_mean": [3.0, 1.0, 2.0],
            "reward_std": [0.3, 0.1, 0.2],
            "reward_count": 4,
            "reward_p10": [2.5, 0.5, 1.5],
            "reward_p90": [3.5, 1.5, 2.5],
        }
    )


def test_curve_chart_has_the_plotly_numbers_band_and_colour():
    options = charts.CurveOptions(band="std", band_scale=2.0)
    chart = svg_figures.curve_chart(
        _summary(), ["reward"], title="Reward per step", y_title="reward", options=options
    )
    fig = charts.curve_figure(
        _summary(), ["reward"], title="Reward per step", y_title="reward", options=options
    )
    (series,) = chart.series
    mean = next(t for t in fig.data if t.name == "reward")
    assert list(series.x) == list(mean.x) == [0, 100, 200]
    np.testing.assert_allclose(series.y, mean.y)
    np.testing.assert_allclose(series.low, [0.8, 1.6, 2.4])  # mean − 2·std, as the Plotly band
    assert series.color == mean.line.color
    assert chart.note == "band = mean ± 2·std"
    percentiles = svg_figures.curve_chart(_summary(), ["reward"], title="t", y_title="y")
    np.testing.assert_allclose(percentiles.series[0].high, [1.5, 2.5, 3.5])
    shifted = svg_figures.curve_chart(
        _summary(), ["reward"], title="t", y_title="y", options=charts.CurveOptions(zero_shift=True)
    )
    assert list(shifted.series[0].y) == [0.0, 1.0, 2.0] and "shifted to start at 0" in shifted.note


def test_comparison_chart_escapes_run_names():
    body = render(
        svg_figures.comparison_chart({HOSTILE: _summary(), "b": _summary()}, "reward", title="t", y_title="y")
    )
    assert "<script>" not in body.split("data:image")[0] and html.escape(HOSTILE, quote=True) in body


def test_scalar_chart_smooths_as_tensorboard_and_keeps_the_raw_line_faint():
    frame = pd.DataFrame(
        {"step": range(10), "value": np.arange(10.0) ** 2, "wall_time": 1.7e9 + np.arange(10)}
    )
    chart = scalar_chart({"run": frame}, tag=HOSTILE, smoothing=0.6)
    raw, smooth = chart.series
    assert raw.opacity < 1 and not raw.legend and smooth.color == raw.color == color(0)
    np.testing.assert_allclose(smooth.y, ema(np.arange(10.0) ** 2, 0.6))
    body = render(chart)
    assert html.escape(HOSTILE, quote=True) in body and "<script>" not in body.split("data:image")[0]
    off = scalar_chart({"run": frame}, tag="t", smoothing=0.0)
    assert len(off.series) == 1 and off.series[0].opacity == 1
    timed = scalar_chart({"run": frame}, tag="t", x_axis="wall_time")
    assert timed.x.time and timed.series[0].x[0] == 1.7e9


def test_histogram_chart_is_a_heatmap_of_shares_per_step():
    records = pd.DataFrame(
        {
            "step": [0, 1],
            "left": [[0.0, 1.0], [0.0, 1.0]],
            "right": [[1.0, 2.0], [1.0, 2.0]],
            "count": [[1, 3], [2, 2]],
        }
    )
    chart = histogram_chart(records, tag="w", bins=2)
    assert chart.heat is not None
    np.testing.assert_allclose(np.asarray(chart.heat.z), [[0.25, 0.5], [0.75, 0.5]])  # value bin × step


def test_step_bars_histogram_and_length_chart():
    samples = pd.DataFrame(
        {
            "sample": [1, 0, 2],
            "reward": [0.5, 1.0, np.nan],
            "ref_reward": [0.2, 0.1, 0.0],
            "reward_gap": [0.3, 0.9, -1],
        }
    )
    bars = svg_figures.reward_bars_chart(samples)
    assert [s.name for s in bars.series] == ["reward", "ref reward"] and list(bars.series[0].x) == [0, 1, 2]
    gap = svg_figures.reward_gap_chart(samples)
    assert list(gap.series[0].colors or []) == ["#2da44e", "#2da44e", "#cf222e"]
    hist = svg_figures.reward_hist_chart(samples, bins=4)
    assert [int(sum(s.y)) for s in hist.series] == [2, 3]  # NaN left out
    counts = pd.DataFrame([[3, 1], [0, 4]], index=[0, 1])
    length = svg_figures.length_chart(
        counts, np.array([0.0, 50.0, 100.0]), pd.Series([0.0, 0.5], index=[0, 1]), "tokens"
    )
    assert length.heat is not None and length.y2 is not None and length.y2.percent
    assert "most samples at ≈ 75 tokens" in render(length)


def test_a_colour_that_is_not_one_becomes_grey():
    assert paint("#1f6feb") == "#1f6feb" and paint("rgba(1,2,3,0.5)") == "rgba(1,2,3,0.5)"
    assert paint('red" onload="x') == "#8b949e"
