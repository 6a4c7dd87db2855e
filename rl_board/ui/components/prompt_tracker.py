"""Prompts across training: the run-wide lists (never solved, newly failing, ...) and one prompt's history."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rl_board.api import RolloutStore
from rl_board.formats import fields as F
from rl_board.ui import cached, state, svg_figures
from rl_board.ui.components import chart
from rl_board.ui.components.selection import selected_item
from rl_board.ui.run_charts import history_figure
from rl_board.ui.text import TextDisplay, shown

TABLE_KEY = "prompts_table"
_ROWS_KEY = "_prompt_ids"
ALL = "all"
STATUSES = ("never solved", "newly failing", "mixed", "learned", "always solved")


def _choose() -> None:
    pid = selected_item(TABLE_KEY, _ROWS_KEY)
    if pid is not None:
        state.put("prompt_id", pid)


def render_prompts(store: RolloutStore, display: TextDisplay, *, kl: F.KLEstimator | None = None) -> None:
    table = cached.ask(store, "prompts")
    if table.empty:
        st.info("No prompts with rewards in this run.")
        return
    counts = table["status"].value_counts()
    cols = st.columns(len(STATUSES))
    for col, status in zip(cols, STATUSES, strict=True):
        col.metric(status.capitalize(), int(counts.get(status, 0)), border=True)
    st.caption(
        "Per step a prompt is solved when one of its samples reaches the run's highest reward. "
        "Newly failing: solved before, not at its last step. Learned: unsolved at first, solved since."
    )
    status = st.segmented_control("Show", [ALL, *STATUSES], **state.bind("prompt_status", default=ALL)) or ALL
    rows = table if status == ALL else table[table["status"] == status]
    st.session_state[_ROWS_KEY] = rows["id"].tolist()
    frame = pd.DataFrame(
        {
            "prompt": [shown(p, display).text[:300] for p in rows["prompt"]],
            "status": rows["status"],
            "steps": rows["steps"],
            "samples": rows["samples"],
            "mean reward": rows["reward_mean"],
            "first solved": rows["first_solved"],
            "solved share": rows["solved_share"],
            "regressions": rows["regressions"],
        }
    )
    st.dataframe(
        frame,
        hide_index=True,
        key=TABLE_KEY,
        on_select=_choose,
        selection_mode="single-row",
        column_config={
            "prompt": st.column_config.TextColumn(width="large"),
            "mean reward": st.column_config.NumberColumn(format="%.4g"),
            "solved share": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="percent"),
        },
        height="auto" if len(frame) <= 12 else 420,
    )
    st.caption("Click a row to follow that prompt down the steps.")
    chosen = table[table["id"] == state.get("prompt_id")]
    if len(chosen):
        render_history(store, chosen.iloc[0], display, kl or F.kl_estimator())
    elif state.get("prompt_id"):
        st.warning("That prompt is not in this run.")


def render_history(store: RolloutStore, row: pd.Series, display: TextDisplay, kl: F.KLEstimator) -> None:
    st.markdown(
        f"#### Prompt history · {row['status']} · first solved at step "
        f"{'—' if pd.isna(row['first_solved']) else int(row['first_solved'])}"
    )
    st.code(shown(row["prompt"], display).text or " ", language=None, wrap_lines=True, height="content")
    history = cached.ask(store, "prompt_history", prompt=row["prompt"], kl=kl)
    chart.show(
        "chart_prompt_history",
        figure=lambda: history_figure(history),
        svg=lambda: svg_figures.history_chart(history),
    )
    st.dataframe(
        history,
        hide_index=True,
        height="auto" if len(history) <= 12 else 320,
        column_config={name: F.label(name) for name in history.columns if F.sample(name)},
    )
