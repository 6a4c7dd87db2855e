"""Plotly builders for training metrics: pure functions from frames to ``go.Figure``.

No Streamlit here. Tags and run names come from log files, so every label
that reaches a figure goes through ``charts.plotly_text`` (Plotly reads a few
HTML tags in titles, legends and hovers; quotes stay quotes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd
import plotly.colors
import plotly.graph_objects as go

from rl_board.api import evaluation_summary
from rl_board.ui.charts import downsample, plotly_text

MAX_POINTS = 2000
MAX_HEAT_ROWS = 300
HEAT_BINS = 64
NO_PREFIX = "(no prefix)"
X_AXES = {"step": "step", "wall_time": "wall time", "relative": "hours since start"}
PALETTE = plotly.colors.qualitative.Plotly
LEGEND = {
    "orientation": "h",
    "yanchor": "top",
    "y": -0.22,
    "xanchor": "left",
    "x": 0,
}  # below the plot: several runs never cover the title
ALIAS_CHARS = 28


def color(index: int) -> str:
    """The colour of the index-th run (stable across every chart of a page)."""
    return PALETTE[index % len(PALETTE)]


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _esc(text: object) -> str:
    return plotly_text(text)


# --------------------------------------------------------------------------- tags


def tag_group(tag: str) -> str:
    """The group a tag belongs to: the part before its first `/` (e.g. `actor`, `time`)."""
    head, sep, _ = tag.partition("/")
    return head if sep and head else NO_PREFIX


def filter_tags(tags: Iterable[str], text: str) -> list[str]:
    """Tags containing every space-separated word of `text` (case-insensitive); all tags when empty."""
    words = [w.lower() for w in text.split()]
    return [t for t in tags if all(w in t.lower() for w in words)]


def group_tags(tags: Iterable[str]) -> dict[str, list[str]]:
    """Tags by group, groups and tags sorted (the no-prefix group last)."""
    groups: dict[str, list[str]] = {}
    for tag in sorted(set(tags)):
        groups.setdefault(tag_group(tag), []).append(tag)
    return dict(sorted(groups.items(), key=lambda kv: (kv[0] == NO_PREFIX, kv[0])))


# --------------------------------------------------------------------------- smoothing


def ema(values: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's debiased exponential moving average; NaN/Inf points are skipped (NaN out).

    ``weight`` 0 returns the values; 0.99 is very smooth. The first points
    are not pulled towards 0 (the bias of a plain EMA started at 0 is divided out).
    """
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    clean = np.where(finite, values, np.nan)
    if weight <= 0 or not finite.any():
        return clean
    alpha = 1.0 - min(float(weight), 0.999)
    smooth = pd.Series(clean).ewm(alpha=alpha, adjust=True, ignore_na=True).mean().to_numpy()
    return np.where(finite, smooth, np.nan)


# --------------------------------------------------------------------------- curves


def x_values(frame: pd.DataFrame, x_axis: str) -> pd.Series:
    """The x of each point: step, wall time (datetime) or hours since the run's first point."""
    if x_axis == "wall_time":
        return pd.to_datetime(frame["wall_time"], unit="s")
    if x_axis == "relative":
        wall = frame["wall_time"].astype(float)
        return (wall - wall.min()) / 3600.0
    return frame["step"]


class RunPoints(NamedTuple):
    """One run's points of a tag as both kinds of chart draw them: ``shown`` (x, raw, smooth, step; evenly
    down-sampled, last point kept), the NaN/Inf points left out, the points before down-sampling, and the
    finite values."""

    shown: pd.DataFrame
    bad: int
    total: int
    finite: np.ndarray


def run_points(
    frame: pd.DataFrame,
    x_axis: str,
    smoothing: float,
    max_points: int,
    x_of: Callable[[pd.DataFrame, str], object],
) -> RunPoints | None:
    """A run's points in order (a step logged twice: its last value; no wall time: left out off the step
    axis), smoothed before down-sampling so the smoothed line is the same at any zoom; None when none is
    left. ``x_of(data, x_axis)``: x as the chart draws it."""
    data = frame.sort_values("step", kind="stable").drop_duplicates("step", keep="last")
    if x_axis != "step":
        data = data[data["wall_time"].notna()]
    if data.empty:
        return None
    values = data["value"].to_numpy(dtype=np.float64)
    finite = np.isfinite(values)
    shown = pd.DataFrame(
        {
            "x": np.asarray(x_of(data, x_axis)),
            "raw": np.where(finite, values, np.nan),
            "smooth": ema(values, smoothing),
            "step": data["step"].to_numpy(),
        }
    )
    total = len(shown)
    if total > max_points:
        shown = downsample(shown, max_points)
    return RunPoints(shown, int((~finite).sum()), total, values[finite])


class DrawnRun(NamedTuple):
    """A run a scalar chart draws: its name, its legend name (a short alias beside other runs), its colour
    and its points."""

    run: str
    label: str
    color: str
    points: RunPoints


