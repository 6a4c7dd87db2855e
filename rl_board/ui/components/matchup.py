"""Two runs, or two steps of one run, on the prompts they share: who scored better, and how the answers
differ."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from rl_board.api import RolloutStore
from rl_board.ui import cached, state
from rl_board.ui.components.selection import selected_item, selected_row
from rl_board.ui.context import Context
from rl_board.ui.diff import diff_html
from rl_board.ui.text import TextDisplay, display_name, escape_markdown, shown

TABLE_KEY = "matchup_table"
_ROWS_KEY = "_matchup_rows"
ALL_STEPS = "all steps"


def _step_choice(label: str, steps: list[int], key: str) -> int | None:
    options = [ALL_STEPS, *steps]
    wanted = state.get(key)
    if isinstance(wanted, str) and wanted.lstrip("-").isdigit():  # from a link: steps arrive as text
        state.put(key, int(wanted))
    if state.get(key) not in options:
        state.put(key, steps[-1] if steps else ALL_STEPS)
    chosen = st.selectbox(label, options, **state.bind(key))
    return None if chosen == ALL_STEPS else int(chosen)


def _other_run(ctx: Context) -> tuple[str, RolloutStore] | None:
    runs = cached.runs_under(str(ctx.root), cached.served())
    names = list(runs["run"])
    if state.get("versus") not in names:
        state.put("versus", ctx.run if ctx.run in names else (names[0] if names else None))
    name = st.selectbox(
        "Against run",
        names,
        format_func=display_name,
        **state.bind("versus"),
        help="The same run compares two of its steps",
    )
    if name is None:
        return None
    path = Path(runs.loc[runs["run"] == name, "path"].iloc[0])
    return name, cached.store_for(path)


def _pick() -> None:
    if selected_item(TABLE_KEY, _ROWS_KEY) is not None:
        state.put("matchup_row", selected_row(TABLE_KEY))


def render_matchup(ctx: Context) -> None:
    left, right = st.columns(2)
    with left:
        st.markdown(f"**A** · {escape_markdown(ctx.run or '')}")
        step_a = _step_choice("Step of A", ctx.run_store.steps, "step_a")
    with right:
        other = _other_run(ctx)
        if other is None:
            return
        name_b, store_b = other
        step_b = _step_choice("Step of B", store_b.steps, "step_b")
    both = ctx.run_store.versus(store_b, step=step_a, other_step=step_b)
    if both.empty:
        st.info("These two selections share no prompt (prompts are matched by their exact text).")
        return
    st.caption(
        f"{len(both)} prompts in common · mean reward A {both['reward_a'].mean():.4g}, "
        f"B {both['reward_b'].mean():.4g} · gain = B − A, largest first"
    )
    st.session_state[_ROWS_KEY] = both["prompt"].tolist()
    display = ctx.settings.text
    frame = pd.DataFrame(
        {
            "prompt": [shown(p, display).text[:300] for p in both["prompt"]],
            "reward A": both["reward_a"],
            "reward B": both["reward_b"],
            "gain": both["gain"],
            "samples A": both["samples_a"],
            "samples B": both["samples_b"],
        }
    )
    st.dataframe(
        frame,
        hide_index=True,
        key=TABLE_KEY,
        on_select=_pick,
        selection_mode="single-row",
        column_config={
            c: st.column_config.NumberColumn(format="%.4g") for c in ("reward A", "reward B", "gain")
        },
        height="auto" if len(frame) <= 12 else 420,
    )
    row = state.get("matchup_row")
    if isinstance(row, int) and 0 <= row < len(both):
        _answers(ctx.run_store, store_b, both.iloc[row], display)


def _answers(store_a: RolloutStore, store_b: RolloutStore, row: pd.Series, display: TextDisplay) -> None:
    texts = []
    for store, side in ((store_a, "a"), (store_b, "b")):
        detail = store.sample(step=int(row[f"best_step_{side}"]), index=int(row[f"best_sample_{side}"]))
        texts.append((detail, shown(detail.fields.get("response") or "", display).text))
    st.markdown("#### Best answer of each side")
    cols = st.columns(2)
    for col, side, (detail, text) in zip(cols, ("A", "B"), texts, strict=True):
        reward = detail.fields.get("reward")
        col.markdown(
            f"**{side}** · step {detail.step} · sample {detail.index} · reward "
            f"{'—' if reward is None else f'{reward:.4g}'}"
        )
        col.code(text or " ", language=None, wrap_lines=True, height=320)
    st.markdown("**Word diff** (struck: only in A · underlined: only in B)")
    st.html(diff_html(texts[0][1], texts[1][1]))
