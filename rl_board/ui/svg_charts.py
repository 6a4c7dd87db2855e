"""Charts drawn on the server from numbers: an SVG picture plus plain HTML around it, no chart library.

Why: a page that shows a Plotly chart makes the browser evaluate Plotly's 4.6 MB script first (1.1-1.3 s of
its main thread on a fresh tab). These charts need no script. ``render(chart)`` returns HTML for ``st.html``:
the title and the legend as HTML, the plot (axes with ticks, bands, lines, markers, bars, a heatmap) as an
SVG image (``<img src="data:image/svg+xml;base64,...">``: Streamlit's sanitizer keeps HTML only and strips
inline ``<svg>``, and an SVG image can run nothing), and over the plot one transparent band per x position
whose ``title`` lists every series' value there, so hovering reads like Plotly's unified hover.

Names (series, titles, axis titles, notes) come from log files: every one is escaped here, in the HTML and
in the SVG. No model text belongs in a chart. Non-finite values leave gaps. Pure: no Streamlit import.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from rl_board.ui.svg_axes import format_number
from rl_board.ui.svg_draw import Frame, arr, draw, esc, finite, paint, shade, svg

__all__ = ["Axis", "Chart", "Heat", "Series", "esc", "render", "svg"]

MAX_HOVER_BANDS = 400  # more x positions than this share a band (the one nearest its centre is listed)
Numbers = Sequence[float] | np.ndarray


@dataclass(frozen=True)
class Series:
    """One series: ``kind`` is ``line``, ``markers`` (points only), ``bar`` or ``area`` (stacked in order).

    ``low``/``high`` draw a band around a line; ``colors`` gives each bar its own colour; ``right`` puts the
    series on the right axis; ``hover`` False leaves it out of the hover text.
    """

    name: str
    x: Numbers
    y: Numbers
    color: str = "#1f6feb"
    kind: str = "line"
    low: Numbers | None = None
    high: Numbers | None = None
    width: float = 2.0
    opacity: float = 1.0
    dash: bool = False
    markers: bool = True
    right: bool = False
    legend: bool = True
    hover: bool = True
    percent: bool = False
    colors: Sequence[str] | None = None


@dataclass(frozen=True)
class Axis:
    """An axis: its title, ``percent`` (values 0-1 shown as %), ``time`` (epoch seconds shown as UTC dates),
    a fixed range (``lo``/``hi``), ``zero`` (the range includes 0), ``log`` (a log10 scale) and ``integer``
    (ticks at whole numbers only: steps, samples)."""

    title: str = ""
    percent: bool = False
    time: bool = False
    lo: float | None = None
    hi: float | None = None
    zero: bool = False
    log: bool = False
    integer: bool = False


@dataclass(frozen=True)
class Heat:
    """A heatmap under the series: ``z[i][j]`` is the cell from ``x_edges[i]`` to ``x_edges[i+1]`` and
    ``y_edges[j]`` to ``y_edges[j+1]``, coloured from white to ``color`` (``zmax``: the darkest value;
    ``viridis`` for Viridis)."""

    x_edges: Numbers
    y_edges: Numbers
    z: Sequence[Sequence[float]] | np.ndarray
    color: str = "#1f6feb"
    zmax: float | None = None
    label: str = "share"


@dataclass(frozen=True)
class Chart:
    """What to draw: series over an x axis, one or two y axes, an optional heatmap, a note under it.

    ``width``/``height`` are the SVG's own units (it is drawn at the width of its column, aspect kept): 1100
    for a chart across the page, 560 for one of two columns. ``x_label`` names x in the hover text.
    """

    title: str
    series: Sequence[Series] = ()
    x: Axis = Axis("step", integer=True)
    y: Axis = Axis()
    y2: Axis | None = None
    heat: Heat | None = None
    note: str = ""
    width: int = 560
    height: int = 260
    x_label: str = "step"
    extra_hover: dict[float, str] = field(default_factory=dict)  # more hover text at an x
    # the address a click at x opens (a relative link of this app, e.g. its step in the step browser): the
    # hover bands become links, so a chart's step opens without Plotly; None: they are not links
    link: Callable[[float], str] | None = None


def _x_text(value: float, axis: Axis) -> str:
    if axis.time:
        return datetime.fromtimestamp(value, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return format_number(value, percent=axis.percent)


def _value_text(value: float, percent: bool) -> str:
    if not math.isfinite(value):
        return "n/a"
    return f"{value:.1%}" if percent else f"{value:.4g}"


# --------------------------------------------------------------------------- HTML around it


def _legend(chart: Chart) -> str:
    seen: dict[str, Series] = {}
    for s in chart.series:
        if s.legend and s.name and s.name not in seen:
            seen[s.name] = s
    if len(seen) < 2 and chart.heat is None and not any(s.right for s in chart.series):
        return ""
    items = []
    for s in seen.values():
        if s.kind in ("bar", "area"):
            mark = f"width:10px;height:10px;background:{paint(s.color)};opacity:{max(s.opacity, 0.55)}"
        elif s.kind == "markers":
            mark = f"width:8px;height:8px;border-radius:50%;background:{paint(s.color)};opacity:{s.opacity}"
        else:
            style = "dashed" if s.dash else "solid"
            mark = f"width:16px;height:0;border-top:{max(s.width, 2):g}px {style} {paint(s.color)}"
        items.append(
            f'<span style="display:inline-flex;align-items:center;gap:4px;margin-right:12px">'
            f'<span style="display:inline-block;{mark}"></span>{esc(s.name)}</span>'
        )
    if chart.heat is not None:
        dark = shade(chart.heat.color, 1.0)
        items.append(
            f'<span style="display:inline-flex;align-items:center;gap:4px">'
            f'<span style="display:inline-block;width:40px;height:10px;'
            f'background:linear-gradient(90deg,#ffffff,{dark})"></span>{esc(chart.heat.label)}</span>'
        )
    return f'<div class="rlb-chart-legend" style="font-size:0.8rem;line-height:1.6">{"".join(items)}</div>'


def _hover_texts(s: Series) -> dict[float, str]:
    """What the hover says of series ``s`` at each of its x: its value, and its band when it has one."""
    y = arr(s.y)
    low, high = (arr(s.low), arr(s.high)) if s.low is not None and s.high is not None else (None, None)
    out = {}
    for i, x in enumerate(arr(s.x)):  # a step given twice: its last value
        text = f"{s.name}: {_value_text(float(y[i]), s.percent)}"
        if low is not None and high is not None:
            lo, hi = float(low[i]), float(high[i])
            if math.isfinite(lo) and math.isfinite(hi) and (lo, hi) != (float(y[i]),) * 2:
                text += f" ({_value_text(lo, s.percent)} – {_value_text(hi, s.percent)})"
        out[float(x)] = text
    return out


def _hover_lines(chart: Chart, x: float, texts: list[dict[float, str]]) -> list[str]:
    lines = [f"{chart.x_label} {_x_text(x, chart.x)}"]
    lines += [t[x] for t in texts if x in t]
    if x in chart.extra_hover:
        lines.append(chart.extra_hover[x])
    return lines


def _hover(chart: Chart, f: Frame) -> str:
    """Transparent bands over the plot, one per x position, each titled with every series' value there."""
    xs = np.unique(np.concatenate([finite(s.x) for s in chart.series if s.hover] or [np.zeros(0)]))
    xs = np.union1d(xs, np.array(sorted(chart.extra_hover), dtype=np.float64))
    if not len(xs):
        return ""
    px = f.x.map(xs)
    if len(xs) > MAX_HOVER_BANDS:
        centres = np.linspace(f.left, f.right, MAX_HOVER_BANDS)
        pick = np.unique(np.abs(px[None, :] - centres[:, None]).argmin(axis=1))
        xs, px = xs[pick], px[pick]
    edges = np.concatenate([[f.left], (px[1:] + px[:-1]) / 2, [f.right]])
    # one row over the plot area, a band per x position growing with its share of the width (few bytes each:
    # a chart of 2,000 steps is 400 bands)
    texts = [_hover_texts(s) for s in chart.series if s.hover]
    titles = [esc("\n".join(_hover_lines(chart, float(x), texts))) for x in xs]
    grow = np.diff(edges)
    if chart.link is None:
        bands = "".join(
            f'<i title="{t}" style="flex:{g:.2f}"></i>' for t, g in zip(titles, grow, strict=True)
        )
    else:
        hrefs = [esc(chart.link(float(x))) for x in xs]
        bands = "".join(
            f'<a href="{h}" target="_self" title="{t}" style="flex:{g:.2f}"></a>'
            for h, t, g in zip(hrefs, titles, grow, strict=True)
        )
    box = (
        f"left:{100 * f.left / chart.width:.3f}%;width:{100 * (f.right - f.left) / chart.width:.3f}%;"
        f"top:{100 * f.top / chart.height:.3f}%;height:{100 * (f.bottom - f.top) / chart.height:.3f}%"
    )
    return f'<div class="h" style="{box}">{bands}</div>'


