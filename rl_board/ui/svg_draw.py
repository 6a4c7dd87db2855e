"""The SVG picture of a chart (``svg_charts.Chart``): ranges, axes with ticks, heatmap cells, bands,
stacked areas, bars, lines and markers, as one SVG document. Every text in it is escaped; a non-finite value
ends a line (a gap). Pure: numbers in, a string out; ``svg_charts`` puts HTML around it.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rl_board.ui.svg_axes import Scale, ticks

if TYPE_CHECKING:
    from rl_board.ui.svg_charts import Chart, Numbers, Series

FONT = "system-ui,-apple-system,'Segoe UI',Roboto,sans-serif"
MAX_MARKERS = 300  # a line of more points is drawn without its markers


# --------------------------------------------------------------------------- helpers


COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}|rgba?\([0-9., ]+\)|[a-z]+")


def paint(colour: str) -> str:
    """A colour as given when it is one (``#hex``, ``rgb(...)``, a name), else grey: nothing else reaches an
    attribute or a style."""
    return colour if COLOUR.fullmatch(colour) else "#8b949e"


def esc(text: object) -> str:
    """Text from a log, safe inside HTML or SVG text and attributes (quotes too)."""
    return html.escape(str(text), quote=True)


def finite(values: Numbers | None) -> np.ndarray:
    if values is None:
        return np.zeros(0)
    arr = np.asarray(values, dtype=np.float64)
    return arr[np.isfinite(arr)]


def arr(values: Numbers) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).reshape(-1)


# --------------------------------------------------------------------------- ranges


def stacked(series: Sequence[Series]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per area series (by index): its lower and upper edge, stacked on the areas before it."""
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    base: dict[float, float] = {}
    for k, s in enumerate(series):
        if s.kind != "area":
            continue
        x, y = arr(s.x), np.nan_to_num(arr(s.y))
        low = np.array([base.get(float(v), 0.0) for v in x])
        high = low + y
        base.update({float(v): float(h) for v, h in zip(x, high, strict=True)})
        out[k] = (low, high)
    return out


def _y_values(chart: Chart, right: bool, stacks: dict[int, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    parts = []
    for k, s in enumerate(chart.series):
        if s.right != right:
            continue
        if k in stacks:
            parts += [stacks[k][0], stacks[k][1]]
            continue
        parts += [finite(s.y), finite(s.low), finite(s.high)]
        if s.kind == "bar":
            parts.append(np.zeros(1))
    if chart.heat is not None and not right:
        parts.append(finite(chart.heat.y_edges))
    values = np.concatenate(parts) if parts else np.zeros(0)
    return values[np.isfinite(values)]


def x_values(chart: Chart) -> np.ndarray:
    parts = [finite(s.x) for s in chart.series]
    if chart.heat is not None:
        parts.append(finite(chart.heat.x_edges))
    return np.concatenate(parts) if parts else np.zeros(0)


def _bar_half(chart: Chart) -> float:
    """Half the width a bar may take: half the smallest gap between the x of the bar series."""
    xs = [np.unique(finite(s.x)) for s in chart.series if s.kind == "bar"]
    gaps = [np.diff(x).min() for x in xs if len(x) > 1]
    return float(min(gaps)) / 2 if gaps else 0.5


# --------------------------------------------------------------------------- drawing


@dataclass(frozen=True)
class Frame:
    """The plot area inside the SVG and the scales that map data to it."""

    left: float
    top: float
    right: float
    bottom: float
    x: Scale
    y: Scale
    y2: Scale | None


def _frame(chart: Chart, stacks: dict[int, tuple[np.ndarray, np.ndarray]]) -> Frame:
    left = 62.0
    right = chart.width - (62.0 if chart.y2 is not None else 16.0)
    top, bottom = 10.0, chart.height - 40.0
    xs = x_values(chart)
    if any(s.kind == "bar" for s in chart.series) and len(xs):
        half = _bar_half(chart)
        xs = np.concatenate([xs, [xs.min() - half, xs.max() + half]])
    # lines and markers get a margin (a point on the edge would be cut in half); bars, areas and cells fill it
    edge_to_edge = chart.heat is not None or any(s.kind in ("bar", "area") for s in chart.series)
    x = Scale.fit(xs, chart.x, left, right, pad=not edge_to_edge)
    y = Scale.fit(_y_values(chart, False, stacks), chart.y, bottom, top)
    y2 = Scale.fit(_y_values(chart, True, stacks), chart.y2, bottom, top) if chart.y2 is not None else None
    return Frame(left, top, right, bottom, x, y, y2)


def _axes(chart: Chart, f: Frame) -> list[str]:
    out = [
        f'<rect x="{f.left}" y="{f.top}" width="{f.right - f.left}" height="{f.bottom - f.top}" '
        'fill="#ffffff" stroke="#d0d7de"/>'
    ]
    for value, label in ticks(f.y, chart.y):
        py = f.y.to(value)
        out.append(f'<line x1="{f.left}" x2="{f.right}" y1="{py:.1f}" y2="{py:.1f}" stroke="#eaeef2"/>')
        out.append(f'<text x="{f.left - 6}" y="{py + 4:.1f}" text-anchor="end">{esc(label)}</text>')
    if f.y2 is not None and chart.y2 is not None:
        for value, label in ticks(f.y2, chart.y2):
            py = f.y2.to(value)
            out.append(f'<text x="{f.right + 6}" y="{py + 4:.1f}">{esc(label)}</text>')
    for value, label in ticks(f.x, chart.x, count=max(3, int((f.right - f.left) / 110))):
        px = f.x.to(value)
        out.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{f.top}" y2="{f.bottom}" stroke="#eaeef2"/>')
        out.append(f'<text x="{px:.1f}" y="{f.bottom + 15}" text-anchor="middle">{esc(label)}</text>')
    mid_y = (f.top + f.bottom) / 2
    out.append(
        f'<text x="{(f.left + f.right) / 2:.1f}" y="{chart.height - 6}" text-anchor="middle" '
        f'fill="#57606a">{esc(chart.x.title)}</text>'
    )
    out.append(
        f'<text transform="translate(13 {mid_y:.1f}) rotate(-90)" text-anchor="middle" '
        f'fill="#57606a">{esc(chart.y.title)}</text>'
    )
    if chart.y2 is not None:
        out.append(
            f'<text transform="translate({chart.width - 8} {mid_y:.1f}) rotate(90)" text-anchor="middle" '
            f'fill="#57606a">{esc(chart.y2.title)}</text>'
        )
    return out


def _segments(px: np.ndarray, py: np.ndarray) -> list[np.ndarray]:
    """Runs of finite points (a non-finite value ends a run: a gap in the line)."""
    ok = np.isfinite(px) & np.isfinite(py)
    runs, start = [], None
    for i, good in enumerate(ok):
        if good and start is None:
            start = i
        if not good and start is not None:
            runs.append(np.arange(start, i))
            start = None
    if start is not None:
        runs.append(np.arange(start, len(ok)))
    return runs


def _points(px: np.ndarray, py: np.ndarray) -> str:
    return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px, py, strict=True))


def _band(s: Series, f: Frame, scale: Scale) -> list[str]:
    if s.low is None or s.high is None:
        return []
    px = f.x.map(arr(s.x))
    lo, hi = scale.map(arr(s.low)), scale.map(arr(s.high))
    out = []
    for run in _segments(px, lo + hi):
        if len(run) < 2:
            continue
        outline = _points(px[run], hi[run]) + " " + _points(px[run][::-1], lo[run][::-1])
        out.append(f'<polygon points="{outline}" fill="{paint(s.color)}" fill-opacity="0.18" stroke="none"/>')
    return out


def _line(s: Series, f: Frame, scale: Scale) -> list[str]:
    px, py = f.x.map(arr(s.x)), scale.map(arr(s.y))
    runs = _segments(px, py)
    dash = ' stroke-dasharray="5 4"' if s.dash else ""
    out = []
    if s.kind == "line":
        out += [
            f'<polyline points="{_points(px[r], py[r])}" fill="none" stroke="{paint(s.color)}" '
            f'stroke-width="{s.width}" stroke-opacity="{s.opacity}" stroke-linejoin="round"{dash}/>'
            for r in runs
            if len(r) > 1
        ]
    shown = sum(len(r) for r in runs)
    lonely = [r for r in runs if len(r) == 1]  # a point between gaps: drawn, or it would not show
    marks = runs if s.kind == "markers" or (s.markers and shown <= MAX_MARKERS) else lonely
    radius = 3.0 if s.kind == "markers" else 2.5
    dot = f'r="{radius}" fill="{paint(s.color)}" fill-opacity="{s.opacity}"'
    for r in marks:
        out += [f'<circle cx="{a:.1f}" cy="{b:.1f}" {dot}/>' for a, b in zip(px[r], py[r], strict=True)]
    return out


def _area(s: Series, f: Frame, low: np.ndarray, high: np.ndarray) -> list[str]:
    px = f.x.map(arr(s.x))
    lo, hi = f.y.map(low), f.y.map(high)
    if len(px) == 1:
        px = np.array([px[0] - 3, px[0] + 3])
        lo, hi = np.repeat(lo, 2), np.repeat(hi, 2)
    outline = _points(px, hi) + " " + _points(px[::-1], lo[::-1])
    return [
        f'<polygon points="{outline}" fill="{paint(s.color)}" fill-opacity="0.55" stroke="{paint(s.color)}" '
        'stroke-width="1"/>'
    ]


def _bars(chart: Chart, f: Frame) -> list[str]:
    bars = [s for s in chart.series if s.kind == "bar"]
    if not bars:
        return []
    half = _bar_half(chart)
    grouped = len(bars) > 1 and not all(s.opacity < 1 for s in bars)  # translucent bars overlay
    slot = 2 * half * 0.8 / (len(bars) if grouped else 1)
    out = []
    for k, s in enumerate(bars):
        scale = f.y2 if s.right and f.y2 is not None else f.y
        x, y = arr(s.x), arr(s.y)
        offset = (k - (len(bars) - 1) / 2) * slot if grouped else 0.0
        base = scale.to(max(scale.lo, min(0.0, scale.hi)))
        for i, (a, b) in enumerate(zip(x, y, strict=True)):
            if not (math.isfinite(a) and math.isfinite(b)) or b == 0:  # nothing to draw (Plotly draws none)
                continue
            x0, x1 = f.x.to(a + offset - slot / 2), f.x.to(a + offset + slot / 2)
            top = scale.to(b)
            colour = s.colors[i] if s.colors is not None else s.color
            out.append(
                f'<rect x="{x0:.1f}" y="{min(top, base):.1f}" width="{max(x1 - x0, 0.6):.1f}" '
                f'height="{max(abs(base - top), 0.6):.1f}" fill="{paint(colour)}" '
                f'fill-opacity="{s.opacity}"/>'
            )
    return out


def _heat(chart: Chart, f: Frame) -> list[str]:
    heat = chart.heat
    if heat is None:
        return []
    z = np.asarray(heat.z, dtype=np.float64)
    finite = z[np.isfinite(z)]
    top = heat.zmax if heat.zmax is not None else (float(finite.max()) if len(finite) else 1.0)
    xe, ye = arr(heat.x_edges), arr(heat.y_edges)
    out = []
    for i in range(min(len(xe) - 1, z.shape[0] if z.ndim == 2 else 0)):
        x0, x1 = f.x.to(xe[i]), f.x.to(xe[i + 1])
        for j in range(min(len(ye) - 1, z.shape[1])):
            v = z[i, j]
            if not math.isfinite(v) or v <= 0:
                continue
            y0, y1 = f.y.to(ye[j]), f.y.to(ye[j + 1])
            out.append(
                f'<rect x="{min(x0, x1):.1f}" y="{min(y0, y1):.1f}" width="{abs(x1 - x0) + 0.3:.1f}" '
                f'height="{abs(y1 - y0) + 0.3:.1f}" fill="{shade(heat.color, v / (top or 1.0))}"/>'
            )
    return out


_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))


