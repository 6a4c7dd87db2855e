"""Per-token rows of nested records (NeMo-RL, prime-rl token exports) read with numpy, not value by value.

A NeMo-RL line holds several arrays padded to the batch's longest sequence;
reading them item by item in Python cost most of its load. Here a row of
numbers becomes one float64 array in C and masks, positions and means are
array operations. The answers are exactly those of ``pick``'s per-value rules:
every value goes through float (as ``pick.finite`` does), a missing or
non-finite one is NaN, a boolean is 1 or 0 except as a token id. A row holding
anything else (text, a nested list, an object) gives None here, and the
caller reads the record by the per-value rules, so odd logs read as before.
"""

from __future__ import annotations

from functools import reduce
from operator import add

import numpy as np

PLAIN = frozenset({int, float, bool, type(None)})  # what a row of plain numbers holds
NO_BOOLS = frozenset({int, float, type(None)})  # ... when a boolean is no value (token ids)


def plain(values: list | None, *, bools: bool = True) -> np.ndarray | None:
    """A row of numbers (booleans too, unless ``bools`` is False; null as NaN) as float64, non-finite values
    NaN; None for anything else."""
    if not isinstance(values, list):
        return None
    kinds = set(map(type, values))  # one C pass over the types
    if not kinds <= (PLAIN if bools else NO_BOOLS):
        return None
    try:
        array = np.array(values, dtype=np.float64)
    except OverflowError:  # an integer beyond any float: the per-value rules say what it is
        return None
    if float in kinds:  # only a float can be infinite (null is NaN already)
        array[~np.isfinite(array)] = np.nan
    return array


def on(mask: np.ndarray) -> np.ndarray:
    """Positions where a loss mask is set (== 1): the response tokens."""
    return np.flatnonzero(mask == 1.0)


def runs(mask: np.ndarray) -> int:
    """How many runs of set positions a loss mask holds (one per generation)."""
    set_ = mask == 1.0
    if not len(set_):
        return 0
    return int(set_[0]) + int(np.count_nonzero(set_[1:] & ~set_[:-1]))


def at(values: np.ndarray | None, positions: np.ndarray) -> np.ndarray:
    """The finite values at these positions (missing entries and out-of-range positions skipped)."""
    if values is None or not len(positions):
        return _NONE
    first, last = int(positions[0]), int(positions[-1])
    if last - first + 1 == len(positions):  # one run (a single answer): a slice, no gather
        picked = values[first : last + 1]
    else:
        picked = values[positions[positions < len(values)]]
    return picked[~np.isnan(picked)]


_NONE = np.zeros(0)


def aligned(values: np.ndarray | None, start: int, stop: int) -> np.ndarray | None:
    """Values of the span ``[start, stop)``, position for position (past the row's end or missing -> NaN);
    None without values. Kept a float64 array: a column is built from such rows without a Python float
    each (``records_to_table``)."""
    if values is None:
        return None
    if stop <= len(values):  # a copy: a view would keep the whole padded row (prompt too) alive
        return values[start:stop].copy() if start < stop else _NONE
    out = np.full(max(stop - start, 0), np.nan)
    inside = values[start:stop]
    out[: len(inside)] = inside
    return out


def whole(values: np.ndarray, start: int, stop: int) -> np.ndarray | list[int] | None:
    """Token ids of the span ``[start, stop)`` as int64 (Python ints past int64's range); None when one is
    past the row's end, missing or not integral (a response with such an id has no token ids)."""
    if stop > len(values):
        return None
    picked = values[start:stop]
    if np.isnan(picked).any() or (picked != np.floor(picked)).any():
        return None
    if len(picked) and np.abs(picked).max() >= 2.0**63:  # past int64: Python ints, as the per-value rules
        return [int(x) for x in picked.tolist()]
    return picked.astype(np.int64)


def mean(values: np.ndarray) -> float | None:
    """The mean of a row, summed left to right as the per-value rules sum it; None for an empty row."""
    return in_order_sum(values.tolist()) / len(values) if len(values) else None


def in_order_sum(values: list[float]) -> float:
    """0.0 plus each value in turn: the one sum of a row's means on every path and Python (from 3.12,
    ``sum`` compensates floats' rounding, which numpy's accumulation cannot do)."""
    return reduce(add, values, 0.0)


def largest_gap(a: np.ndarray | None, b: np.ndarray | None, positions: np.ndarray) -> float | None:
    """max |a − b| over these positions where both are present; None without a pair."""
    if a is None or b is None:
        return None
    inside = positions[positions < min(len(a), len(b))]
    with np.errstate(over="ignore"):  # a gap past the largest float is inf, as in Python
        gaps = np.abs(a[inside] - b[inside])
    gaps = gaps[~np.isnan(gaps)]
    return float(gaps.max()) if len(gaps) else None
