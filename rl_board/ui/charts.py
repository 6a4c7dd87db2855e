"""Plotly figure builders: pure functions from frames to ``go.Figure``.

No Streamlit here, so every figure can be asserted on in unit tests. Text
from the logs that ends up in a figure (token strings, run and column names)
goes through ``plotly_text``: Plotly reads a few HTML tags (``<a href>``,
``<br>``) in titles, legends and hovers, so ``<``, ``>`` and ``&`` are
escaped; quotes are not (Plotly would show ``&quot;``).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from rl_board.formats import fields as F
from rl_board.ui.chips import diverging as is_diverging
from rl_board.ui.text import display_name, token_label

MAX_CURVE_POINTS = 2000
MAX_BARS = 1000
RUN_COLORS = ("#1f6feb", "#cf222e", "#2da44e", "#bf8700", "#8250df", "#0a7e8c", "#e16f24", "#6e7781")
_HEAT_SCALES = {"diverging": "RdBu_r", "sequential": "Oranges"}


@dataclass(frozen=True)
class CurveOptions:
    """How step curves are drawn: the band around the mean (see ``BANDS``) and zero_shift (each start at 0).

    ``band_scale`` applies to the ``std`` band only (mean ± band_scale·std).
    """

    band: str = "p10-p90"
    band_scale: float = 1.0
    zero_shift: bool = False
    max_points: int = MAX_CURVE_POINTS


# band -> (lower column suffix, upper column suffix, words for the note); "std" is computed from the mean
NO_BAND = "none"  # a line alone (a share per step has no spread of samples to show)
BANDS = {
    "p10-p90": ("p10", "p90", "10th–90th percentile of the step's samples"),
    "min-max": ("min", "max", "lowest to highest sample of the step"),
    "std": ("", "", ""),
}


def plotly_text(text: object) -> str:
    """Text for a Plotly title, legend, axis label or hover: tags escaped, quotes kept, bidi shown."""
    return html.escape(display_name(text), quote=False)


def downsample(summary: pd.DataFrame, max_points: int = MAX_CURVE_POINTS) -> pd.DataFrame:
    """At most ``max_points`` rows, evenly spaced, always keeping the first and last row."""
    n = len(summary)
    if n <= max_points or max_points < 2:
        return summary
    idx = np.unique(np.round(np.linspace(0, n - 1, max_points)).astype(np.int64))
    return summary.iloc[idx]


def has_series(summary: pd.DataFrame, prefix: str) -> bool:
    col = f"{prefix}_mean"
    return col in summary.columns and bool(summary[col].notna().any())


def _hex_to_rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


@dataclass(frozen=True)
class SeriesNumbers:
    """One series of a step summary as drawn: x, the mean, the band's edges, std and count per step."""

    x: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    std: np.ndarray
    count: np.ndarray


def series_numbers(data: pd.DataFrame, prefix: str, options: CurveOptions) -> SeriesNumbers:
    """The numbers of series ``prefix`` of a step summary, band chosen and zero shift applied (shared by
    the Plotly and the SVG curves)."""
    x = data["step"].to_numpy()
    mean = data[f"{prefix}_mean"].to_numpy(dtype=np.float64)
    std = np.nan_to_num(
        data.get(f"{prefix}_std", pd.Series(0.0, index=data.index)).to_numpy(dtype=np.float64)
    )
    count = data.get(f"{prefix}_count", data.get("samples", pd.Series(0, index=data.index)))
    low, high = band_edges(data, prefix, mean, std, options)
    if options.zero_shift:
        finite = mean[np.isfinite(mean)]
        shift = finite[0] if len(finite) else 0.0
        mean, low, high = mean - shift, low - shift, high - shift
    return SeriesNumbers(x, mean, low, high, std, count.to_numpy(dtype=np.float64))


def _series_traces(
    data: pd.DataFrame, prefix: str, *, label: str, color: str, group: str, options: CurveOptions
) -> list[go.Scatter]:
    """Band (upper, lower filled) and mean line of one series of a step summary."""
    n = series_numbers(data, prefix, options)
    x, mean, low, high, std = n.x, n.mean, n.low, n.high, n.std
    band = {
        "x": x,
        "mode": "lines",
        "line": {"width": 0},
        "hoverinfo": "skip",
        "showlegend": False,
        "legendgroup": group,
    }
    return [
        go.Scatter(y=high, name=f"{label} +band", **band),
        go.Scatter(y=low, name=f"{label} −band", fill="tonexty", fillcolor=_hex_to_rgba(color, 0.18), **band),
        go.Scatter(
            x=x,
            y=mean,
            name=label,
            legendgroup=group,
            mode="lines+markers",
            marker={"size": 5},
            line={"color": color, "width": 2},
            customdata=np.column_stack([std, n.count]),
            hovertemplate="step %{x}<br>mean %{y:.4g}<br>std %{customdata[0]:.4g}"
            "<br>n %{customdata[1]:.0f}<extra>%{fullData.name}</extra>",
        ),
    ]


