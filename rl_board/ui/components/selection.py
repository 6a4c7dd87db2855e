"""Which row of a table, or which point of a chart, the user clicked: one reading of Streamlit's selection
state for every table and every chart."""

from __future__ import annotations

from typing import Any

import streamlit as st


def selected_row(key: str) -> int | None:
    """The position of the clicked row of the dataframe drawn with ``key`` (a clicked cell counts too)."""
    selection = (st.session_state.get(key) or {}).get("selection") or {}
    rows = list(selection.get("rows") or []) + [int(cell[0]) for cell in selection.get("cells") or []]
    return int(rows[0]) if rows else None


def selected_item(key: str, items_key: str) -> Any | None:
    """What the clicked row stands for: ``st.session_state[items_key]`` holds one item per drawn row."""
    row = selected_row(key)
    items = st.session_state.get(items_key) or []
    return items[row] if row is not None and row < len(items) else None


def clicked_point(key: str) -> tuple[float, int] | None:
    """The x and the curve number of the clicked point of the chart drawn with ``key`` (None: no usable
    click)."""
    points = ((st.session_state.get(key) or {}).get("selection") or {}).get("points") or []
    try:
        return (float(points[0]["x"]), int(points[0].get("curve_number", 0))) if points else None
    except (KeyError, TypeError, ValueError):
        return None


def clicked_step(key: str) -> int | None:
    """The step (x, rounded) of the clicked point of a chart drawn over steps."""
    point = clicked_point(key)
    return None if point is None else int(round(point[0]))
