"""Step curves of one run: reward (choose which), KL (the chosen estimator), response length; SVG pictures
(hover for values), or Plotly charts whose points open their step with "Interactive charts" on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from rl_board.formats import fields as F
from rl_board.ui import cached, charts, state, svg_figures
from rl_board.ui.components import chart
from rl_board.ui.components.page import missing
from rl_board.ui.components.selection import clicked_step
from rl_board.ui.components.trajectory_curves import render_trajectory_curves
from rl_board.ui.context import Context
from rl_board.ui.run_charts import length_figure
from rl_board.ui.svg_charts import Chart
from rl_board.ui.text import escape_markdown

REWARD_SERIES = ("reward", "ref_reward", "valid_reward", "ref_valid_reward")


def _open_step_from(chart_key: str) -> None:
    """Chart selection callback: the clicked point's step opens in the step browser."""
    step = clicked_step(chart_key)
    if step is None:
        return
    state.put_many(step=step, sample=None, table_page=1)
    state.request_page("steps")


def _curves(
    key: str,
    summary: pd.DataFrame,
    series: list[str],
    *,
    options: charts.CurveOptions,
    wide: bool = True,
    **words: Any,
) -> None:
    """Step curves of ``series`` (``words``: title, y_title, labels); a click opens its step."""
    width = svg_figures.WIDE if wide else svg_figures.HALF
    _chart(
        key,
        lambda: charts.curve_figure(summary, series, options=options, **words),
        lambda: svg_figures.curve_chart(summary, series, options=options, width=width, **words),
    )


def _chart(key: str, figure: Callable[[], object], svg: Callable[[], Chart]) -> None:
    """A chart of steps (either kind, as the sidebar's setting says); clicking a point opens its step."""
    chart.show(key, figure=figure, svg=svg, on_select=lambda: _open_step_from(key), link=_step_links())


def _step_links() -> Callable[[float], str]:
    """The step browser at step ``x``, as a click on a point opens it (the view state read once a chart)."""
    to_step = state.linker("steps", sample=None, table_page=None)
    return lambda x: to_step(step=int(x))


def _reward_curves(summary: pd.DataFrame, opts: charts.CurveOptions) -> None:
    available = [s for s in REWARD_SERIES if charts.has_series(summary, s)]
    state.put("curves", [s for s in state.get("curves", available) if s in available])
    chosen = st.pills(
        "Reward curves",
        available,
        selection_mode="multi",
        format_func=lambda s: F.label(s, F.STEP),
        **state.bind("curves"),
    )
    chosen = [s for s in (chosen or []) if s in available]
    if chosen:
        _curves("chart_reward", summary, chosen, title="Reward per step", y_title="reward", options=opts)
    else:
        st.caption("No reward curve selected.")


def kl_title(kl: F.KLEstimator, what: str = "to the reference per step") -> str:
    """A KL chart's title, naming its estimator."""
    return f"KL ({kl.name}) {what}"


def _kl_curve(summary: pd.DataFrame, kl: F.KLEstimator, opts: charts.CurveOptions) -> None:
    if charts.has_series(summary, kl.step):
        _curves(
            "chart_kl",
            summary,
            [kl.step],
            wide=False,
            title=kl_title(kl),
            y_title=f"KL ({kl.name})",
            options=opts,
        )
        st.caption(
            f"KL {kl.name} per token: {kl.formula} with r = logp − ref_logp; per sample the mean over its "
            f"tokens, the line is the step's mean. {kl.help} Change it under Display settings › KL estimator."
        )
    else:
        missing("No KL curve", "this run has no logprobs and ref_logprobs (e.g. an evaluation log).")


def _length_curve(summary: pd.DataFrame, opts: charts.CurveOptions) -> None:
    length = "length" if charts.has_series(summary, "length") else "length_chars"
    if not charts.has_series(summary, length):
        missing("No length curve", "this run has no responses with text or tokens.")
        return
    series = [length] + (
        ["ref_length_chars"]
        if length == "length_chars" and charts.has_series(summary, "ref_length_chars")
        else []
    )
    unit = "tokens" if length == "length" else "characters"
    title = f"Response length ({unit}) per step"
    _curves("chart_length", summary, series, wide=False, title=title, y_title=unit, options=opts)
    if length == "length_chars":
        st.caption("No response_tokens in this run: length is counted in characters.")


