"""Figures of a run over training: response lengths per step (with truncation), one prompt's history. Pure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from rl_board.formats import fields as F


def length_figure(counts: pd.DataFrame, edges: np.ndarray, truncated: pd.Series, unit: str) -> go.Figure:
    """A step × length heatmap (share of the step's samples per bin) and the truncation share on top."""
    shares = counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0)
    centres = (edges[:-1] + edges[1:]) / 2
    fig = go.Figure(
        go.Heatmap(
            x=shares.index.to_numpy(),
            y=centres,
            z=shares.to_numpy().T,
            colorscale="Blues",
            zmin=0,
            colorbar={"title": {"text": "share"}, "thickness": 12, "x": 1.08},
            hovertemplate="step %{x}<br>length ≈ %{y:.0f} "
            + unit
            + "<br>%{z:.0%} of the step's samples<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=truncated.index.to_numpy(),
            y=truncated.to_numpy(),
            yaxis="y2",
            mode="lines+markers",
            name="at the longest length",
            line={"color": F.color("kl"), "width": 2},
            hovertemplate="step %{x}<br>%{y:.0%} at the longest length<extra></extra>",
        )
    )
    fig.update_layout(
        title={
            "text": f"Response length ({unit}) per step: distribution, and the share at the longest length"
        },
        xaxis_title="step",
        yaxis_title=unit,
        height=340,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        yaxis2={
            "overlaying": "y",
            "side": "right",
            "range": [0, 1],
            "tickformat": ".0%",
            "showgrid": False,
            "title": "at the longest length",
        },
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
    )
    return fig


def history_figure(history: pd.DataFrame) -> go.Figure:
    """Each sample's reward by step (points) and the step mean (line); length on a second axis."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=history["step"],
            y=history["reward"],
            mode="markers",
            name="sample reward",
            marker={"color": F.color("reward", F.SAMPLE), "opacity": 0.55, "size": 7},
            customdata=history["sample"],
            hovertemplate="step %{x} · sample %{customdata}<br>reward %{y:.4g}<extra></extra>",
        )
    )
    mean = history.groupby("step")["reward"].mean()
    fig.add_trace(
        go.Scatter(
            x=mean.index,
            y=mean.to_numpy(),
            mode="lines+markers",
            name="mean reward",
            line={"color": F.color("reward", F.SAMPLE), "width": 2},
        )
    )
    length = "n_tokens" if "n_tokens" in history.columns else "response_chars"
    if length in history.columns:
        by_step = history.groupby("step")[length].mean()
        fig.add_trace(
            go.Scatter(
                x=by_step.index,
                y=by_step.to_numpy(dtype=np.float64),
                mode="lines",
                name=F.label(length),
                yaxis="y2",
                line={"color": F.color("length"), "dash": "dot"},
            )
        )
    fig.update_layout(
        title={"text": "This prompt over training"},
        xaxis_title="step",
        yaxis_title="reward",
        yaxis2={"title": F.label(length), "overlaying": "y", "side": "right", "showgrid": False},
        height=340,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
    )
    return fig
