"""Tools (agent runs): each tool's calls, error rate and the reward of the trajectories that called it, by
step; a tool's argument examples, each opening its sample."""

from __future__ import annotations

from rl_board.ui.components.page import current_run
from rl_board.ui.components.tools import render_tools
from rl_board.ui.context import Context
from rl_board.ui.state import PageSpec, Param

PAGE = PageSpec(
    title="Tools",
    icon=":material/build:",
    params=(Param("tool", "str"),),
)


def render(ctx: Context) -> None:
    render_tools(ctx)


ctx = current_run(PAGE.title)
if ctx is not None:
    render(ctx)
