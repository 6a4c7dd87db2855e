"""Patterns: the failures a run repeats (template families spreading, loops, mixed scripts), each a click away
from its samples in the step browser."""

from __future__ import annotations

from rl_board.ui.components.page import current_run
from rl_board.ui.components.patterns import render_patterns
from rl_board.ui.context import Context
from rl_board.ui.state import PageSpec, Param

PAGE = PageSpec(
    title="Patterns",
    icon=":material/pattern:",
    params=(Param("family", "int"),),
)


def render(ctx: Context) -> None:
    render_patterns(ctx)


ctx = current_run(PAGE.title)
if ctx is not None:
    render(ctx)
