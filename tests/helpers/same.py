"""Exact equality of what two reading paths produced: values and their types, NaN equal to NaN."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd


def same(a: Any, b: Any) -> bool:
    """Equal values and types, NaN equal to NaN, arrays item by item (dtype too)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return type(a) is type(b) and a.dtype == b.dtype and same(a.tolist(), b.tolist())
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def rows_as_lists(sample: dict[str, Any]) -> dict[str, Any]:
    """A sample dict with the rows an adapter kept as numpy arrays as the lists of their items (a float64
    row's floats, an int64 row's ints): what the per-value rules build."""
    return {k: v.tolist() if type(v) is np.ndarray else v for k, v in sample.items()}


def assert_frames_same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """The same columns, dtypes and cells (``same`` per column)."""
    assert isinstance(a, pd.DataFrame)
    assert list(a.columns) == list(b.columns) and list(a.dtypes) == list(b.dtypes)
    for column in a.columns:
        assert same(a[column].tolist(), b[column].tolist()), column
