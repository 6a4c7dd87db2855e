"""A heatmap that holds every token of a long response: the sequence wrapped into rows, one cell per token.

A one-row heatmap of thousands of tokens has cells narrower than a pixel: the
gaps between them swallow the colour and fake stripes appear. Wrapped into
rows of ``width`` tokens (like text), each token keeps a cell several pixels
wide at any length, and nothing is averaged away. Pure: no Streamlit.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from rl_board.formats import fields as F
from rl_board.ui.text import token_label

WIDTH = 100
WRAP_FROM = 300  # shorter responses keep one row per metric (charts.token_heatmap_figure)


def colour_range(metric: str, values: np.ndarray) -> dict:
    """``zmin`` / ``zmax`` of a token metric's colours: symmetric about 0 for a diverging metric (log-ratio),
    else the finite values' range (empty when there are none)."""
    finite = values[np.isfinite(values)]
    field = F.token(metric)
    if field and field.diverging:
        bound = float(np.max(np.abs(finite))) if len(finite) else 1.0
        return {"zmin": -(bound or 1.0), "zmax": bound or 1.0}
    if len(finite):
        lo, hi = float(finite.min()), float(finite.max())
        return {"zmin": lo, "zmax": hi if hi > lo else lo + 1.0}
    return {}


def wrapped_heatmap_figure(tokens: pd.DataFrame, metric: str, *, width: int = WIDTH) -> go.Figure:
    """``metric`` of every token, ``width`` tokens per row; hover shows position, token and value."""
    n = len(tokens)
    rows = max(1, math.ceil(n / width))
    values = np.full(rows * width, np.nan)
    values[:n] = tokens[metric].to_numpy(dtype=np.float64)
    labels = np.full(rows * width, "", dtype=object)
    labels[:n] = [html.escape(token_label(t), quote=False) for t in tokens["token"].astype(str)]
    positions = np.full(rows * width, -1)
    positions[:n] = tokens.index.to_numpy()
    field = F.token(metric)
    trace = {
        "colorscale": "RdBu_r" if field and field.diverging else "Oranges",
        "colorbar": {"title": {"text": html.escape(F.label(metric, F.TOKEN), quote=False)}, "thickness": 12},
        **colour_range(metric, values),
    }
    grid = (rows, width)
    fig = go.Figure(
        go.Heatmap(
            z=values.reshape(grid),
            customdata=np.dstack([positions.reshape(grid), labels.reshape(grid)]),
            xgap=0,
            ygap=1,
            hoverongaps=False,
            hovertemplate="token #%{customdata[0]} %{customdata[1]}<br>"
            + html.escape(metric, quote=False)
            + " = %{z:.4g}<extra></extra>",
            **trace,
        )
    )
    fig.update_layout(
        title={
            "text": f"{html.escape(F.label(metric, F.TOKEN), quote=False)} of all {n} tokens, "
            f"{width} per row (one cell per token; hover for the token)"
        },
        height=min(max(240, 120 + 16 * rows), 1400),
        margin={"l": 10, "r": 10, "t": 50, "b": 30},
        xaxis={"title": "position in row", "showgrid": False, "zeroline": False},
        yaxis={
            "autorange": "reversed",
            "title": "first token of row",
            "tickmode": "array",
            "tickvals": list(range(rows))[:: max(1, rows // 20)],
            "ticktext": [str(r * width) for r in range(rows)][:: max(1, rows // 20)],
            "showgrid": False,
        },
    )
    return fig


def runs(values: np.ndarray) -> list[tuple[int, int, object]]:
    """Consecutive runs of equal values: (first row, end row, value)."""
    if not len(values):
        return []
    cuts = np.flatnonzero(values[1:] != values[:-1]) + 1
    starts, ends = np.concatenate([[0], cuts]), np.concatenate([cuts, [len(values)]])
    return [(int(s), int(e), values[s]) for s, e in zip(starts, ends, strict=True)]


def turn_wrapped_figure(
    tokens: pd.DataFrame,
    metric: str,
    groups: list[tuple[str, int, int]],
    untrained: np.ndarray,
    *,
    width: int = WIDTH,
) -> go.Figure:
    """Like ``wrapped_heatmap_figure``, but each turn starts a new row (``groups``: label, first row, end row
    of ``tokens``), and tokens the loss skips are drawn in greys: visibly not trained, their values kept."""
    layout = [
        (label, s + k, min(e, s + k + width))
        for label, s, e in groups
        for k in range(0, max(e - s, 1), width)
    ]
    rows = max(1, len(layout))
    values = np.full((rows, width), np.nan)
    skipped = np.full((rows, width), np.nan)
    labels = np.full((rows, width), "", dtype=object)
    positions = np.full((rows, width), -1)
    all_values = tokens[metric].to_numpy(dtype=np.float64)
    texts = [html.escape(token_label(t), quote=False) for t in tokens["token"].astype(str)]
    index = tokens.index.to_numpy()
    for r, (_, s, e) in enumerate(layout):
        n = e - s
        cells = all_values[s:e]
        masked = untrained[s:e]
        values[r, :n] = np.where(masked, np.nan, cells)
        skipped[r, :n] = np.where(masked, cells, np.nan)
        labels[r, :n] = texts[s:e]
        positions[r, :n] = index[s:e]
    field = F.token(metric)
    scale = colour_range(metric, all_values)
    custom = np.dstack([positions, labels])
    name = html.escape(metric, quote=False)
    fig = go.Figure(
        [
            go.Heatmap(
                z=values,
                customdata=custom,
                xgap=1,
                ygap=1,
                hoverongaps=False,
                name="trained",
                colorscale="RdBu_r" if field and field.diverging else "Oranges",
                colorbar={
                    "title": {"text": html.escape(F.label(metric, F.TOKEN), quote=False)},
                    "thickness": 12,
                },
                hovertemplate="token #%{customdata[0]} %{customdata[1]}<br>"
                + name
                + " = %{z:.4g}<extra></extra>",
                **scale,
            ),
            go.Heatmap(
                z=skipped,
                customdata=custom,
                xgap=1,
                ygap=1,
                hoverongaps=False,
                name="not trained",
                colorscale="Greys",
                showscale=False,
                hovertemplate="token #%{customdata[0]} %{customdata[1]}<br>"
                + name
                + " = %{z:.4g}<br>not trained (masked)<extra></extra>",
                **scale,
            ),
        ]
    )
    firsts: dict[str, tuple[int, int]] = {}
    for r, (label, s, _) in enumerate(layout):
        firsts.setdefault(label, (r, s))
    ticks = sorted(firsts.values())
    fig.update_layout(
        title={
            "text": f"{html.escape(F.label(metric, F.TOKEN), quote=False)} of all {len(tokens)} tokens, "
            f"one turn per block of rows ({width} per row); grey: not trained (masked)"
        },
        height=min(max(240, 120 + 18 * rows), 1600),
        margin={"l": 10, "r": 10, "t": 50, "b": 30},
        xaxis={"title": "position in row", "showgrid": False, "zeroline": False},
        yaxis={
            "autorange": "reversed",
            "tickmode": "array",
            "tickvals": [r for r, _ in ticks],
            "showgrid": False,
            "ticktext": [html.escape(layout[r][0], quote=False) for r, _ in ticks],
        },
    )
    return fig


def mark_turns(
    fig: go.Figure, tokens: pd.DataFrame, groups: list[tuple[str, int, int]], untrained: np.ndarray
) -> go.Figure:
    """A token × metric heatmap with turn boundaries (dotted lines, the turn named above) and the tokens the
    loss skips greyed over."""
    x = tokens.index.to_numpy()
    whole = {
        "xref": "x",
        "yref": "y domain",
        "y0": 0,
        "y1": 1,
    }  # what add_vline / add_vrect draw, built at once:
    shapes = [
        {
            "type": "line",
            "x0": float(x[s]) - 0.5,
            "x1": float(x[s]) - 0.5,  # one call each was quadratic
            "line": {"width": 1, "dash": "dot", "color": "#444"},
            **whole,
        }
        for _, s, _ in groups[1:]
    ]
    shapes += [
        {
            "type": "rect",
            "x0": float(x[s]) - 0.5,
            "x1": float(x[e - 1]) + 0.5,
            "fillcolor": "rgba(110,110,110,0.55)",
            "line": {"width": 0},
            "layer": "above",
            **whole,
        }
        for s, e, masked in runs(untrained)
        if masked
    ]
    notes = [
        {
            "x": float(x[s]) - 0.5,
            "y": 1.0,
            "yref": "paper",
            "yanchor": "bottom",
            "xanchor": "left",
            "text": html.escape(label.split(" · ")[0] if label.startswith("turn") else label, quote=False),
            "showarrow": False,
            "font": {"size": 10},
        }
        for label, s, _ in groups
    ]
    fig.update_layout(shapes=[*fig.layout.shapes, *shapes], annotations=[*fig.layout.annotations, *notes])
    fig.update_layout(
        title={
            "text": "Token × metric by turn (each row coloured on its own scale; grey: not "
            "trained; dotted: turn boundaries)"
        },
        margin={"t": 70},
    )
    return fig
