"""Health: what the rules found in the metric and rollout runs under the logs root, grouped by what to do,
with links to look."""

from __future__ import annotations

import streamlit as st

from rl_board.ui import cached, metrics_cached
from rl_board.ui.components import health_findings, health_settings
from rl_board.ui.components.metrics_runs import logs_root_context, render_problems
from rl_board.ui.components.skipped import render_skipped
from rl_board.ui.context import Context
from rl_board.ui.state import PageSpec

PAGE = PageSpec(title="Health", icon=":material/health_and_safety:")  # reads only COMMON parameters


def render(ctx: Context) -> None:
    if (
        not metrics_cached.metrics_under(ctx.logs_root).runs
        and cached.runs_under(str(ctx.logs_root), cached.served()).empty
    ):
        st.warning(
            "No rule was run: this logs root holds no metric log and no rollout run rl-board can read.",
            icon=":material/search_off:",
        )
        render_skipped(ctx.logs_root, expanded=True)
        return
    health = metrics_cached.health_settings(ctx.logs_root)
    located, problems = health_findings.collect(ctx, health)
    st.caption(
        "Rules check the training metrics and the rollout logs of every run under the logs root, and the "
        "trainer's own diagnostics against the numbers their authors publish. Findings are grouped by what "
        "to do (training is diverging, no learning signal, the logged numbers disagree with the data, then "
        "the rest by severity); each names its source and links to its steps and samples."
    )
    render_problems(problems, ctx.logs_root)
    health_findings.render_summary(located)
    health_settings.render_settings(health, ctx.logs_root)
    health_findings.render_findings(located)
    render_skipped(ctx.logs_root)


ctx = logs_root_context(PAGE.title)
if ctx is not None:
    render(ctx)