def drawn_runs(
    series: Mapping[str, pd.DataFrame],
    x_axis: str,
    smoothing: float,
    max_points: int,
    colors: Mapping[str, str] | None,
    x_of: Callable[[pd.DataFrame, str], object],
) -> list[DrawnRun]:
    """The runs of one tag with points left to draw, in order, for either kind of chart (``run_points``)."""
    labels = aliases(list(series)) if len(series) > 1 else {run: run for run in series}
    drawn = []
    for k, (run, frame) in enumerate(series.items()):
        points = run_points(frame, x_axis, smoothing, max_points, x_of)
        if points is not None:
            drawn.append(DrawnRun(run, labels[run], (colors or {}).get(run, color(k)), points))
    return drawn


def _plotted_x(data: pd.DataFrame, x_axis: str) -> np.ndarray:
    """x as Plotly draws it (wall time as datetimes)."""
    return x_values(data, x_axis).to_numpy()


def point_notes(name: str, points: RunPoints, max_points: int) -> list[str]:
    """What a chart says of a run's points it did not draw."""
    notes = [f"{name}: {points.bad} NaN/Inf point(s) not drawn"] if points.bad else []
    if points.total > max_points:
        notes.append(f"{name}: {max_points} of {points.total} points shown")
    return notes


def scalar_figure(
    series: Mapping[str, pd.DataFrame],
    *,
    tag: str,
    smoothing: float = 0.6,
    x_axis: str = "step",
    colors: Mapping[str, str] | None = None,
    max_points: int = MAX_POINTS,
) -> go.Figure:
    """One tag of one or more runs: a faint raw line and (with smoothing > 0) the smoothed line on top.

    ``series`` maps a run name to its points (``step``, ``value``,
    ``wall_time``), as ``MetricsBundle.series`` returns them. A step logged
    twice keeps its last value; NaN/Inf points are left out of the lines and
    counted in a note; long series are down-sampled evenly (last point kept)
    after smoothing, so the smoothed line is the same at any zoom.
    """
    fig = go.Figure()
    notes: list[str] = []
    finite_values: list[np.ndarray] = []
    for drawn in drawn_runs(series, x_axis, smoothing, max_points, colors, _plotted_x):
        finite_values.append(drawn.points.finite)
        notes += point_notes(_esc(drawn.run), drawn.points, max_points)
        _add_run_traces(fig, drawn.points.shown, _esc(drawn.label), drawn.color, smoothing)
    several = len(series) > 1
    fig.update_layout(
        title={"text": _esc(tag), "font": {"size": 14}},
        height=300 + (30 if several else 0),
        hovermode="x unified",
        margin={"l": 10, "r": 10, "t": 40, "b": 40 + (18 if notes else 0) + (40 if several else 0)},
        xaxis_title=X_AXES.get(x_axis, x_axis),
        showlegend=several,
        legend=LEGEND,
    )
    _constant_axis(fig, finite_values)
    if notes:
        _note(fig, " · ".join(notes))
    return fig


def aliases(runs: list[str]) -> dict[str, str]:
    """Short legend names: the end of each run's path, as long as they stay distinct (full names in
    hovers)."""
    short = {run: run.rsplit("/", 1)[-1] for run in runs}
    if len(set(short.values())) < len(runs):
        short = {run: run for run in runs}
    return {
        run: name if len(name) <= ALIAS_CHARS else "…" + name[-(ALIAS_CHARS - 1) :]
        for run, name in short.items()
    }


def _constant_axis(fig: go.Figure, values: list[np.ndarray]) -> None:
    """A series that never changes (a constant learning rate) is drawn at its value, not at 0 of a −1…1
    axis."""
    finite = np.concatenate(values) if values else np.array([])
    if not len(finite) or finite.max() - finite.min() > 1e-12 * max(1.0, abs(float(finite.max()))):
        return
    level = float(finite[0])
    pad = abs(level) * 0.1 or 1.0
    fig.update_yaxes(range=[level - pad, level + pad], tickformat=".4~g")


def _add_run_traces(fig: go.Figure, shown: pd.DataFrame, run: str, line_color: str, smoothing: float) -> None:
    smooth = smoothing > 0
    fig.add_trace(
        go.Scatter(
            x=shown["x"],
            y=shown["raw"],
            mode="lines",
            name=run if not smooth else f"{run} (raw)",
            line={"color": _rgba(line_color, 0.3) if smooth else line_color, "width": 1},
            legendgroup=run,
            showlegend=not smooth,
            customdata=shown["step"],
            hovertemplate="step %{customdata}<br>raw %{y:.5g}<extra>" + run + "</extra>",
        )
    )
    if smooth:
        fig.add_trace(
            go.Scatter(
                x=shown["x"],
                y=shown["smooth"],
                mode="lines",
                name=run,
                legendgroup=run,
                line={"color": line_color, "width": 2},
                customdata=shown["step"],
                hovertemplate="step %{customdata}<br>smoothed %{y:.5g}<extra>" + run + "</extra>",
            )
        )


