"""Prompts: how each prompt fares across training (never solved, newly failing, ...) and one prompt's history."""

from __future__ import annotations

from rl_board.ui.components.page import current_run
from rl_board.ui.components.prompt_tracker import render_prompts
from rl_board.ui.context import Context


def render(ctx: Context) -> None:
    render_prompts(ctx.store, str(ctx.run_path), ctx.settings.text, kl=ctx.settings.kl)


ctx = current_run("Prompts")
if ctx is not None:
    render(ctx)
