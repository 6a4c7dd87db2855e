"""Axes of the SVG charts: a scale from data to the picture (linear or log10), and ticks at round numbers
with readable labels (``0.25``, ``1.5k``, ``3e-05``, ``40%``, UTC dates). Pure: numbers in, numbers out."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from rl_board.ui.svg_charts import Axis

TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


@dataclass(frozen=True)
class Scale:
    """Data ``lo``..``hi`` onto picture ``start``..``end`` (``end`` < ``start`` for a y axis)."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    @classmethod
    def fit(
        cls, values: np.ndarray, axis: Axis | None, start: float, end: float, *, pad: bool = True
    ) -> Scale:
        """The range of ``values`` (finite; positive on a log axis), the axis's fixed bounds and zero applied;
        a single value gets room around it, and a y range 5 % of margin."""
        log = bool(axis is not None and axis.log)
        values = np.asarray(values, dtype=np.float64)
        values = values[np.isfinite(values) & ((values > 0) if log else True)]
        if log:
            values = np.log10(values)
        lo, hi = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
        if axis is not None and axis.zero and not log:
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        if hi - lo <= 1e-12 * max(1.0, abs(hi)):
            room = abs(lo) * 0.1 or (0.5 if not pad else 1.0)
            lo, hi = lo - room, hi + room
        elif pad:
            margin = (hi - lo) * 0.05
            lo, hi = lo - (0 if axis is not None and axis.zero and lo == 0 else margin), hi + margin
        if axis is not None and axis.lo is not None:
            lo = math.log10(axis.lo) if log and axis.lo > 0 else axis.lo
        if axis is not None and axis.hi is not None:
            hi = math.log10(axis.hi) if log and axis.hi > 0 else axis.hi
        return cls(lo, hi if hi > lo else lo + 1.0, start, end, log)

    def to(self, value: float) -> float:
        """One data value's position in the picture (NaN for a value a log axis cannot show)."""
        if self.log:
            value = math.log10(value) if value > 0 else math.nan
        return self.start + (value - self.lo) / (self.hi - self.lo) * (self.end - self.start)

    def map(self, values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        if self.log:
            with np.errstate(divide="ignore", invalid="ignore"):
                values = np.where(values > 0, np.log10(np.where(values > 0, values, 1.0)), np.nan)
        return self.start + (values - self.lo) / (self.hi - self.lo) * (self.end - self.start)


def nice_step(span: float, count: int) -> float:
    """A round step (1, 2, 2.5 or 5 × 10^k) giving about ``count`` ticks over ``span``."""
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def format_number(value: float, *, step: float | None = None, percent: bool = False) -> str:
    """A tick or hover number: as few digits as its step needs; k / M for thousands, e-notation for tiny."""
    if not math.isfinite(value):
        return "n/a"
    if percent:
        digits = 0
        if step:
            scaled = step * 100
            digits = max(
                0, -math.floor(math.log10(scaled) + 1e-9) + (1 if _has_half(scaled) and scaled < 10 else 0)
            )
        return f"{value * 100:.{min(digits, 3)}f}%"
    if value == 0:
        return "0"
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.4g}M"
    if size >= 1e4:
        return f"{value / 1e3:.4g}k"
    if size < 1e-3:
        return f"{value:.2g}"
    if step is not None and step < 1:
        digits = min(max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if _has_half(step) else 0), 6)
        return f"{value:.{digits}f}"
    return f"{value:.6g}"


def _has_half(step: float) -> bool:
    """2.5 × 10^k needs one digit more than its power."""
    mantissa = step / 10 ** math.floor(math.log10(step))
    return abs(mantissa - 2.5) < 1e-9


def ticks(scale: Scale, axis: Axis, count: int = 5) -> list[tuple[float, str]]:
    """Tick values inside the scale's range and their labels."""
    if axis.log:
        return _log_ticks(scale)
    if axis.time:
        return _time_ticks(scale, count)
    step = nice_step(scale.hi - scale.lo, count)
    if axis.integer:
        step = max(step, 1.0)
    first = math.ceil(scale.lo / step - 1e-9)
    values = [round((first + k) * step, 12) for k in range(int((scale.hi - scale.lo) / step) + 2)]
    inside = [v for v in values if scale.lo - 1e-9 * step <= v <= scale.hi + 1e-9 * step]
    big = max(abs(scale.lo), abs(scale.hi))
    if not axis.percent and big >= 1e4:  # one unit for the whole axis: 2.5k 5k 7.5k 10k, not 2500 ... 10k
        div, unit = (1e6, "M") if big >= 1e6 else (1e3, "k")
        return [(v, format_number(v / div, step=step / div) + (unit if v else "")) for v in inside]
    return [(v, format_number(v, step=step, percent=axis.percent)) for v in inside]


def _log_ticks(scale: Scale) -> list[tuple[float, str]]:
    first, last = math.ceil(scale.lo - 1e-9), math.floor(scale.hi + 1e-9)
    powers = list(range(first, last + 1))
    every = max(1, math.ceil(len(powers) / 6))
    out = [(10.0**p, format_number(10.0**p)) for p in powers[::every]]
    if len(out) < 2:  # less than a decade: 1-2-5 within it
        out = []
        for p in range(math.floor(scale.lo), math.ceil(scale.hi) + 1):
            for m in (1, 2, 5):
                v = m * 10.0**p
                if scale.lo <= math.log10(v) <= scale.hi:
                    out.append((v, format_number(v)))
    return out


def _time_ticks(scale: Scale, count: int) -> list[tuple[float, str]]:
    raw = (scale.hi - scale.lo) / max(count, 1)
    step = next((s for s in TIME_STEPS if s >= raw), math.ceil(raw / 86400) * 86400)
    first = math.ceil(scale.lo / step) * step
    values = np.arange(first, scale.hi + 1e-9, step)
    days = scale.hi - scale.lo > 86400
    fmt = "%m-%d %H:%M" if days or step >= 3600 else "%H:%M:%S" if step < 60 else "%H:%M"
    return [(float(v), datetime.fromtimestamp(float(v), timezone.utc).strftime(fmt)) for v in values]
