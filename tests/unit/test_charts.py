"""Pure figure builders (charts.py) and the token-chip HTML helper (chips.py)."""

from __future__ import annotations

import html
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from rl_board.ui import charts
from rl_board.ui.chips import Scale, chips_html, legend_html, scale_for


def _summary(steps: list[int], mean: list[float], std: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {"step": steps, "samples": 4, "reward_mean": mean, "reward_std": std, "reward_count": 4}
    )


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


# -- step curves -------------------------------------------------------------


def test_curve_x_is_sorted_steps_and_band_follows_scale():
    summary = _summary([200, 0, 100], [3.0, 1.0, 2.0], [0.3, 0.1, 0.2])
    for scale in (0.2, 1.0):
        fig = charts.curve_figure(
            summary,
            ["reward"],
            title="t",
            y_title="y",
            options=charts.CurveOptions(band="std", band_scale=scale),
        )
        mean = _trace(fig, "reward")
        assert list(mean.x) == [0, 100, 200]
        assert list(mean.y) == [1.0, 2.0, 3.0]
        upper, lower = _trace(fig, "reward +band"), _trace(fig, "reward −band")
        np.testing.assert_allclose(
            np.asarray(upper.y) - np.asarray(lower.y), 2 * scale * np.array([0.1, 0.2, 0.3])
        )
        assert lower.fill == "tonexty" and upper.hoverinfo == "skip"


def test_zero_shift_moves_first_point_to_zero():
    fig = charts.curve_figure(
        _summary([0, 1], [5.0, 7.0], [1.0, 1.0]),
        ["reward"],
        title="t",
        y_title="y",
        options=charts.CurveOptions(zero_shift=True),
    )
    assert list(_trace(fig, "reward").y) == [0.0, 2.0]
    assert "shifted" in fig.layout.annotations[0].text


def test_missing_series_are_skipped():
    fig = charts.curve_figure(_summary([0], [1.0], [0.0]), ["reward", "kl"], title="t", y_title="y")
    assert [t.name for t in fig.data if t.mode == "lines+markers"] == ["reward"]
    empty = pd.DataFrame({"step": [0], "kl_mean": [np.nan]})
    assert not charts.has_series(empty, "kl") and not charts.has_series(empty, "reward")


def test_downsample_is_deterministic_and_keeps_last_step():
    summary = _summary(list(range(5000)), list(np.arange(5000.0)), [0.0] * 5000)
    small = charts.downsample(summary, 2000)
    assert len(small) <= 2000
    assert small["step"].iloc[0] == 0 and small["step"].iloc[-1] == 4999
    assert small.equals(charts.downsample(summary, 2000))
    fig = charts.curve_figure(summary, ["reward"], title="t", y_title="y")
    assert len(_trace(fig, "reward").x) == len(small)
    assert "of 5000 steps" in fig.layout.annotations[0].text
    assert len(charts.downsample(summary.head(10), 2000)) == 10


# -- batch charts ------------------------------------------------------------


def _batch() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sample": [2, 0, 1],
            "reward": [1.0, 0.5, -0.5],
            "ref_reward": [0.5, 0.5, 0.0],
            "reward_gap": [0.5, 0.0, -0.5],
        }
    )


def test_reward_bars_are_grouped_per_sample():
    fig = charts.reward_bars_figure(_batch())
    assert fig.layout.barmode == "group"
    assert [t.name for t in fig.data] == ["reward", "ref reward"]
    assert list(fig.data[0].x) == [0, 1, 2] and list(fig.data[0].y) == [0.5, -0.5, 1.0]


def test_reward_bars_without_reference():
    fig = charts.reward_bars_figure(_batch().drop(columns=["ref_reward"]))
    assert [t.name for t in fig.data] == ["reward"]


def test_reward_gap_colours_by_sign():
    fig = charts.reward_gap_figure(_batch())
    colors = list(fig.data[0].marker.color)
    assert colors[0] == colors[2] != colors[1]  # gap 0 and +0.5 green, -0.5 red
    assert list(fig.data[0].y) == [0.0, -0.5, 0.5]


def test_reward_hist_overlays_reward_and_reference():
    fig = charts.reward_hist_figure(_batch())
    assert fig.layout.barmode == "overlay" and len(fig.data) == 2


# -- token heatmap -------------------------------------------------------------


def _tokens() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "token": ["<script>alert(1)</script>", " ok", "\n"],
            "kl": [0.0, 0.5, 0.1],
            "log_ratio": [-1.0, 2.0, 0.0],
            "value": [np.nan] * 3,
        }
    )


