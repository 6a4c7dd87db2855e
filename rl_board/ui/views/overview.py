"""Overview: reward, KL and response-length curves per step (click a point to open that step),
and other runs overlaid for comparison."""

from __future__ import annotations

from rl_board.ui import cached
from rl_board.ui.components.compare import render_comparison
from rl_board.ui.components.curves import render_curves
from rl_board.ui.components.page import current_run
from rl_board.ui.context import Context


def render(ctx: Context) -> None:
    store = ctx.store
    render_curves(ctx, cached.step_summary(str(ctx.run_path), store.signature, store))
    render_comparison(ctx)


ctx = current_run("Overview")
if ctx is not None:
    render(ctx)
