"""Groups: one step's samples grouped per prompt (GRPO), with the best and worst answer of a group."""

from __future__ import annotations

from rl_board.ui.components.groups import render_groups
from rl_board.ui.components.page import current_run
from rl_board.ui.components.step_picker import pick_step
from rl_board.ui.context import Context


def render(ctx: Context) -> None:
    store = ctx.store
    step = pick_step(store.steps)
    render_groups(store, str(ctx.run_path), step, ctx.settings.text)


ctx = current_run("Groups")
if ctx is not None:
    render(ctx)
