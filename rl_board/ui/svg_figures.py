"""The run's charts as ``svg_charts.Chart``: the same numbers, colours and notes as the Plotly builders
(``charts``, ``run_charts``, ``pattern_charts``, ``trajectory_charts``), drawn without a script.

Each function takes what its Plotly twin takes. Pure: frames in, a ``Chart`` out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rl_board.formats import fields as F
from rl_board.ui import charts
from rl_board.ui.charts import RUN_COLORS, CurveOptions, downsample, has_series
from rl_board.ui.pattern_charts import SIGNALS
from rl_board.ui.svg_charts import Axis, Chart, Heat, Series
from rl_board.ui.text import display_name
from rl_board.ui.trajectory_charts import FINISH_COLORS, TOOL_METRICS, finish_reasons_in

WIDE, HALF, THIRD = (
    1100,
    560,
    380,
)  # the SVG's width in its units, for a chart across, in two or three columns
DEFAULT_CURVES = CurveOptions()


def _name(text: object) -> str:
    """A label from the logs as plain text (escaped where it is drawn); bidi controls made visible."""
    return display_name(text)


def _curve_series(data: pd.DataFrame, prefix: str, label: str, color: str, options: CurveOptions) -> Series:
    n = charts.series_numbers(data, prefix, options)
    band = options.band != charts.NO_BAND
    return Series(
        _name(label), n.x, n.mean, color, low=n.low if band else None, high=n.high if band else None
    )


def curve_chart(
    summary: pd.DataFrame,
    series: Sequence[str],
    *,
    title: str,
    y_title: str,
    options: CurveOptions = DEFAULT_CURVES,
    labels: dict[str, str] | None = None,
    width: int = HALF,
) -> Chart:
    """``charts.curve_figure`` without Plotly: each series' mean per step with its band."""
    data = downsample(summary.sort_values("step"), options.max_points)
    drawn = []
    for k, prefix in enumerate(series):
        if has_series(data, prefix):
            label = (labels or {}).get(prefix) or F.label(prefix, F.STEP)
            color = F.color(prefix, default=RUN_COLORS[k % len(RUN_COLORS)])
            drawn.append(_curve_series(data, prefix, label, color, options))
    note = " · ".join(charts.curve_notes(options, len(data), len(summary)))
    return Chart(title, drawn, y=Axis(y_title), note=note, width=width)


def comparison_chart(
    summaries: dict[str, pd.DataFrame],
    prefix: str,
    *,
    title: str,
    y_title: str,
    options: CurveOptions = DEFAULT_CURVES,
    width: int = HALF,
) -> Chart:
    """``charts.comparison_figure`` without Plotly: one series of several runs, each with its band."""
    runs, shown, total = charts.compared_runs(summaries, prefix, options)
    drawn = [
        _curve_series(data, prefix, run, RUN_COLORS[k % len(RUN_COLORS)], options) for k, run, data in runs
    ]
    note = " · ".join(charts.curve_notes(options, shown, total))
    return Chart(title, drawn, y=Axis(y_title), note=note, width=width)


def _bar_title(title: str, total: int) -> str:
    shown = min(total, charts.MAX_BARS)
    return title if shown == total else f"{title} — first {shown} of {total} samples"


def reward_bars_chart(samples: pd.DataFrame) -> Chart:
    """Reward and ref_reward per sample of one step, as grouped bars (first ``MAX_BARS`` samples)."""
    data = samples.sort_values("sample").head(charts.MAX_BARS)
    bars = [
        Series(
            F.label(c), data["sample"].to_numpy(), data[c].to_numpy(np.float64), F.color(c, F.SAMPLE), "bar"
        )
        for c in ("reward", "ref_reward")
        if c in data.columns and data[c].notna().any()
    ]
    title = _bar_title("Reward per sample", len(samples))
    return Chart(title, bars, x=Axis("sample", integer=True), y=Axis("reward"), x_label="sample", width=THIRD)


def reward_gap_chart(samples: pd.DataFrame) -> Chart:
    """reward − ref_reward per sample; positive bars (green) beat the reference."""
    data = samples.sort_values("sample").head(charts.MAX_BARS)
    bars = []
    if "reward_gap" in data.columns and data["reward_gap"].notna().any():
        gap = data["reward_gap"].to_numpy(dtype=np.float64)
        colors = np.where(gap >= 0, "#2da44e", "#cf222e").tolist()
        bars.append(Series("gap", data["sample"].to_numpy(), gap, "#2da44e", "bar", colors=colors))
    title = _bar_title("Reward gap (reward − ref reward)", len(samples))
    return Chart(title, bars, x=Axis("sample", integer=True), y=Axis("gap"), x_label="sample", width=THIRD)


def reward_hist_chart(samples: pd.DataFrame, bins: int = 30) -> Chart:
    """Distribution of reward and (when present) ref_reward in one step, on shared bins."""
    columns = [c for c in ("reward", "ref_reward") if c in samples.columns and samples[c].notna().any()]
    values = {c: samples[c].to_numpy(np.float64) for c in columns}
    finite = np.concatenate([v[np.isfinite(v)] for v in values.values()] or [np.zeros(0)])
    bars = []
    if len(finite):
        lo, hi = float(finite.min()), float(finite.max())
        edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
        centres = (edges[:-1] + edges[1:]) / 2
        for c in columns:
            counts, _ = np.histogram(values[c][np.isfinite(values[c])], bins=edges)
            bars.append(Series(F.label(c), centres, counts, F.color(c, F.SAMPLE), "bar", opacity=0.65))
    return Chart(
        "Reward distribution", bars, x=Axis("reward"), y=Axis("samples"), x_label="reward ≈", width=THIRD
    )


