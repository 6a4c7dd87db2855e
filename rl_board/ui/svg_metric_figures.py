"""Training-metric charts as ``svg_charts.Chart``: the twins of ``metric_charts``' Plotly figures (a tag's
curves with TensorBoard's smoothing, a histogram tag over steps, evaluator episodes), drawn without a script.

Tags and run names come from log files: they stay plain text here and are escaped where they are drawn.
Pure: frames in, a ``Chart`` out.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from rl_board.api import evaluation_summary
from rl_board.ui.metric_charts import (
    HEAT_BINS,
    MAX_POINTS,
    X_AXES,
    color,
    drawn_runs,
    heat_shares,
    point_notes,
    x_values,
)
from rl_board.ui.svg_charts import Axis, Chart, Heat, Series
from rl_board.ui.text import display_name

WIDTH = 560  # a chart in one of two columns; 1100 across the page
WIDE = 1100


def _numeric_x(data: pd.DataFrame, x_axis: str) -> np.ndarray:
    """x as numbers: steps, hours, or wall time as epoch seconds (drawn as UTC dates)."""
    if x_axis == "wall_time":
        return data["wall_time"].to_numpy(dtype=np.float64)
    return x_values(data, x_axis).to_numpy(dtype=np.float64)


def scalar_chart(
    series: Mapping[str, pd.DataFrame],
    *,
    tag: str,
    smoothing: float = 0.6,
    x_axis: str = "step",
    colors: Mapping[str, str] | None = None,
    max_points: int = MAX_POINTS,
) -> Chart:
    """``metric_charts.scalar_figure`` without Plotly: a faint raw line and the smoothed line per run."""
    drawn: list[Series] = []
    notes: list[str] = []
    for run in drawn_runs(series, x_axis, smoothing, max_points, colors, _numeric_x):
        notes += point_notes(display_name(run.run), run.points, max_points)
        drawn += _run_series(run.points.shown, display_name(run.label), run.color, smoothing)
    x_title = X_AXES.get(x_axis, x_axis)
    return Chart(
        display_name(tag),
        drawn,
        x=Axis(x_title + (" (UTC)" if x_axis == "wall_time" else ""), time=x_axis == "wall_time"),
        note=" · ".join(notes),
        width=WIDTH,
        x_label=x_title,
    )


def _run_series(shown: pd.DataFrame, name: str, line_color: str, smoothing: float) -> list[Series]:
    x = shown["x"].to_numpy()
    if smoothing <= 0:
        return [Series(name, x, shown["raw"].to_numpy(), line_color, width=1.5, markers=False)]
    return [
        Series(
            f"{name} (raw)",
            x,
            shown["raw"].to_numpy(),
            line_color,
            width=1,
            opacity=0.3,
            markers=False,
            legend=False,
        ),
        Series(name, x, shown["smooth"].to_numpy(), line_color, markers=False),
    ]


def histogram_chart(records: pd.DataFrame, *, tag: str, run: str = "", bins: int = HEAT_BINS) -> Chart:
    """``metric_charts.histogram_figure`` without Plotly: x = value, y = step, colour = share of the step."""
    steps, centres, _, share = heat_shares(records, bins)
    steps = np.asarray(steps, dtype=np.float64)
    half_x = (centres[1] - centres[0]) / 2 if len(centres) > 1 else 0.5
    half_y = np.diff(steps).min() / 2 if len(steps) > 1 else 0.5
    x_edges = np.concatenate([centres - half_x, [centres[-1] + half_x]]) if len(centres) else np.zeros(0)
    y_edges = np.concatenate([steps - half_y, [steps[-1] + half_y]]) if len(steps) else np.zeros(0)
    heat = Heat(x_edges, y_edges, share.T, "viridis", label="share of the step's counts")
    title = f"{display_name(tag)} (histogram over steps)" + (f" · {display_name(run)}" if run else "")
    return Chart(title, [], x=Axis("value"), y=Axis("step"), heat=heat, width=WIDTH, x_label="value ≈")


def episodes_chart(
    episodes: pd.DataFrame, *, run: str = "", line_color: str | None = None, width: int = WIDTH
) -> Chart:
    """``metric_charts.episodes_figure`` without Plotly: every episode a point, the mean a line, min-max a
    band."""
    data = episodes[np.isfinite(episodes["reward"].to_numpy(dtype=float))]
    stats = evaluation_summary(episodes)
    c = line_color or color(0)
    x = stats["train_iter"].to_numpy(dtype=np.float64)
    drawn = [
        Series(
            "episode",
            data["train_iter"].to_numpy(np.float64),
            data["reward"].to_numpy(np.float64),
            c,
            "markers",
            opacity=0.45,
            hover=False,
        ),
        Series(
            "mean",
            x,
            stats["mean"].to_numpy(np.float64),
            c,
            low=stats["min"].to_numpy(np.float64),
            high=stats["max"].to_numpy(np.float64),
        ),
    ]
    title = "Evaluator reward per episode" + (f" · {display_name(run)}" if run else "")
    axis = Axis("train iteration")
    return Chart(title, drawn, x=axis, y=Axis("episode reward"), width=width, x_label="train iter")