STYLE = (
    "<style>.rlb-chart .h{position:absolute;display:flex}"
    ".rlb-chart .h i,.rlb-chart .h a{display:block;min-width:0}.rlb-chart .h a{cursor:pointer}"
    ".rlb-chart .h i:hover,.rlb-chart .h a:hover{background:rgba(31,111,235,0.10);"
    "box-shadow:inset 0 0 0 1px rgba(31,111,235,0.25)}"
    "</style>"
)


def render(chart: Chart) -> str:
    """The chart as HTML for ``st.html``: title, legend, the SVG picture with its hover bands, the note."""
    document, f = draw(chart)
    picture = base64.b64encode(document.encode("utf-8")).decode("ascii")
    note = (
        f'<div class="rlb-chart-note" style="font-size:0.75rem;opacity:0.75">{esc(chart.note)}</div>'
        if chart.note
        else ""
    )
    return (
        f'{STYLE}<div class="rlb-chart" style="width:100%;margin-bottom:0.5rem">'
        f'<div class="rlb-chart-title" style="font-weight:600;font-size:0.95rem">{esc(chart.title)}</div>'
        f"{_legend(chart)}"
        f'<div style="position:relative;width:100%">'
        f'<img src="data:image/svg+xml;base64,{picture}" alt="{esc(chart.title)}" '
        f'style="width:100%;height:auto;display:block"/>{_hover(chart, f)}</div>{note}</div>'
    )
