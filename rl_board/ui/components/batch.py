"""One step at a glance: averages with the change from the previous step, and three batch charts."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import streamlit as st

from rl_board.api import RolloutStore
from rl_board.formats import fields as F
from rl_board.ui import cached, charts, state, svg_figures
from rl_board.ui.components import chart
from rl_board.ui.components.page import missing

CHART_COLUMNS = ("reward", "ref_reward", "reward_gap")


def _number(value: Any) -> float | None:  # anything float() takes; None for the rest
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def step_metrics(
    summary: pd.DataFrame, step: int, kl: F.KLEstimator | None = None
) -> list[tuple[str, float, float | None, F.DeltaColour, str]]:
    """(label, value, change from the previous step or None, delta colour, help) for what the run has
    (the KL card is ``kl``'s)."""
    rows = summary.sort_values("step").reset_index(drop=True)
    pos = rows.index[rows["step"] == step]
    if len(pos) == 0:
        return []
    here = rows.iloc[pos[0]]
    before = rows.iloc[pos[0] - 1] if pos[0] > 0 else None
    out = []
    for name, color in F.step_cards(kl):
        field = F.known(F.STEP, name)
        column, label = f"{field.name}_mean", field.short[:1].upper() + field.short[1:]
        value = _number(here.get(column))
        if value is None:
            continue
        prev = None if before is None else _number(before.get(column))
        out.append(
            (
                label,
                value,
                None if prev is None else value - prev,
                color,
                f"{field.help} The delta is the change from the previous step.",
            )
        )
    return out


def _open_sample_from(chart_key: str) -> None:
    event = st.session_state.get(chart_key) or {}
    points = (event.get("selection") or {}).get("points") or []
    if points and "x" in points[0]:
        state.put("sample", int(points[0]["x"]))
        state.request_page("sample")


def render_batch(store: RolloutStore, step: int, *, kl: F.KLEstimator | None = None) -> None:
    summary = cached.ask(store, "step_summary")
    values = step_metrics(summary, step, kl)
    if values:
        cols = st.columns(len(values))
        for col, (label, value, delta, color, help_text) in zip(cols, values, strict=True):
            col.metric(
                label,
                f"{value:.4g}",
                None if delta is None else f"{delta:+.4g}",
                delta_color=color,
                help=help_text,
                border=True,
            )
    frame = cached.ask(store, "step_frame", step=step, columns=CHART_COLUMNS)
    left, mid, right = st.columns(3)
    with left:
        key = "chart_step_rewards"
        chart.show(
            key,
            figure=lambda: charts.reward_bars_figure(frame),
            svg=lambda: svg_figures.reward_bars_chart(frame),
            on_select=lambda: _open_sample_from(key),
        )
    with mid:
        if store.has("reward_gap"):
            chart.show(
                "chart_step_gap",
                figure=lambda: charts.reward_gap_figure(frame),
                svg=lambda: svg_figures.reward_gap_chart(frame),
            )
        else:
            missing("No reward gap", "this run has no ref_reward.")
    with right:
        chart.show(
            "chart_step_hist",
            figure=lambda: charts.reward_hist_figure(frame),
            svg=lambda: svg_figures.reward_hist_chart(frame),
        )
    if not store.has("ref_reward"):
        st.caption("No reference rewards in this run: charts show the policy's reward only.")
