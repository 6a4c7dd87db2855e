"""Figures of agent runs: why trajectories ended (a stacked area per step) and each tool over training. Pure.

Tool names come from the logs (user text): they go through ``plotly_text``.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from rl_board.ui.charts import RUN_COLORS, downsample, plotly_text

# Why a trajectory ended -> its colour: finishing is green, each kind of truncation its own warm colour.
FINISH_COLORS = {
    "stop": "#2da44e",
    "length": "#cf222e",
    "turn_limit": "#bf8700",
    "tool_budget": "#8250df",
    "timeout": "#0969da",
    "error": "#6e2b2b",
    "unknown": "#8b949e",
}
# metric -> (chart title, axis title)
TOOL_METRICS = {
    "calls": ("Calls per step", "calls"),
    "error_rate": ("Error rate (failed results / calls)", "error rate"),
    "reward_mean": ("Mean reward of the trajectories that called it", "mean reward"),
    "trajectories": ("Trajectories that called it", "trajectories"),
}


def finish_reasons_in(summary: pd.DataFrame, order: tuple[str, ...]) -> list[str]:
    """The reasons with a share column (``finish_<reason>``), in ``order`` first, then any other."""
    found = [c.removeprefix("finish_") for c in summary.columns if c.startswith("finish_")]
    return [r for r in order if r in found] + sorted(r for r in found if r not in order)


def finish_figure(summary: pd.DataFrame, order: tuple[str, ...]) -> go.Figure:
    """The share of each finish reason per step, stacked to 1: everything above ``stop`` was cut short."""
    data = downsample(summary.sort_values("step"))
    fig = go.Figure()
    for k, reason in enumerate(finish_reasons_in(data, order)):
        fig.add_trace(
            go.Scatter(
                x=data["step"],
                y=data[f"finish_{reason}"].fillna(0.0),
                name=plotly_text(reason),
                mode="lines+markers",
                stackgroup="finish",
                marker={"size": 4},
                line={"width": 1, "color": FINISH_COLORS.get(reason, RUN_COLORS[k % len(RUN_COLORS)])},
                hovertemplate="step %{x}<br>%{y:.1%} " + plotly_text(reason) + "<extra></extra>",
            )
        )
    fig.update_layout(
        title={"text": "Why trajectories ended, per step"},
        xaxis_title="step",
        yaxis={"title": "share of trajectories", "tickformat": ".0%", "range": [0, 1]},
        height=360,
        hovermode="x unified",
        clickmode="event+select",
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "yanchor": "top", "y": -0.22, "x": 0, "traceorder": "normal"},
    )
    return fig


def tool_figure(tools: pd.DataFrame, metric: str, chosen: list[str]) -> go.Figure:
    """One tool metric (``TOOL_METRICS``) per step, a line per chosen tool."""
    fig = go.Figure()
    for k, tool in enumerate(chosen):
        rows = tools[tools["tool"] == tool].sort_values("step")
        if rows.empty:
            continue
        name = plotly_text(tool)
        fig.add_trace(
            go.Scatter(
                x=rows["step"],
                y=rows[metric],
                name=name,
                mode="lines+markers",
                marker={"size": 5},
                line={"color": RUN_COLORS[k % len(RUN_COLORS)], "width": 2},
                hovertemplate="step %{x}<br>" + name + " %{y:.4g}<extra></extra>",
            )
        )
    y = {"tickformat": ".0%", "rangemode": "tozero"} if metric == "error_rate" else {"rangemode": "tozero"}
    if metric == "reward_mean":
        y = {}
    fig.update_layout(
        title={"text": f"{TOOL_METRICS[metric][0]}, per tool"},
        xaxis_title="step",
        yaxis={"title": TOOL_METRICS[metric][1], **y},
        height=320,
        hovermode="closest",
        clickmode="event+select",
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
    )
    return fig