def _note(fig: go.Figure, text: str) -> None:
    fig.add_annotation(
        text=text, showarrow=False, xref="paper", yref="paper", x=0, y=-0.3, xanchor="left", font={"size": 10}
    )


# --------------------------------------------------------------------------- histograms


def rebin(records: pd.DataFrame, bins: int = HEAT_BINS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Histogram records (``step``, ``left``, ``right``, ``count`` lists) on one shared grid.

    Returns (steps, bin centres, counts[step, bin]). Each bucket's count goes
    to the shared bin holding its centre; empty or non-finite buckets are dropped.
    """
    rows = records.sort_values("step", kind="stable").drop_duplicates("step", keep="last")
    parts = []
    for left, right, count in zip(rows["left"], rows["right"], rows["count"], strict=True):
        centres = (np.asarray(left, dtype=float) + np.asarray(right, dtype=float)) / 2
        counts = np.asarray(count, dtype=float)
        keep = np.isfinite(centres) & np.isfinite(counts) & (counts > 0)
        parts.append((centres[keep], counts[keep]))
    every = np.concatenate([c for c, _ in parts]) if parts else np.zeros(0)
    if every.size == 0:
        return rows["step"].to_numpy(), np.zeros(0), np.zeros((len(rows), 0))
    lo, hi = float(every.min()), float(every.max())
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    z = np.vstack([np.histogram(c, bins=edges, weights=w)[0] for c, w in parts])
    return rows["step"].to_numpy(), (edges[:-1] + edges[1:]) / 2, z


def heat_shares(records: pd.DataFrame, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A histogram tag over steps as both kinds of heatmap draw it: the steps (evenly thinned to
    ``MAX_HEAT_ROWS``), the bin centres, the counts and each count's share of its step."""
    steps, centres, z = rebin(records, bins)
    if len(steps) > MAX_HEAT_ROWS:
        idx = np.unique(np.round(np.linspace(0, len(steps) - 1, MAX_HEAT_ROWS)).astype(int))
        steps, z = steps[idx], z[idx]
    totals = z.sum(axis=1, keepdims=True)
    return steps, centres, z, np.divide(z, totals, out=np.zeros_like(z), where=totals > 0)


def histogram_figure(records: pd.DataFrame, *, tag: str, run: str = "", bins: int = HEAT_BINS) -> go.Figure:
    """A histogram tag over steps as a heatmap: x = value, y = step, colour = share of the step's counts."""
    steps, centres, z, share = heat_shares(records, bins)
    fig = go.Figure(
        go.Heatmap(
            x=centres,
            y=steps,
            z=share,
            colorscale="Viridis",
            customdata=z,
            colorbar={"title": "share"},
            hovertemplate="step %{y}<br>value ≈ %{x:.4g}<br>share %{z:.2%} (count "
            "%{customdata:.4g})<extra></extra>",
        )
    )
    title = f"{_esc(tag)} (histogram over steps)" + (f" · {_esc(run)}" if run else "")
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        height=320,
        xaxis_title="value",
        yaxis_title="step",
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
    )
    return fig


# --------------------------------------------------------------------------- evaluator episodes


def episodes_figure(episodes: pd.DataFrame, *, run: str = "", line_color: str | None = None) -> go.Figure:
    """Evaluator reward per evaluation: every episode as a point, the mean as a line, min-max as a band.

    ``episodes`` has ``train_iter`` and ``reward`` (one row per finished episode).
    """
    data = episodes[np.isfinite(episodes["reward"].to_numpy(dtype=float))]
    stats = evaluation_summary(episodes)
    c = line_color or color(0)
    x = stats["train_iter"]
    fig = go.Figure(
        [
            go.Scatter(
                x=x, y=stats["max"], mode="lines", line={"width": 0}, hoverinfo="skip", showlegend=False
            ),
            go.Scatter(
                x=x,
                y=stats["min"],
                mode="lines",
                line={"width": 0},
                fill="tonexty",
                name="min–max",
                fillcolor=_rgba(c, 0.15),
                hoverinfo="skip",
            ),
            go.Scatter(
                x=data["train_iter"],
                y=data["reward"],
                mode="markers",
                name="episode",
                marker={"size": 5, "color": _rgba(c, 0.45)},
                hovertemplate="train iter %{x}<br>episode reward %{y:.5g}<extra></extra>",
            ),
            go.Scatter(
                x=x,
                y=stats["mean"],
                mode="lines+markers",
                name="mean",
                line={"color": c, "width": 2},
                customdata=stats["size"],
                hovertemplate="train iter %{x}<br>mean %{y:.5g} over %{customdata} episodes<extra></extra>",
            ),
        ]
    )
    title = "Evaluator reward per episode" + (f" · {_esc(run)}" if run else "")
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        height=340,
        xaxis_title="train iteration",
        yaxis_title="episode reward",
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
        legend=LEGEND,
    )
    return fig


def chart_key(*parts: str) -> str:
    """A stable widget key for free text such as run names and tags."""
    return "m." + hashlib.sha1("\0".join(parts).encode()).hexdigest()[:16]