def band_edges(
    data: pd.DataFrame, prefix: str, mean: np.ndarray, std: np.ndarray, options: CurveOptions
) -> tuple[np.ndarray, np.ndarray]:
    """The band's lower and upper edge: percentiles or extremes of the step's samples, or mean ± k·std."""
    if options.band == NO_BAND:
        return mean, mean
    lo_col, hi_col, _ = BANDS.get(options.band, BANDS["std"])
    if lo_col and f"{prefix}_{lo_col}" in data.columns and f"{prefix}_{hi_col}" in data.columns:
        return (
            data[f"{prefix}_{lo_col}"].to_numpy(dtype=np.float64),
            data[f"{prefix}_{hi_col}"].to_numpy(dtype=np.float64),
        )
    return mean - options.band_scale * std, mean + options.band_scale * std


def band_note(options: CurveOptions) -> str:
    if options.band == NO_BAND:
        return ""
    words = BANDS.get(options.band, BANDS["std"])[2]
    return f"band = {words}" if words else f"band = mean ± {options.band_scale:g}·std"


def curve_notes(options: CurveOptions, shown: int, total: int) -> list[str]:
    """What a curve chart says under it: the band, the shift, the down-sampling."""
    notes = [band_note(options)] if options.band != NO_BAND else []
    if options.zero_shift:
        notes.append("each curve shifted to start at 0")
    if shown < total:
        notes.append(f"showing {shown} of {total} steps (evenly spaced, last step kept)")
    return notes


def _curve_layout(
    fig: go.Figure, *, title: str, y_title: str, options: CurveOptions, shown: int, total: int
) -> None:
    notes = curve_notes(options, shown, total)
    fig.update_layout(
        title={"text": title},
        xaxis_title="step",
        yaxis_title=y_title,
        height=340,
        hovermode="closest",
        clickmode="event+select",
        dragmode="zoom",
        margin={"l": 10, "r": 10, "t": 50, "b": 60},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
        annotations=[
            {
                "text": " · ".join(notes),
                "showarrow": False,
                "xref": "paper",
                "yref": "paper",
                "x": 0,
                "y": -0.28,
                "xanchor": "left",
                "font": {"size": 11},
            }
        ],
    )


def curve_figure(
    summary: pd.DataFrame,
    series: Sequence[str],
    *,
    title: str,
    y_title: str,
    options: CurveOptions = CurveOptions(),
    labels: dict[str, str] | None = None,
) -> go.Figure:
    """Mean per step with a ±(band_scale·std) band for each series present in ``summary``.

    ``summary`` is ``RolloutStore.step_summary()``: columns ``step`` and
    ``{series}_{mean,std,count}``. Steps beyond ``options.max_points`` are
    down-sampled evenly (last step kept) and the figure says so. ``labels`` names series the step level of
    the field catalogue does not know (a per-sample column summarised, e.g. ``turns``).
    """
    data = downsample(summary.sort_values("step"), options.max_points)
    fig = go.Figure()
    for k, prefix in enumerate(series):
        if has_series(data, prefix):
            # Names are catalogue fields or the log's own columns (user text): escaped for Plotly's labels.
            label = (labels or {}).get(prefix) or F.label(prefix, F.STEP)  # a per-sample column's own label
            fig.add_traces(
                _series_traces(
                    data,
                    prefix,
                    label=plotly_text(label),
                    color=F.color(prefix, default=RUN_COLORS[k % len(RUN_COLORS)]),
                    group=prefix,
                    options=options,
                )
            )
    _curve_layout(fig, title=title, y_title=y_title, options=options, shown=len(data), total=len(summary))
    return fig


def compared_runs(
    summaries: dict[str, pd.DataFrame], prefix: str, options: CurveOptions
) -> tuple[list[tuple[int, str, pd.DataFrame]], int, int]:
    """The runs a comparison of ``prefix`` draws (their place in ``summaries``, name, down-sampled steps;
    runs lacking it skipped), and the most steps drawn and logged of any of them (for the note)."""
    runs = []
    shown = total = 0
    for k, (run, summary) in enumerate(summaries.items()):
        data = downsample(summary.sort_values("step"), options.max_points)
        if has_series(data, prefix):
            runs.append((k, run, data))
            shown, total = max(shown, len(data)), max(total, len(summary))
    return runs, shown, total


def comparison_figure(
    summaries: dict[str, pd.DataFrame],
    prefix: str,
    *,
    title: str,
    y_title: str,
    options: CurveOptions = CurveOptions(),
) -> go.Figure:
    """One series (e.g. ``reward``) of several runs, each with its band; runs lacking it are skipped.

    Run names are folder names (user text): they are escaped for Plotly's labels.
    """
    fig = go.Figure()
    runs, shown, total = compared_runs(summaries, prefix, options)
    for k, run, data in runs:
        fig.add_traces(
            _series_traces(
                data,
                prefix,
                label=plotly_text(run),
                group=f"run{k}",
                color=RUN_COLORS[k % len(RUN_COLORS)],
                options=options,
            )
        )
    _curve_layout(fig, title=title, y_title=y_title, options=options, shown=shown, total=total)
    return fig