def test_heatmap_one_trace_per_metric_with_own_scale_and_true_values():
    fig = charts.token_heatmap_figure(_tokens(), ["kl", "log_ratio", "value"])
    assert [t.name for t in fig.data] == ["kl", "log_ratio"]  # all-NaN rows are left out
    kl, ratio = fig.data
    assert list(kl.z[0]) == [0.0, 0.5, 0.1]  # hover shows true values
    assert (kl.zmin, kl.zmax) == (0.0, 0.5)
    assert (ratio.zmin, ratio.zmax) == (-2.0, 2.0)  # diverging: centred on 0
    assert kl.colorscale != ratio.colorscale


def test_heatmap_escapes_token_text():
    fig = charts.token_heatmap_figure(_tokens(), ["kl"])
    labels = list(fig.data[0].customdata[0])
    assert labels[0] == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert labels[2] == "↵"
    assert "<script>" not in fig.to_json()


# -- token chips (the one HTML builder) ------------------------------------------


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="window.__xss=1">',
    '" onmouseover="alert(1)',
    "' onfocus='alert(2)",
    "</span><script>x</script>",
    "&lt;already escaped&gt;",
    "javascript:alert(1)",
]


def _hostile_frame() -> pd.DataFrame:
    n = len(HOSTILE)
    return pd.DataFrame({"token": HOSTILE, "kl": np.linspace(0, 1, n), "logp": [np.nan] * n})


def test_chips_html_contains_only_the_fixed_skeleton():
    out = chips_html(_hostile_frame(), "kl")
    parser = _Collect()
    parser.feed(out)
    assert {tag for tag, _ in parser.tags} == {"div", "span"}
    for _, attrs in parser.tags:
        assert set(attrs) <= {"class", "title", "style"}
    assert "<script" not in out and "<img" not in out
    assert "".join(parser.text) == "".join(HOSTILE)  # tokens show as their own text


def test_chip_titles_hold_the_exact_token_and_every_metric():
    parser = _Collect()
    parser.feed(chips_html(_hostile_frame(), "kl"))
    titles = [attrs["title"] for tag, attrs in parser.tags if tag == "span"]
    assert len(titles) == len(HOSTILE)
    for position, (title, token) in enumerate(zip(titles, HOSTILE, strict=True)):
        assert title.splitlines()[0] == f"#{position} {token!r}"
        assert "kl = " in title and "logp = n/a" in title


def test_chips_hide_tokens_and_keep_positions():
    frame = pd.DataFrame({"token": ["a", "<PAD>", "b"], "kl": [0.1, 0.2, 0.3]})
    parser = _Collect()
    parser.feed(chips_html(frame, "kl", hidden=["<PAD>"]))
    assert "".join(parser.text) == "ab"
    titles = [a["title"] for t, a in parser.tags if t == "span"]
    assert titles[1].startswith("#2 ")


def test_chip_colours_and_legend():
    assert Scale(0.0, 1.0, False).color(float("nan")) == "#d9d9d9"
    assert Scale(0.0, 1.0, False).color(0.0) != Scale(0.0, 1.0, False).color(1.0)
    div = Scale(-1.0, 2.0, True)
    assert div.color(0.0) == "rgb(247,247,247)"
    assert scale_for([np.nan, None], "kl") == Scale(0.0, 0.0, False)
    legend = legend_html(scale_for([0.0, 0.5], "kl"), "kl")
    assert "KL (k3)" in legend and "0.5" in legend


@pytest.mark.parametrize("metric", ["kl", "log_ratio"])
def test_chips_of_empty_frame(metric):
    out = chips_html(pd.DataFrame({"token": [], metric: []}), metric)
    assert "no tokens" in html.unescape(out)


def test_builders_import_no_streamlit():
    import subprocess
    import sys

    code = (
        "import sys, rl_board.ui.charts, rl_board.ui.chips, rl_board.ui.text, rl_board.rollouts.export; "
        "print('streamlit' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_comparison_draws_each_run_and_escapes_names():
    summaries = {
        "ppo": _summary([0, 1], [1.0, 2.0], [0.1, 0.1]),
        "<b>eval</b>": _summary([0, 10], [0.5, 0.7], [0.0, 0.0]),
        "no_reward": pd.DataFrame({"step": [0], "kl_mean": [0.1]}),
    }
    fig = charts.comparison_figure(summaries, "reward", title="t", y_title="y")
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == ["ppo", "&lt;b&gt;eval&lt;/b&gt;"]
    assert lines[0].line.color != lines[1].line.color
    assert list(lines[1].x) == [0, 10]


def test_percentile_band_is_the_default():
    summary = _summary([0, 1], [1.0, 2.0], [0.1, 0.2]).assign(reward_p10=[0.5, 1.5], reward_p90=[1.4, 2.9])
    fig = charts.curve_figure(summary, ["reward"], title="t", y_title="y")
    assert list(_trace(fig, "reward +band").y) == [1.4, 2.9] and list(_trace(fig, "reward −band").y) == [
        0.5,
        1.5,
    ]
    assert "percentile" in fig.layout.annotations[0].text
