"""Same prompts: two runs (or two steps of one run) on the prompts they share, answer against answer."""

from __future__ import annotations

from rl_board.ui.components.matchup import render_matchup
from rl_board.ui.components.page import current_run
from rl_board.ui.context import Context
from rl_board.ui.state import PageSpec, Param

PAGE = PageSpec(
    title="Same prompts",
    icon=":material/compare_arrows:",
    params=(
        Param("versus", "str", old=("vs",)),
        Param("step_a", "str", old=("sa",)),
        Param("step_b", "str", old=("sb",)),
        Param("matchup_row", "int", old=("mrow",)),
    ),
)


def render(ctx: Context) -> None:
    render_matchup(ctx)


ctx = current_run(PAGE.title)
if ctx is not None:
    render(ctx)
