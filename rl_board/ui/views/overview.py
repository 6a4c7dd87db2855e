"""Overview: reward, KL and response-length curves per step; click a point to open that step."""

from __future__ import annotations

import streamlit as st

from rl_board.ui import cached, charts, state
from rl_board.ui.components.compare import render_comparison
from rl_board.ui.components.page import current_run, missing
from rl_board.ui.context import Context

REWARD_SERIES = ("reward", "ref_reward", "valid_reward", "ref_valid_reward")


def _open_step_from(chart_key: str) -> None:
    """Chart selection callback: the clicked point's step opens in the step browser."""
    event = st.session_state.get(chart_key) or {}
    points = (event.get("selection") or {}).get("points") or []
    if not points:
        return
    try:
        step = int(round(float(points[0]["x"])))
    except (KeyError, TypeError, ValueError):
        return
    state.put_many(step=step, sample=None, tpage=1)
    state.request_page("steps")


def _chart(fig: object, key: str) -> None:
    st.plotly_chart(fig, key=key, on_select=lambda: _open_step_from(key), selection_mode="points",
                    config={"displaylogo": False})


def render(ctx: Context) -> None:
    store = ctx.store
    summary = cached.step_summary(str(ctx.run_path), store.signature, store)
    opts = ctx.settings.curves
    if len(summary) == 1:
        st.info("This run has a single step: each curve is one point. The step browser shows its batch.")
    st.caption("Click a point on any curve to open that step in the step browser.")

    available = [s for s in REWARD_SERIES if charts.has_series(summary, s)]
    state.put("curves", [s for s in state.get("curves", available) if s in available])
    chosen = st.pills("Reward curves", available, selection_mode="multi",
                      format_func=charts.SERIES_LABELS.get, **state.bind("curves"))
    chosen = [s for s in (chosen or []) if s in available]
    if chosen:
        _chart(charts.curve_figure(summary, chosen, title="Reward per step", y_title="reward", options=opts),
               "chart_reward")
    else:
        st.caption("No reward curve selected.")

    left, right = st.columns(2)
    with left:
        kl = ctx.settings.kl_series
        if charts.has_series(summary, kl):
            title = "KL to the reference per step" if kl == "kl" else "Log-ratio to the reference per step"
            _chart(charts.curve_figure(summary, [kl], title=title, y_title=kl, options=opts), "chart_kl")
        else:
            missing("No KL curve", "this run has no logprobs and ref_logprobs (e.g. an evaluation log).")
    with right:
        length = "length" if charts.has_series(summary, "length") else "length_chars"
        if charts.has_series(summary, length):
            series = [length] + (["ref_length_chars"] if length == "length_chars"
                                 and charts.has_series(summary, "ref_length_chars") else [])
            unit = "tokens" if length == "length" else "characters"
            _chart(charts.curve_figure(summary, series, title=f"Response length ({unit}) per step",
                                       y_title=unit, options=opts), "chart_length")
            if length == "length_chars":
                st.caption("No response_tokens in this run: length is counted in characters.")
        else:
            missing("No length curve", "this run has no responses with text or tokens.")
    render_comparison(ctx)


ctx = current_run("Overview")
if ctx is not None:
    render(ctx)
