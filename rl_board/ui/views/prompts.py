"""Prompts: how each prompt fares across training (never solved, newly failing, ...) and one prompt's
history."""

from __future__ import annotations

from rl_board.ui.components.page import current_run
from rl_board.ui.components.prompt_tracker import render_prompts
from rl_board.ui.context import Context
from rl_board.ui.state import PageSpec, Param

PAGE = PageSpec(
    title="Prompts",
    icon=":material/history:",
    params=(
        Param("prompt_id", "str", old=("pid",)),
        Param("prompt_status", "str", "all", ("pst",)),
    ),
)


def render(ctx: Context) -> None:
    render_prompts(ctx.run_store, ctx.settings.text, kl=ctx.settings.kl)


ctx = current_run(PAGE.title)
if ctx is not None:
    render(ctx)
