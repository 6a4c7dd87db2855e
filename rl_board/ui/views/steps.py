"""Step browser: one step's batch — averages, charts, filters, the sortable table and export."""

from __future__ import annotations

import streamlit as st

from rl_board.ui import state
from rl_board.ui.components.batch import render_batch
from rl_board.ui.components.filters import render_filters
from rl_board.ui.components.page import current_run
from rl_board.ui.components.sample_table import render_table
from rl_board.ui.components.step_picker import pick_step
from rl_board.ui.context import Context
from rl_board.ui.state import PageSpec, Param

PAGE = PageSpec(
    title="Step browser",
    icon=":material/table_rows:",
    params=(
        Param("sort", "str", "sample"),
        Param("descending", "bool", False, ("desc",)),
        Param("search", "str", "", ("q",)),
        Param("regex", "bool", False),
        Param("match_case", "bool", False, ("case",)),
        Param("all_steps", "bool", False, ("all",)),
        Param("table_page", "int", 1, ("tpage",)),
        Param("reward", "range"),
        Param("kl", "range"),
        Param("length", "range", old=("len",)),
        Param("filter_column", "str", "", ("xcol",)),
        Param("filter_range", "range", old=("xr",)),
        # trajectories (multi-turn runs)
        Param("turns", "range"),
        Param("tool_calls", "range"),
        Param("tools", "str", ""),
        Param("tool_errors", "bool", False),
        Param("finish_reason", "list", ()),
        # failure patterns and labels
        Param("repetition", "range"),
        Param("scripts", "str", ""),
        Param("template", "int"),
        Param("tag", "str", ""),
    ),
)


def render(ctx: Context) -> None:
    store = ctx.run_store
    step = pick_step(store.steps)
    kl = ctx.settings.kl
    render_batch(store, step, kl=kl)
    st.button(
        "Groups of this step",
        key="to_groups",
        icon=":material/workspaces:",
        on_click=state.request_page,
        args=("groups",),
        help="The samples of each prompt together: spread, solved share, best and worst",
    )
    st.subheader("Samples")
    choice = render_filters(store, kl=kl)
    render_table(store, step, choice, ctx.settings.text, ctx.run or "run", kl=kl)


ctx = current_run(PAGE.title)
if ctx is not None:
    render(ctx)
