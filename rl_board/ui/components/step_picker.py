"""Choosing a step: a slider when steps are evenly spaced, a list otherwise, plus previous/next."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from rl_board.ui import state


def evenly_spaced(steps: Sequence[int]) -> bool:
    """True when there are at least two steps and all gaps are equal."""
    if len(steps) < 2:
        return False
    gap = steps[1] - steps[0]
    return gap > 0 and all(b - a == gap for a, b in zip(steps, steps[1:], strict=False))


def valid_step(steps: Sequence[int]) -> int:
    """The view's step if the run has it; else the last step (with a message when it came from a link)."""
    wanted = state.get("step")
    if wanted in steps:
        return int(wanted)
    fallback = int(steps[-1])
    if wanted is not None:
        st.warning(
            f"Step {wanted} is not in this run (steps {steps[0]}–{steps[-1]}); showing step {fallback}."
        )
    state.put_many(step=fallback, sample=None, table_page=1)
    return fallback


def _step_changed() -> None:
    state.put_many(sample=None, table_page=1)


def _move(steps: Sequence[int], delta: int) -> None:
    if state.get("step") not in steps:  # the run changed under the button: let the page re-validate
        return
    pos = list(steps).index(state.get("step")) + delta
    if 0 <= pos < len(steps):
        state.put_many(step=int(steps[pos]), sample=None, table_page=1)


def pick_step(steps: Sequence[int], *, key: str = "step") -> int:
    """Draw the chooser and return the chosen step (always one of ``steps``)."""
    current = valid_step(steps)
    pos = list(steps).index(current)
    prev_col, mid, next_col = st.columns([1, 8, 1], vertical_alignment="bottom")
    prev_col.button(
        "◀ Prev",
        key=f"{key}_prev",
        on_click=_move,
        args=(steps, -1),
        disabled=pos == 0,
        help="Previous step",
        width="stretch",
    )
    next_col.button(
        "Next ▶",
        key=f"{key}_next",
        on_click=_move,
        args=(steps, 1),
        disabled=pos == len(steps) - 1,
        help="Next step",
        width="stretch",
    )
    with mid:
        if len(steps) == 1:
            st.markdown(f"**Step {current}** — the only step of this run.")
        elif evenly_spaced(steps):
            st.slider(
                "Step",
                min_value=int(steps[0]),
                max_value=int(steps[-1]),
                step=int(steps[1] - steps[0]),
                **state.bind("step", _step_changed),
            )
        else:
            st.selectbox("Step (irregular spacing)", list(steps), **state.bind("step", _step_changed))
    return int(state.get("step"))
