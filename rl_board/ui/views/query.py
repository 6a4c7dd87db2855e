"""SQL: one read-only DuckDB query over the run's samples and steps; a row with step and sample opens it."""

from __future__ import annotations

from rl_board.ui.components.page import current_run
from rl_board.ui.components.query import render_query
from rl_board.ui.context import Context
from rl_board.ui.state import PageSpec, Param

PAGE = PageSpec(
    title="SQL",
    icon=":material/database:",
    params=(Param("sql", "str", "SELECT * FROM samples ORDER BY step, sample LIMIT 100"),),
)


def render(ctx: Context) -> None:
    render_query(ctx.run_store, ctx.run or "run")


ctx = current_run(PAGE.title)
if ctx is not None:
    render(ctx)
