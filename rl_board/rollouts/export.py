"""Export per-sample tables as CSV and JSONL bytes (pure, no Streamlit).

JSONL is exact: one JSON object per row, NaN and missing values as ``null``.
CSV is for spreadsheets: text cells and column names that begin with
``= + - @`` (or a tab or carriage return) get a leading ``'`` so a spreadsheet
shows them instead of running them as formulas (OWASP "CSV injection"); that
covers the log's own field names and file names too. Numbers are written as is.
"""

from __future__ import annotations

import json
import math
import re
import sys
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from rl_board.lazy import pd

if TYPE_CHECKING:
    import pyarrow as pa

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
        if not (pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype)):
            out[name] = col.astype(object).map(_cell, na_action="ignore")
    out.columns = [_defuse(str(name)) for name in out.columns]
    return out.to_csv(index=False).encode("utf-8")


def _cell(value: Any) -> Any:
    """A text cell made safe; lists and objects (the log's own fields) written as JSON text first."""
    if isinstance(value, dict | list | tuple | np.ndarray):
        value = json.dumps(_plain(value), ensure_ascii=False, default=str)
    return _defuse(value)


def arrow_records(table: pa.Table) -> list[dict[str, Any]]:
    """An Arrow table's rows as JSON-ready objects, each value as ``to_jsonl_bytes`` writes it (an exact
    decimal as the float a frame holds), without making a frame."""
    names = [str(name) for name in table.column_names]
    columns = [column.to_pylist() for column in table.columns]
    return [{n: _plain(v) for n, v in zip(names, row, strict=True)} for row in zip(*columns, strict=True)]


def _plain(value: Any) -> Any:
    if value is None:
        return None
    pandas = sys.modules.get("pandas")  # (no pandas: no pandas values; and a lookup, not a lazy getattr)
    if pandas is not None and (value is pandas.NA or value is pandas.NaT):
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, Decimal):  # DuckDB's HUGEINT and DECIMAL, which its frames hold as floats
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def to_jsonl_bytes(frame: pd.DataFrame) -> bytes:
    """One JSON object per row (UTF-8, non-ASCII kept); NaN/inf/missing become null."""
    columns = [str(c) for c in frame.columns]
    lines = []
    for row in frame.itertuples(index=False, name=None):
        record = {c: _plain(v) for c, v in zip(columns, row, strict=True)}
        lines.append(json.dumps(record, ensure_ascii=False, allow_nan=False, default=str))
    return ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")


def export_file_name(run: str, step: int | None, suffix: str) -> str:
    """``ppo_math-step12.csv``: only safe characters, whatever the run is called."""
    base = _UNSAFE_NAME.sub("_", run).strip("._-") or "run"
    scope = "all-steps" if step is None else f"step{step}"
    return f"{base}-{scope}.{suffix.lstrip('.')}"
