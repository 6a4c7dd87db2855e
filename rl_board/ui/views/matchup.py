"""Same prompts: two runs (or two steps of one run) on the prompts they share, answer against answer."""

from __future__ import annotations

from rl_board.ui.components.matchup import render_matchup
from rl_board.ui.components.page import current_run
from rl_board.ui.context import Context


def render(ctx: Context) -> None:
    render_matchup(ctx)


ctx = current_run("Same prompts")
if ctx is not None:
    render(ctx)
