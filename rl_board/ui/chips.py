"""Token chips: the one place that builds HTML from model text.

Every piece of model text (token strings) and every number goes through
``html.escape(..., quote=True)`` before it is placed in an element body or an
attribute; the only markup is the fixed ``<div>``/``<span>`` skeleton written
here. Tests feed it hostile tokens (``<script>``, ``<img onerror>``, quotes
that try to close the ``title`` attribute). Pure: no Streamlit import.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rl_board.formats import fields as F
from rl_board.ui.text import token_label

# Metrics whose sign matters get a diverging scale centred on 0.
_NEG, _MID, _POS = (33, 102, 172), (247, 247, 247), (178, 24, 43)
_LOW, _HIGH = (250, 250, 250), (214, 96, 77)
_MISSING = "#d9d9d9"
_UNTRAINED_STYLE = ";opacity:0.45;border-style:dashed;text-decoration:line-through"
_CHIP_STYLE = (
    "color:#111;padding:1px 3px;margin:1px;border-radius:4px;white-space:pre-wrap;"
    "display:inline-block;border:1px solid rgba(0,0,0,0.12)"
)


@dataclass(frozen=True)
class Scale:
    """How values of one metric map to colours."""

    lo: float
    hi: float
    diverging: bool

    def color(self, value: float) -> str:
        if value is None or not math.isfinite(value):
            return _MISSING
        if self.diverging:
            bound = max(abs(self.lo), abs(self.hi)) or 1.0
            t = max(-1.0, min(1.0, value / bound))
            return _mix(_MID, _POS if t >= 0 else _NEG, abs(t))
        span = self.hi - self.lo
        t = 0.0 if span <= 0 else (value - self.lo) / span
        return _mix(_LOW, _HIGH, max(0.0, min(1.0, t)))


def _mix(a: tuple[int, int, int], b: tuple[int, int, int], t: float) -> str:
    r, g, bl = (round(x + (y - x) * t) for x, y in zip(a, b, strict=True))
    return f"rgb({r},{g},{bl})"


def scale_for(values: Sequence[float], metric: str) -> Scale:
    """Colour scale over the finite values (a flat scale when there are none)."""
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 0.0)
    return Scale(lo, hi, diverging(metric))


def _fmt(value: Any) -> str:  # anything float() takes as a number, the rest as text
    if value is None:
        return "n/a"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "n/a" if not math.isfinite(number) else f"{number:.4g}"


def _title(position: int, token: str, row: dict[str, object], metrics: Sequence[str]) -> str:
    lines = [f"#{position} {token!r}"] + [f"{m} = {_fmt(row.get(m))}" for m in metrics]
    return "\n".join(lines)


def chips_html(
    tokens: pd.DataFrame,
    metric: str,
    *,
    hidden: Sequence[str] = (),
    max_tokens: int = 4000,
    scale: Scale | None = None,
    untrained: Sequence[bool] | None = None,
) -> str:
    """Response tokens as coloured chips; hover (title) lists every metric of the token.

    ``tokens`` has a ``token`` column and one column per metric (the store's
    per-token table). Tokens listed in ``hidden`` are left out. ``scale`` colours them (default: over these
    tokens); ``untrained`` marks, per row, the tokens the loss skips (default: a ``loss_mask`` of 0).
    """
    metrics = [c for c in tokens.columns if c != "token"]
    hide = set(hidden)
    rows = tokens.to_dict("records")
    if scale is None:
        scale = scale_for([r.get(metric) for r in rows if r.get("token") not in hide], metric)
    skipped = [r.get("loss_mask") == 0.0 for r in rows] if untrained is None else list(untrained)
    spans: list[str] = []
    for position, row, untrained_token in zip(tokens.index, rows, skipped, strict=True):
        token = "" if row.get("token") is None else str(row["token"])
        if token in hide:
            continue
        if len(spans) >= max_tokens:
            break
        value = row.get(metric)
        color = scale.color(float(value) if value is not None else math.nan)
        not_trained = bool(untrained_token)  # shown, but the loss does not count it
        title = html.escape(
            _title(position, token, row, metrics) + ("  (not trained on)" if not_trained else ""), quote=True
        )
        text = html.escape(token_label(token), quote=True)
        style = _UNTRAINED_STYLE if not_trained else ""
        spans.append(
            f'<span class="rlb-chip{" rlb-untrained" if not_trained else ""}" title="{title}" '
            f'style="background:{color};{_CHIP_STYLE}{style}">{text}</span>'
        )
    body = "".join(spans) or '<span style="opacity:0.7">(no tokens to show)</span>'
    return (
        f'<div class="rlb-chips" style="line-height:1.9;font-family:monospace;font-size:0.9rem">{body}</div>'
    )


def legend_html(scale: Scale, metric: str) -> str:
    """A small legend: the colour at the low end, the middle and the high end, with values."""
    label = html.escape(F.label(metric, F.TOKEN), quote=True)
    if scale.diverging:
        bound = max(abs(scale.lo), abs(scale.hi))
        stops = [(-bound, scale.color(-bound)), (0.0, scale.color(0.0)), (bound, scale.color(bound))]
    else:
        mid = (scale.lo + scale.hi) / 2
        stops = [(v, scale.color(v)) for v in (scale.lo, mid, scale.hi)]
    cells = "".join(
        f'<span style="background:{c};{_CHIP_STYLE}">{html.escape(_fmt(v), quote=True)}</span>'
        for v, c in stops
    )
    missing = f'<span style="background:{_MISSING};{_CHIP_STYLE}">no value</span>'
    return (
        f'<div class="rlb-legend" style="font-size:0.85rem;margin:4px 0 8px 0">'
        f"Colour = {label}: {cells} {missing}</div>"
    )


def diverging(metric: str) -> bool:
    """Whether a per-token metric's colour scale is centred on 0 (the catalogue says)."""
    field = F.token(metric)
    return bool(field and field.diverging)


def turn_chips_html(
    tokens: pd.DataFrame,
    metric: str,
    groups: Sequence[tuple[str, pd.DataFrame, Sequence[bool]]],
    scale: Scale,
) -> str:
    """Chips split at turn boundaries: each group (its label, its tokens, which of them the loss skips) under
    a header line, all coloured on one ``scale``. Labels are model-free text (roles, numbers) and are escaped
    too."""
    blocks = []
    for label, part, untrained in groups:
        head = html.escape(label, quote=True)
        blocks.append(
            f'<div class="rlb-turn" style="font-size:0.8rem;opacity:0.75;margin:6px 0 0 0;'
            f'border-top:1px solid rgba(0,0,0,0.15);padding-top:2px">{head}</div>'
            + chips_html(part, metric, scale=scale, untrained=untrained)
        )
    return "".join(blocks) or chips_html(tokens, metric, scale=scale)
