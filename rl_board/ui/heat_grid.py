"""The token heatmap as a grid of coloured cells in plain HTML: drawn with the page, no chart library.

Why: Plotly's code (the app's largest script) is loaded only when a page first shows a chart; on a
sample link opened in a new tab that alone took 0.5-1 s of the browser, and the page's text came
with it. This grid needs no script: one cell per token, coloured as the token chips are (the same
``Scale``), hover (``title``) for the token's position and value. No model text is placed in it:
cells carry numbers, rows carry positions, turn labels (roles and numbers) or metric names, all
escaped. The Plotly heatmap (zoom, the token's text on hover) stays one toggle away.
Pure: no Streamlit import.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from itertools import groupby

import numpy as np
import pandas as pd

from rl_board.formats import fields as F
from rl_board.ui.chips import Scale, legend_html, scale_for

WIDTH = 100  # tokens per row of a wrapped grid (as token_heatmap.WIDTH)
# Cells are styled by class, one rule per colour (inline styles on thousands of cells cost the browser
# twice the time); a colour's channels are rounded to a multiple of 4, so a scale has at most ~64 colours.
_RULES = (
    ".rlb-heat i.u{opacity:0.35;outline:1px dashed #666;outline-offset:-1px}"
    ".rlb-heat i.t{box-shadow:inset 2px 0 0 #333}"
)
_LABEL = (
    "font-size:0.7rem;opacity:0.75;text-align:right;padding-right:4px;white-space:nowrap;overflow:hidden;"
    "text-overflow:ellipsis;line-height:1"
)


def _number(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "n/a"


def _hex(color: str) -> str:
    """``rgb(r,g,b)`` (the chips' colours) as ``rrggbb``, each channel rounded to a multiple of 4."""
    if color.startswith("#"):
        return color[1:]
    r, g, b = (min(255, round(int(x) / 4) * 4) for x in color[4:-1].split(","))
    return f"{r:02x}{g:02x}{b:02x}"


def _cell(
    position: int,
    metric: str,
    value: float,
    scale: Scale,
    colours: set[str],
    untrained: bool = False,
    first: bool = False,
) -> str:
    # as short as it can be said: an 8k-token answer has 8k of these
    title = f"#{position} {metric}={_number(value)}" + (" (not trained)" if untrained else "")
    colour = _hex(scale.color(value))
    colours.add(colour)
    kind = f"c{colour}" + (" u" if untrained else "") + (" t" if first else "")  # t: a turn starts here
    return f'<i class="{kind}" title="{html.escape(title, quote=True)}"></i>'


def _style(colours: set[str]) -> str:
    return (
        "<style>"
        + _RULES
        + "".join(f".rlb-heat i.c{c}{{background:#{c}}}" for c in sorted(colours))
        + "</style>"
    )


def _label(text: str) -> str:
    safe = html.escape(text, quote=True)
    return f'<span style="{_LABEL}" title="{safe}">{safe}</span>'


def _grid(cells: list[str], columns: int, row_height: int, label_width: str) -> str:
    return (
        f'<div class="rlb-heat-grid" style="display:grid;grid-template-columns:{label_width} '
        f'repeat({columns},minmax(0,1fr));grid-auto-rows:{row_height}px;gap:1px;align-items:stretch">'
        + "".join(cells)
        + "</div>"
    )


def _title(text: str) -> str:
    return f'<div style="font-size:0.9rem;font-weight:600;margin:4px 0">{html.escape(text, quote=True)}</div>'


def wrapped_grid_html(
    tokens: pd.DataFrame,
    metric: str,
    *,
    groups: Sequence[tuple[str, int, int]] = (),
    untrained: np.ndarray | None = None,
    width: int = WIDTH,
) -> str:
    """``metric`` of every token, ``width`` tokens a row, like text; with ``groups`` (label, first row, end
    row of ``tokens``) each turn starts a new row, labelled, and the tokens the loss skips are faded.

    A row is one element painted with a hard-stop gradient, a band of colour per token (runs of one
    colour merged): an 8k-token answer is 81 elements, not 8,000 cells, which a new tab lays out in a
    fraction of the time. Hovering a row names its tokens; each token's value is in the chips above and,
    on hover, in the interactive heatmap.
    """
    values = tokens[metric].to_numpy(dtype=np.float64)
    positions = tokens.index.to_numpy()
    skipped = np.zeros(len(tokens), dtype=bool) if untrained is None else np.asarray(untrained, dtype=bool)
    scale = scale_for(values.tolist(), metric)
    colours = [_hex(scale.color(float(v))) for v in values]
    colours = [_faded(c) if skip else c for c, skip in zip(colours, skipped, strict=True)]
    spans = list(groups) or [("", 0, len(tokens))]
    cells: list[str] = []
    for label, start, end in spans:
        for k, first in enumerate(range(start, max(end, start + 1), width)):
            last = min(end, first + width)
            head = label if k == 0 and label else str(int(positions[first])) if first < len(positions) else ""
            cells.append(_label(head))
            cells.append(_band_row(colours[first:last], width, positions, first, last, metric, label))
    name = F.label(metric, F.TOKEN)
    what = (
        "one turn per block of rows; faded: not trained (masked)" if groups else "the first token's position"
    )
    title = (
        f"{name} of all {len(tokens)} tokens, {width} per row ({what}); one band per token, hover a row "
        "for its tokens, or switch on the interactive heatmap for each token's value"
    )
    return (
        f'<div class="rlb-heat">{_title(title)}{legend_html(scale, metric)}'
        f"{_rows(cells, '9em' if groups else '3.5em')}</div>"
    )


def _faded(colour: str) -> str:
    """A colour at 35 % over white: how the chips show a token the loss skips."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (0, 2, 4))
    return "".join(f"{round(0.35 * c + 0.65 * 255):02x}" for c in (r, g, b))


def _band_row(
    colours: list[str], width: int, positions: np.ndarray, first: int, last: int, metric: str, label: str
) -> str:
    """One row of tokens as a gradient with a hard stop per change of colour (the rest of a short row
    empty)."""
    stops: list[str] = []
    k = 0
    for colour, run in groupby(colours):
        n = sum(1 for _ in run)
        stops.append(f"#{colour} {_pct(k, width)} {_pct(k + n, width)}")
        k += n
    if len(colours) < width:
        stops.append(f"transparent {_pct(len(colours), width)} 100%")
    span = f"tokens {int(positions[first])}–{int(positions[last - 1])}" if last > first else ""
    hover = html.escape(" · ".join(t for t in (label, span, F.label(metric, F.TOKEN)) if t), quote=True)
    gradient = ",".join(stops if len(stops) > 1 else stops * 2)  # a gradient needs two stops
    return f'<div title="{hover}" style="background:linear-gradient(90deg,{gradient})"></div>'


def _pct(k: int, width: int) -> str:
    return f"{100 * k / width:.3g}%"


def _rows(cells: list[str], label_width: str) -> str:
    return (
        f'<div class="rlb-heat-rows" style="display:grid;grid-template-columns:{label_width} 1fr;'
        f'grid-auto-rows:12px;gap:1px">' + "".join(cells) + "</div>"
    )


def metric_rows_html(
    tokens: pd.DataFrame,
    metrics: Sequence[str],
    *,
    groups: Sequence[tuple[str, int, int]] = (),
    untrained: np.ndarray | None = None,
) -> str:
    """Token × metric: one row per metric, each coloured on its own scale (diverging metrics centred on 0);
    a turn's first token has a line on its left, and the tokens the loss skips are faded."""
    present = [m for m in metrics if m in tokens.columns and tokens[m].notna().any()]
    positions = tokens.index.to_numpy()
    skipped = np.zeros(len(tokens), dtype=bool) if untrained is None else np.asarray(untrained, dtype=bool)
    starts = {start for _, start, _ in list(groups)[1:]}
    cells: list[str] = []
    colours: set[str] = set()
    for metric in present:
        values = tokens[metric].to_numpy(dtype=np.float64)
        scale = scale_for(values.tolist(), metric)
        cells.append(_label(F.label(metric, F.TOKEN)))
        cells += [
            _cell(int(positions[i]), metric, float(values[i]), scale, colours, bool(skipped[i]), i in starts)
            for i in range(len(tokens))
        ]
    title = (
        "Token × metric (each row coloured on its own scale"
        + ("; a line where a turn starts, faded: not trained" if groups else "")
        + "; hover a cell for its position and value)"
    )
    return (
        f'{_style(colours)}<div class="rlb-heat">{_title(title)}'
        f"{_grid(cells, max(len(tokens), 1), 22, '9em')}</div>"
    )