def reward_bars_figure(samples: pd.DataFrame) -> go.Figure:
    """Reward and ref_reward per sample of one step, as grouped bars (first ``MAX_BARS`` samples)."""
    data = samples.sort_values("sample").head(MAX_BARS)
    fig = go.Figure()
    for column in ("reward", "ref_reward"):
        if column in data.columns and data[column].notna().any():
            fig.add_trace(
                go.Bar(
                    x=data["sample"],
                    y=data[column],
                    name=F.label(column),
                    marker_color=F.color(column, F.SAMPLE),
                    customdata=data["sample"],
                    hovertemplate="sample %{x}<br>" + column + " %{y:.4g}<extra></extra>",
                )
            )
    _bar_layout(fig, "Reward per sample", "reward", len(samples))
    fig.update_layout(barmode="group", clickmode="event+select")
    return fig


def reward_gap_figure(samples: pd.DataFrame) -> go.Figure:
    """reward − ref_reward per sample; positive bars beat the reference."""
    data = samples.sort_values("sample").head(MAX_BARS)
    fig = go.Figure()
    if "reward_gap" in data.columns and data["reward_gap"].notna().any():
        gap = data["reward_gap"].to_numpy(dtype=np.float64)
        colors = np.where(gap >= 0, "#2da44e", "#cf222e")
        fig.add_trace(
            go.Bar(
                x=data["sample"],
                y=gap,
                name=F.label("reward_gap"),
                marker_color=colors,
                customdata=data["sample"],
                hovertemplate="sample %{x}<br>gap %{y:.4g}<extra></extra>",
            )
        )
    _bar_layout(fig, "Reward gap (reward − ref reward)", "gap", len(samples))
    return fig


def _bar_layout(fig: go.Figure, title: str, y_title: str, total: int) -> None:
    shown = min(total, MAX_BARS)
    fig.update_layout(
        title={"text": title if shown == total else f"{title} — first {shown} of {total} samples"},
        xaxis_title="sample",
        yaxis_title=y_title,
        height=300,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
    )


def reward_hist_figure(samples: pd.DataFrame) -> go.Figure:
    """Distribution of reward and (when present) ref_reward in one step."""
    fig = go.Figure()
    for column in ("reward", "ref_reward"):
        if column in samples.columns and samples[column].notna().any():
            fig.add_trace(
                go.Histogram(
                    x=samples[column],
                    name=F.label(column),
                    opacity=0.65,
                    marker_color=F.color(column, F.SAMPLE),
                    nbinsx=30,
                )
            )
    fig.update_layout(
        barmode="overlay",
        title={"text": "Reward distribution"},
        xaxis_title="reward",
        yaxis_title="samples",
        height=300,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
    )
    return fig


def token_heatmap_figure(tokens: pd.DataFrame, metrics: Sequence[str]) -> go.Figure:
    """Token × metric heatmap; each metric row is its own trace with its own colour scale.

    Colours are normalised per row (diverging metrics centred on 0); ``z``
    holds the true values, so hovers show them.
    """
    present = [m for m in metrics if m in tokens.columns and tokens[m].notna().any()]
    x = tokens.index.to_numpy()  # token positions (pad tokens may have been left out)
    # <, > and & are escaped (Plotly reads a few tags); quotes stay, Plotly would show "&quot;".
    labels = [plotly_text(token_label(t)) for t in tokens["token"].astype(str)]
    fig = go.Figure()
    for row, metric in enumerate(present):
        values = tokens[metric].to_numpy(dtype=np.float64)
        finite = values[np.isfinite(values)]
        diverging = is_diverging(metric)
        trace: dict = {
            "colorscale": _HEAT_SCALES["diverging" if diverging else "sequential"],
            "showscale": False,
        }
        if diverging:
            bound = float(np.max(np.abs(finite))) if len(finite) else 1.0
            trace.update(zmin=-(bound or 1.0), zmax=bound or 1.0)
        elif len(finite):
            lo, hi = float(finite.min()), float(finite.max())
            trace.update(zmin=lo, zmax=hi if hi > lo else lo + 1.0)
        fig.add_trace(
            go.Heatmap(
                # numeric y: plotly.js fails to draw several one-row heatmaps on a categorical axis
                z=[values],
                x=x,
                y=[row],
                customdata=[labels],
                name=metric,
                xgap=1,
                ygap=2,
                hovertemplate="token #%{x} %{customdata}<br>" + metric + " = %{z:.4g}<extra></extra>",
                **trace,
            )
        )
    tick = {}
    if 0 < len(tokens) <= 80:
        tick = {"tickmode": "array", "tickvals": x, "ticktext": labels, "tickangle": -60}
    fig.update_layout(
        title={"text": "Token × metric (each row coloured on its own scale; hover for values)"},
        height=110 + 34 * max(len(present), 1) + (90 if tick else 0),
        margin={"l": 10, "r": 10, "t": 50, "b": 20},
        xaxis={"title": "token position", **tick},
        yaxis={
            "autorange": "reversed",
            "ticktext": [F.label(m, F.TOKEN) for m in present],
            "tickvals": list(range(len(present))),
            "tickmode": "array",
            "showgrid": False,
            "zeroline": False,
        },
    )
    return fig
