"""Export per-sample tables as CSV and JSONL bytes (pure, no Streamlit).

JSONL is exact: one JSON object per row, NaN and missing values as ``null``.
CSV is for spreadsheets: text cells that begin with ``= + - @`` (or a tab or
carriage return) get a leading ``'`` so a spreadsheet shows them instead of
running them as formulas (OWASP "CSV injection"). Numbers are written as is.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np
import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def _defuse(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def to_csv_bytes(frame: pd.DataFrame) -> bytes:
    """UTF-8 CSV (with BOM-less header row, no index) safe to open in a spreadsheet."""
    out = frame.copy()
    for name in out.columns:
        col = out[name]
        if col.dtype == object or pd.api.types.is_string_dtype(col.dtype):
            out[name] = col.map(_defuse, na_action="ignore")
    return out.to_csv(index=False).encode("utf-8")


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def to_jsonl_bytes(frame: pd.DataFrame) -> bytes:
    """One JSON object per row (UTF-8, non-ASCII kept); NaN/inf/missing become null."""
    columns = [str(c) for c in frame.columns]
    lines = []
    for row in frame.itertuples(index=False, name=None):
        record = {c: _plain(v) for c, v in zip(columns, row, strict=True)}
        lines.append(json.dumps(record, ensure_ascii=False, allow_nan=False))
    return ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")


def export_file_name(run: str, step: int | None, suffix: str) -> str:
    """``ppo_math-step12.csv``: only safe characters, whatever the run is called."""
    base = _UNSAFE_NAME.sub("_", run).strip("._-") or "run"
    scope = "all-steps" if step is None else f"step{step}"
    return f"{base}-{scope}.{suffix.lstrip('.')}"
