"""Metric tags on the Metrics page: the chart controls, one expander per tag group, charts drawn lazily.

A group's charts are built only while its expander is open, and at most
``CHARTS_PER_PAGE`` at a time (a pager below the group moves on), so a run
with hundreds of tags opens as fast as one with ten.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import streamlit as st

from rl_board.api import MetricsBundle, duplicate_copies, explain
from rl_board.ui import cached, state
from rl_board.ui.components import chart
from rl_board.ui.metric_charts import (
    X_AXES,
    chart_key,
    filter_tags,
    group_tags,
    histogram_figure,
    scalar_figure,
)
from rl_board.ui.svg_metric_figures import histogram_chart, scalar_chart
from rl_board.ui.text import escape_markdown

CHARTS_PER_PAGE = 12
AUTO_OPEN_GROUPS = 3


@dataclass(frozen=True)
class ChartOptions:
    """What the controls decided: tag filter text, EMA weight and the x axis."""

    text: str = ""
    smoothing: float = 0.6
    x_axis: str = "step"
    one_copy: bool = True
    rollouts: dict[str, Path] = field(default_factory=dict)  # metric run -> the rollout run in its folder


def render_controls(*, di_engine: bool = False) -> ChartOptions:
    """Tag filter, smoothing slider and x-axis choice (kept in the view state across pages).

    With a DI-engine run chosen, a toggle hides the extra copies DI-engine
    writes of each statistic (on by default).
    """
    search, smooth, axis = st.columns([3, 2, 3], vertical_alignment="bottom")
    search.text_input(
        "Filter tags",
        placeholder="words in the tag, e.g. loss or actor/",
        **state.bind("metric_filter", default=""),
    )
    smooth.slider(
        "Smoothing",
        0.0,
        0.99,
        step=0.01,
        help="Exponential moving average weight (as TensorBoard's); "
        "the raw curve stays faint behind the smoothed one. 0 = off.",
        **state.bind("smoothing", default=0.6),
    )
    axis.radio(
        "X axis",
        list(X_AXES),
        format_func=X_AXES.get,
        horizontal=True,
        **state.bind("x_axis", default="step"),
    )
    if di_engine:
        st.toggle(
            "One copy of each DI-engine statistic",
            help="DI-engine logs each statistic up to three times: "
            "`x_iter/` (by train iteration), `x_step/` (by env step) and the text logger. On: only the "
            "`x_iter/` tags, and text-log tags that have no such twin.",
            **state.bind("one_copy", default=True),
        )
    return ChartOptions(
        str(state.get("metric_filter", "") or ""),
        float(state.get("smoothing", 0.6)),
        str(state.get("x_axis", "step")),
        di_engine and bool(state.get("one_copy", True)),
    )


def run_tags(bundle: MetricsBundle, runs: Sequence[str]) -> tuple[set[str], set[str]]:
    """Scalar tags and histogram tags logged by any of the runs."""
    scalars = bundle.scalars.loc[bundle.scalars["run"].isin(list(runs)), "tag"]
    hists = bundle.histograms.loc[bundle.histograms["run"].isin(list(runs)), "tag"]
    return {str(t) for t in scalars.unique()}, {str(t) for t in hists.unique()}


def render_groups(
    bundle: MetricsBundle, runs: Sequence[str], options: ChartOptions, colors: dict[str, str]
) -> None:
    """One expander per tag group; open groups draw their charts a page at a time."""
    scalar_tags, hist_tags = run_tags(bundle, runs)
    every = sorted(scalar_tags | hist_tags)
    if options.one_copy:
        every = sorted(set(every) - duplicate_copies(every))
    if not every:
        st.info("These runs hold no scalar or histogram metrics.")
        return
    matching = filter_tags(every, options.text)
    if not matching:
        st.info(f"No tag contains {escape_markdown(repr(options.text))}; {len(every)} tags in all.")
        return
    groups = group_tags(matching)
    st.caption(
        f"{len(matching)} of {len(every)} tags in {len(groups)} group(s). Charts are drawn when a group is "
        f"open, {CHARTS_PER_PAGE} at a time."
    )
    auto_open = bool(options.text) and (len(groups) <= AUTO_OPEN_GROUPS or len(matching) <= CHARTS_PER_PAGE)
    for i, (group, tags) in enumerate(groups.items()):
        expander = st.expander(
            f"**{escape_markdown(group)}** · {len(tags)} tag(s)",
            expanded=auto_open or i == 0,
            key=chart_key("group", group, options.text),
            on_change="rerun",
        )
        with expander:
            if expander.open:
                _render_group(bundle, runs, group, tags, options, colors, hist_tags)


def _render_group(
    bundle: MetricsBundle,
    runs: Sequence[str],
    group: str,
    tags: list[str],
    options: ChartOptions,
    colors: dict[str, str],
    hist_tags: set[str],
) -> None:
    pages = math.ceil(len(tags) / CHARTS_PER_PAGE)
    page = 1
    if pages > 1:
        page = st.pagination(pages, key=chart_key("page", group, options.text))
        st.caption(
            f"Page {page} of {pages}: tags {(page - 1) * CHARTS_PER_PAGE + 1}–"
            f"{min(page * CHARTS_PER_PAGE, len(tags))} of {len(tags)}"
        )
    shown = tags[(page - 1) * CHARTS_PER_PAGE : page * CHARTS_PER_PAGE]
    columns = st.columns(2)
    for k, tag in enumerate(shown):
        with columns[k % 2]:
            if tag in hist_tags:
                _histograms(bundle, runs, tag)
            else:
                _scalar_chart(bundle, runs, tag, options, colors)
            _explain(tag)


def _scalar_chart(
    bundle: MetricsBundle, runs: Sequence[str], tag: str, options: ChartOptions, colors: dict[str, str]
) -> None:
    series = {run: frame for run in runs if len(frame := bundle.series(run, tag))}
    words: dict[str, Any] = {
        "tag": tag,
        "smoothing": options.smoothing,
        "x_axis": options.x_axis,
        "colors": colors,
    }
    if options.x_axis != "step" and not any(frame["wall_time"].notna().any() for frame in series.values()):
        st.caption(f"{escape_markdown(tag)}: no wall times logged; choose step as the x axis.")
    samples = next((options.rollouts[run] for run in series if run in options.rollouts), None)
    key = chart_key("chart", tag)
    clickable = samples is not None and options.x_axis == "step"

    def figure() -> Any:  # a Plotly figure
        fig = scalar_figure(series, **words)
        if clickable:
            fig.update_traces(mode="lines+markers", marker={"size": 4})  # points to click
        return fig

    chart.show(
        key,
        figure=figure,
        svg=lambda: scalar_chart(series, **words),
        on_select=(lambda: _open_samples(key, samples)) if samples is not None and clickable else None,
    )
    if clickable:
        st.caption(chart.click_hint("open that step's samples in the step browser"))


def _open_samples(key: str, run_path: Path) -> None:
    """A click on a metric curve: the rollout run's step nearest to the point, in the step browser."""
    points = ((st.session_state.get(key) or {}).get("selection") or {}).get("points") or []
    if not points or "x" not in points[0]:
        return
    steps = cached.store_for(run_path).steps
    if not steps:
        return
    wanted = float(points[0]["x"])
    nearest = min(steps, key=lambda s: abs(s - wanted))
    state.put_many(run=cached.run_name(run_path), step=nearest, sample=None, table_page=1)
    state.request_page("steps")


def _histograms(bundle: MetricsBundle, runs: Sequence[str], tag: str) -> None:
    hist = bundle.histograms
    for run in runs:
        records = hist[(hist["run"] == run) & (hist["tag"] == tag)]
        if len(records):
            name = run if len(runs) > 1 else ""
            chart.show(
                chart_key("hist", run, tag),
                figure=partial(histogram_figure, records, tag=tag, run=name),
                svg=partial(histogram_chart, records, tag=tag, run=name),
            )


def _explain(tag: str) -> None:
    entry = explain(tag)
    if entry is not None:
        st.caption(f"{entry.meaning} **Healthy:** {entry.healthy}")
