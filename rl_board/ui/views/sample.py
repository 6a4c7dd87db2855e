"""Sample view: the response to read (prompt above, ground truth and reference beside it); the token view."""

from __future__ import annotations

import streamlit as st

from rl_board import api
from rl_board.ui import state
from rl_board.ui.components.page import current_run
from rl_board.ui.components.sample_detail import render_sample
from rl_board.ui.context import Context
from rl_board.ui.state import PageSpec, Param

PAGE = PageSpec(
    title="Sample",
    icon=":material/article:",
    params=(
        Param("token_metric", "str", "kl", ("metric",)),
        Param("token_page", "int", 1, ("tokpage",)),
        Param("turn", "int"),
        Param("rendered", "bool", False),
    ),
)


def _to_history(pid: str) -> None:
    state.put("prompt_id", pid)
    state.request_page("prompts")


def render(ctx: Context) -> None:
    links = st.container()
    render_sample(ctx)
    step, index = state.get("step"), state.get("sample")
    if step is None or index is None or not ctx.run_store.has("prompt"):
        return
    rows = ctx.run_store.samples(step=int(step), columns=["prompt"], offset=int(index), limit=1)
    if len(rows) and isinstance(rows["prompt"].iloc[0], str):  # the id is the text's hash: no table needed
        links.button(
            "This prompt across training",
            key="to_prompt_history",
            icon=":material/history:",
            on_click=_to_history,
            args=(api.prompt_id(rows["prompt"].iloc[0]),),
            help="Every sample of this prompt, step by step: reward, length, when it was first solved",
        )


ctx = current_run(PAGE.title)
if ctx is not None:
    render(ctx)