def shade(color: str, share: float) -> str:
    """A colour for ``share`` (0-1): white to ``color``, or along Viridis."""
    t = min(max(share, 0.0), 1.0)
    if color == "viridis":
        pos = t * (len(_VIRIDIS) - 1)
        k = min(int(pos), len(_VIRIDIS) - 2)
        a, b = _VIRIDIS[k], _VIRIDIS[k + 1]
        rgb = [round(p + (q - p) * (pos - k)) for p, q in zip(a, b, strict=True)]
    else:
        base = [int(color[i : i + 2], 16) for i in (1, 3, 5)]
        rgb = [round(255 + (c - 255) * (0.08 + 0.92 * t)) for c in base]
    return "#" + "".join(f"{c:02x}" for c in rgb)


def svg(chart: Chart) -> str:
    """The plot as an SVG document (axes, ticks, heatmap, bands, areas, bars, lines): the picture alone."""
    return draw(chart)[0]


def draw(chart: Chart) -> tuple[str, Frame]:
    stacks = stacked(chart.series)
    f = _frame(chart, stacks)
    body = _axes(chart, f) + _heat(chart, f)
    for s in chart.series:
        body += _band(s, f, f.y2 if s.right and f.y2 is not None else f.y)
    for k, s in enumerate(chart.series):
        if k in stacks:
            body += _area(s, f, *stacks[k])
    body += _bars(chart, f)
    for s in chart.series:
        if s.kind in ("line", "markers"):
            body += _line(s, f, f.y2 if s.right and f.y2 is not None else f.y)
    if not len(x_values(chart)):
        body.append(
            f'<text x="{(f.left + f.right) / 2}" y="{(f.top + f.bottom) / 2}" text-anchor="middle" '
            'fill="#57606a">no data</text>'
        )
    document = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {chart.width} {chart.height}" '
        f'width="{chart.width}" height="{chart.height}" font-family="{esc(FONT)}" font-size="11" '
        f'fill="#24292f">{"".join(body)}</svg>'
    )
    return document, f