def length_chart(counts: pd.DataFrame, edges: np.ndarray, truncated: pd.Series, unit: str) -> Chart:
    """``run_charts.length_figure`` without Plotly: share of each step's samples per length bin (a heatmap),
    and the share at the longest length (a line on the right axis)."""
    shares = counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0).fillna(0.0)
    steps = shares.index.to_numpy(dtype=np.float64)
    half = (np.diff(steps).min() / 2) if len(steps) > 1 else 0.5
    x_edges = np.concatenate([steps - half, [steps[-1] + half]]) if len(steps) else np.zeros(0)
    heat = Heat(
        x_edges, np.asarray(edges, dtype=np.float64), shares.to_numpy(), "#0969da", 1.0, "share of step"
    )
    line = Series(
        "at the longest length",
        truncated.index.to_numpy(dtype=np.float64),
        truncated.to_numpy(dtype=np.float64),
        F.color("kl"),
        right=True,
        percent=True,
    )
    centres = (np.asarray(edges[:-1]) + np.asarray(edges[1:])) / 2
    peak = {
        float(step): f"most samples at ≈ {centres[int(np.argmax(row))]:.0f} {unit}"
        for step, row in zip(steps, shares.to_numpy(), strict=True)
        if len(row) and row.max() > 0
    }
    return Chart(
        f"Response length ({unit}) per step: distribution, and the share at the longest length",
        [line],
        y=Axis(unit),
        y2=Axis("at the longest length", percent=True, lo=0.0, hi=1.0),
        heat=heat,
        width=WIDE,
        extra_hover=peak,
    )


def history_chart(history: pd.DataFrame) -> Chart:
    """``run_charts.history_figure`` without Plotly: each sample's reward by step, the step mean, length."""
    color = F.color("reward", F.SAMPLE)
    points = Series(
        "sample reward",
        history["step"].to_numpy(),
        history["reward"].to_numpy(np.float64),
        color,
        "markers",
        opacity=0.55,
        hover=False,
    )
    mean = history.groupby("step")["reward"].mean()
    drawn = [points, Series("mean reward", mean.index.to_numpy(), mean.to_numpy(np.float64), color)]
    length = "n_tokens" if "n_tokens" in history.columns else "response_chars"
    y2 = None
    if length in history.columns:
        by_step = history.groupby("step")[length].mean()
        label = F.label(length)
        drawn.append(
            Series(
                label,
                by_step.index.to_numpy(),
                by_step.to_numpy(np.float64),
                F.color("length"),
                dash=True,
                markers=False,
                right=True,
                width=1.5,
            )
        )
        y2 = Axis(label)
    return Chart("This prompt over training", drawn, y=Axis("reward"), y2=y2, width=WIDE)


def shares_chart(shares: pd.DataFrame, names: list[str]) -> Chart:
    """``pattern_charts.shares_figure`` without Plotly: each family's share of each step's answers."""
    data = downsample(shares.sort_values("step"))
    drawn = [
        Series(
            _name(name),
            data["step"].to_numpy(),
            data[name].to_numpy(np.float64),
            RUN_COLORS[k % len(RUN_COLORS)],
            percent=True,
        )
        for k, name in enumerate(names)
        if name in data.columns
    ]
    axis = Axis("share of the step's answers", percent=True, zero=True)
    return Chart("Share of each step's answers, per family", drawn, y=axis, width=WIDE)


def signal_chart(signals: pd.DataFrame, column: str) -> Chart:
    """``pattern_charts.signal_figure`` without Plotly: how many of each step's answers carry a signal."""
    title, color = SIGNALS[column]
    data = downsample(signals.sort_values("step"))
    steps = data["step"].to_numpy(dtype=np.float64)
    share = (data[column] / data["samples"].where(data["samples"] > 0)).fillna(0.0).to_numpy()
    bar = Series("answers", steps, data[column].to_numpy(np.float64), color, "bar")
    extra = {float(s): f"{p:.1%} of the step's answers" for s, p in zip(steps, share, strict=True)}
    return Chart(title, [bar], y=Axis("answers", zero=True), extra_hover=extra, width=680)


def finish_chart(summary: pd.DataFrame, order: tuple[str, ...]) -> Chart:
    """``trajectory_charts.finish_figure`` without Plotly: each finish reason's share per step, stacked."""
    data = downsample(summary.sort_values("step"))
    drawn = [
        Series(
            _name(reason),
            data["step"].to_numpy(),
            data[f"finish_{reason}"].fillna(0.0).to_numpy(np.float64),
            FINISH_COLORS.get(reason, RUN_COLORS[k % len(RUN_COLORS)]),
            "area",
            percent=True,
        )
        for k, reason in enumerate(finish_reasons_in(data, order))
    ]
    axis = Axis("share of trajectories", percent=True, lo=0.0, hi=1.0)
    return Chart("Why trajectories ended, per step", drawn, y=axis)


def tool_chart(tools: pd.DataFrame, metric: str, chosen: list[str]) -> Chart:
    """``trajectory_charts.tool_figure`` without Plotly: one tool metric per step, a line per tool."""
    drawn = []
    for k, tool in enumerate(chosen):
        rows = tools[tools["tool"] == tool].sort_values("step")
        if len(rows):
            drawn.append(
                Series(
                    _name(tool),
                    rows["step"].to_numpy(),
                    rows[metric].to_numpy(np.float64),
                    RUN_COLORS[k % len(RUN_COLORS)],
                    percent=metric == "error_rate",
                )
            )
    title, axis_title = TOOL_METRICS[metric]
    axis = Axis(axis_title, percent=metric == "error_rate", zero=metric != "reward_mean")
    return Chart(f"{title}, per tool", drawn, y=axis)
