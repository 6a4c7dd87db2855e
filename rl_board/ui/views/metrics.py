"""Metrics: training curves of TensorBoard runs, DI-engine experiments and text logs under the logs root."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from rl_board import api
from rl_board.api import OUTSIDE_KIND, refused_metric_runs
from rl_board.ui import metrics_cached
from rl_board.ui.components import metrics_runs, metrics_tags
from rl_board.ui.context import Context
from rl_board.ui.state import PageSpec, Param

PAGE = PageSpec(
    title="Metrics",
    icon=":material/monitoring:",
    params=(
        Param("metric_runs", "list", (), ("mruns",)),
        Param("metric_filter", "str", "", ("mq",)),
        Param("smoothing", "float", 0.6, ("msm",)),
        Param("x_axis", "str", "step", ("mx",)),
        Param("one_copy", "bool", True, ("mone",)),
    ),
)


def render(ctx: Context) -> None:
    found = metrics_cached.run_list(str(ctx.logs_root))
    listed = [s for s in found if s.kind != OUTSIDE_KIND]
    index = metrics_runs.render_index_progress(ctx.logs_root)
    refused = refused_metric_runs(found)
    if not listed:
        metrics_runs.render_problems(
            index.problems if index is not None else refused, ctx.logs_root.resolve()
        )
        st.info(
            "No training metrics under this logs root. The Metrics page reads TensorBoard event files "
            "(`events.out.tfevents.*`), DI-engine / LightZero experiment folders, ROLL and verl console "
            "logs and JSONL metric files.",
            icon=":material/monitoring:",
        )
        return
    runs = metrics_runs.pick_runs(listed, index)
    bundle = metrics_cached.chosen_runs(ctx.logs_root, runs) if runs else None
    problems = (
        index.problems if index is not None else refused + (bundle.problems if bundle is not None else [])
    )
    metrics_runs.render_problems(problems, ctx.logs_root.resolve())
    if bundle is None:
        st.info("Choose one or more runs above.")
        return
    colors = metrics_runs.run_colors(runs)
    metrics_runs.render_episodes(bundle, runs, colors)
    st.subheader("Curves")
    copies = any(api.metric_kind_logs_copies(info.kind) for info in bundle.runs if info.run in runs)
    options = metrics_tags.render_controls(di_engine=copies)
    options = replace(options, rollouts=metrics_runs.rollout_runs_beside(bundle, ctx.logs_root))
    metrics_tags.render_groups(bundle, runs, options, colors)
    metrics_runs.render_run_details(bundle, runs)


ctx = metrics_runs.logs_root_context(PAGE.title)
if ctx is not None:
    render(ctx)
