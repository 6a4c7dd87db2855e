"""Figures of the Patterns page: each template family's share of the answers per step (is it spreading?) and
how many answers loop or mix scripts per step. Pure: frames in, ``go.Figure`` out.

Family names are rl-board's own (``T1``...); they still go through ``plotly_text`` like any label.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from rl_board.ui.charts import RUN_COLORS, downsample, plotly_text

# signal -> (chart title, colour)
SIGNALS = {
    "loops": ("Answers that loop, per step", "#cf222e"),
    "mixed_scripts": ("Answers that mix scripts, per step", "#8250df"),
}


def _layout(fig: go.Figure, title: str, y: dict) -> go.Figure:
    fig.update_layout(
        title={"text": title},
        xaxis_title="step",
        yaxis=y,
        height=300,
        hovermode="closest",
        clickmode="event+select",
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
    )
    return fig


def shares_figure(shares: pd.DataFrame, names: list[str]) -> go.Figure:
    """Per step, the share of the step's answers in each named family (a line each, in ``names`` order)."""
    data = downsample(shares.sort_values("step"))
    fig = go.Figure()
    for k, name in enumerate(names):
        if name not in data.columns:
            continue
        label = plotly_text(name)
        fig.add_trace(
            go.Scatter(
                x=data["step"],
                y=data[name],
                name=label,
                mode="lines+markers",
                marker={"size": 5},
                line={"color": RUN_COLORS[k % len(RUN_COLORS)], "width": 2},
                hovertemplate="step %{x}<br>" + label + ": %{y:.1%} of the answers<extra></extra>",
            )
        )
    return _layout(
        fig,
        "Share of each step's answers, per family",
        {"title": "share of the step's answers", "tickformat": ".0%", "rangemode": "tozero"},
    )


def signal_figure(signals: pd.DataFrame, column: str) -> go.Figure:
    """How many of each step's answers carry a signal (``loops`` or ``mixed_scripts``), as bars."""
    title, color = SIGNALS[column]
    data = downsample(signals.sort_values("step"))
    share = data[column] / data["samples"].where(data["samples"] > 0)
    fig = go.Figure(
        go.Bar(
            x=data["step"],
            y=data[column],
            marker={"color": color},
            customdata=share.fillna(0.0),
            hovertemplate="step %{x}<br>%{y} answers (%{customdata:.1%})<extra></extra>",
        )
    )
    return _layout(fig, title, {"title": "answers", "rangemode": "tozero"})
