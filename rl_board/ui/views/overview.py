"""Overview: reward, KL and response-length curves per step (with interactive charts, a point opens its step),
and other runs overlaid for comparison."""

from __future__ import annotations

from rl_board.ui import cached
from rl_board.ui.components.compare import render_comparison
from rl_board.ui.components.curves import render_curves
from rl_board.ui.components.page import current_run
from rl_board.ui.context import Context
from rl_board.ui.state import PageSpec, Param

PAGE = PageSpec(
    title="Overview",
    icon=":material/show_chart:",
    params=(Param("compare", "list", ()),),
)


def render(ctx: Context) -> None:
    render_curves(ctx, cached.ask(ctx.run_store, "step_summary"))
    render_comparison(ctx)


ctx = current_run(PAGE.title)
if ctx is not None:
    render(ctx)
