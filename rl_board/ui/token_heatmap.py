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
    finite = values[np.isfinite(values)]
    trace = {"colorscale": "RdBu_r" if field and field.diverging else "Oranges",
             "colorbar": {"title": {"text": html.escape(F.label(metric, F.TOKEN), quote=False)}, "thickness": 12}}
    if field and field.diverging:
        bound = float(np.max(np.abs(finite))) if len(finite) else 1.0
        trace.update(zmin=-(bound or 1.0), zmax=bound or 1.0)
    elif len(finite):
        lo, hi = float(finite.min()), float(finite.max())
        trace.update(zmin=lo, zmax=hi if hi > lo else lo + 1.0)
    grid = (rows, width)
    fig = go.Figure(go.Heatmap(
        z=values.reshape(grid), customdata=np.dstack([positions.reshape(grid), labels.reshape(grid)]),
        xgap=0, ygap=1, hoverongaps=False,
        hovertemplate="token #%{customdata[0]} %{customdata[1]}<br>" + html.escape(metric, quote=False)
                      + " = %{z:.4g}<extra></extra>",
        **trace,
    ))  # fmt: skip
    fig.update_layout(
        title={"text": f"{html.escape(F.label(metric, F.TOKEN), quote=False)} of all {n} tokens, "
                       f"{width} per row (one cell per token; hover for the token)"},
        height=min(max(240, 120 + 16 * rows), 1400), margin={"l": 10, "r": 10, "t": 50, "b": 30},
        xaxis={"title": "position in row", "showgrid": False, "zeroline": False},
        yaxis={"autorange": "reversed", "title": "first token of row", "tickmode": "array",
               "tickvals": list(range(rows))[:: max(1, rows // 20)],
               "ticktext": [str(r * width) for r in range(rows)][:: max(1, rows // 20)], "showgrid": False},
    )  # fmt: skip
    return fig
