"""Groups: one step's samples grouped per prompt (GRPO), with the best and worst answer of a group."""

from __future__ import annotations

from rl_board.ui.components.groups import render_groups
from rl_board.ui.components.page import current_run
from rl_board.ui.components.step_picker import pick_step
from rl_board.ui.context import Context
from rl_board.ui.state import PageSpec, Param

PAGE = PageSpec(
    title="Groups",
    icon=":material/workspaces:",
    params=(
        Param("threshold", "float", old=("thr",)),
        Param("zero_variance", "bool", False, ("flat",)),
        Param("group", "str", old=("grp",)),
    ),
)


def render(ctx: Context) -> None:
    store = ctx.run_store
    step = pick_step(store.steps)
    render_groups(store, step, ctx.settings.text)


ctx = current_run(PAGE.title)
if ctx is not None:
    render(ctx)
