"""Sample view: prompt, response, reference and ground truth side by side; the token view."""

from __future__ import annotations

from rl_board.ui.components.page import current_run
from rl_board.ui.components.sample_detail import render_sample
from rl_board.ui.context import Context


def render(ctx: Context) -> None:
    render_sample(ctx)


ctx = current_run("Sample")
if ctx is not None:
    render(ctx)