def _component_curves(ctx: Context, opts: charts.CurveOptions) -> None:
    """One curve per part of the reward (TRL's reward functions, verl's acc, ...), when the run logs them."""
    store = ctx.run_store
    parts = store.reward_components
    if not parts:
        return
    summary = cached.ask(store, "column_summary", columns=tuple(parts))
    main = store.report.field_map.get("reward")
    note = f" · the main reward is read from {main}" if main else ""
    _curves(
        "chart_components",
        summary,
        list(parts),
        title="Reward components per step",
        y_title="value",
        options=opts,
    )
    st.caption(
        f"{len(parts)} reward component(s) in this run{escape_markdown(note)}. "
        "Switch the main reward under **Fields** in the sidebar."
    )


GROUPED_AT_MOST = 0.6  # groups per sample: above this the run is not grouped


def _group_curves(ctx: Context) -> None:
    """GRPO runs: per step, the mean share of each group solved and the share of zero-variance groups."""
    stats = cached.ask(ctx.run_store, "group_stats")
    # A GRPO run has a handful of samples per prompt; a PPO run's prompts only repeat by chance.
    if stats.empty or stats["groups"].sum() > GROUPED_AT_MOST * ctx.run_store.num_samples:
        return
    frame = stats.rename(
        columns={"solved_mean": "solved_share_mean", "zero_variance_share": "zero_variance_mean"}
    )
    _curves(
        "chart_groups",
        frame,
        ["solved_share", "zero_variance"],
        title="Groups per step (GRPO)",
        y_title="share of groups",
        options=charts.CurveOptions(band=charts.NO_BAND),
    )
    st.caption(
        "Solved share: per group, the share of samples with the run's highest reward, averaged over groups. "
        "Zero variance: groups whose samples all got the same reward (no learning signal). "
        "The Groups page shows each step's groups."
    )


def _mismatch_curves(ctx: Context, opts: charts.CurveOptions) -> None:
    """Runs that log the trainer's log-probs beside the engine's: how far apart they are, step by step."""
    if not ctx.run_store.has("train_logprobs"):
        return
    summary = cached.ask(ctx.run_store, "mismatch_summary")
    _curves(
        "chart_mismatch",
        summary,
        ["mismatch", "mismatch_max"],
        title="Train vs inference log-probs per step",
        y_title="k3 mismatch",
        options=opts,
    )
    st.caption(
        "k3 = exp(r) − 1 − r with r = trainer logp − engine logp, per token: 0 when the two agree. "
        "A rising curve means the importance ratios the trainer computes are off."
    )


def _length_distribution(ctx: Context) -> None:
    counts, edges, truncated = cached.ask(ctx.run_store, "length_distribution")
    if counts.empty or len(counts) < 2:
        return
    unit = "tokens" if ctx.run_store.length_column() == "n_tokens" else "characters"
    chart.show(
        "chart_length_hist",
        figure=lambda: length_figure(counts, edges, truncated, unit),
        svg=lambda: svg_figures.length_chart(counts, edges, truncated, unit),
    )
    st.caption(
        "Each column is one step; darker = more of its samples at that length. The line is the share of "
        "answers at the run's longest length: when generation hits its limit, they were cut off."
    )


def render_curves(ctx: Context, summary: pd.DataFrame) -> None:
    """The run's step curves with the sidebar's band, shift and KL choices."""
    opts = ctx.settings.curves
    if len(summary) == 1:
        st.info("This run has a single step: each curve is one point. The step browser shows its batch.")
    st.caption(chart.click_hint("open that step in the step browser", linked=True))
    _reward_curves(summary, opts)
    _component_curves(ctx, opts)
    _group_curves(ctx)
    render_trajectory_curves(ctx, _chart)
    _mismatch_curves(ctx, opts)
    _length_distribution(ctx)
    left, right = st.columns(2)
    with left:
        _kl_curve(summary, ctx.settings.kl, opts)
    with right:
        _length_curve(summary, opts)
