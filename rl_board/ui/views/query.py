"""SQL: one read-only DuckDB query over the run's samples and steps; a row with step and sample opens it."""

from __future__ import annotations

from rl_board.ui.components.page import current_run
from rl_board.ui.components.query import render_query
from rl_board.ui.context import Context


def render(ctx: Context) -> None:
    render_query(ctx.store, ctx.run or "run")


ctx = current_run("SQL")
if ctx is not None:
    render(ctx)
