"""Agent runs on the Overview: turns and tool calls per trajectory, the tool error rate, and why trajectories
ended (a stacked area: truncation by cause). Shown for multi-turn runs only; a click opens that step."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pandas as pd
import streamlit as st

from rl_board import api
from rl_board.formats import fields as F
from rl_board.ui import cached, charts, svg_figures
from rl_board.ui.context import Context
from rl_board.ui.svg_charts import Chart
from rl_board.ui.trajectory_charts import finish_figure

StepChart = Callable[[str, Callable[[], object], Callable[[], Chart]], None]

PER_TRAJECTORY = ("turns", "n_tool_calls")


def render_trajectory_curves(ctx: Context, chart: StepChart) -> None:
    """``chart(key, figure, svg)`` draws a chart (Plotly or SVG builder) whose points open their step (the
    Overview's own helper)."""
    store = ctx.store
    if store is None or not store.multi_turn:
        return
    st.subheader("Trajectories")
    opts = ctx.settings.curves
    counts = cached.ask(store, "column_summary", columns=PER_TRAJECTORY)
    steps = cached.ask(store, "trajectory_summary")
    left, right = st.columns(2)
    for col, name in zip((left, right), PER_TRAJECTORY, strict=True):
        with col:
            label = F.label(name)
            words: dict[str, Any] = {
                "title": f"{label[:1].upper()}{label[1:]} per trajectory",
                "y_title": label,
                "options": opts,
                "labels": {name: label},
            }
            chart(
                f"chart_{name}",
                partial(charts.curve_figure, counts, [name], **words),
                partial(svg_figures.curve_chart, counts, [name], **words),
            )
    left, right = st.columns(2)
    with left:
        rate = pd.DataFrame({"step": steps["step"], "tool_error_rate_mean": steps["tool_error_rate"]})
        rate_words: dict[str, Any] = {
            "title": "Tool error rate per step",
            "y_title": "share of calls",
            "options": charts.CurveOptions(band=charts.NO_BAND),
            "labels": {"tool_error_rate": "tool error rate"},
        }
        chart(
            "chart_tool_errors",
            lambda: charts.curve_figure(rate, ["tool_error_rate"], **rate_words),
            lambda: svg_figures.curve_chart(rate, ["tool_error_rate"], **rate_words),
        )
        st.caption(
            "Per step: tool results that say the call failed, over the tool calls made. The Tools page "
            "shows each tool's own rate."
        )
    with right:
        if any(c.startswith("finish_") for c in steps.columns):
            chart(
                "chart_finish",
                lambda: finish_figure(steps, api.FINISH_REASONS),
                lambda: svg_figures.finish_chart(steps, api.FINISH_REASONS),
            )
            st.caption(
                "Each step's trajectories by why they ended: stop is an answer; length (out of tokens), "
                "turn_limit, tool_budget, timeout and error cut them short."
            )
        else:
            st.caption(f"No {F.label('finish_reason')} in this log: why trajectories ended is not known.")
