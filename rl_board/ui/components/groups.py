"""The groups of one step (GRPO: the samples of one prompt): spread, solved share, best against worst."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rl_board.api import RolloutStore
from rl_board.ui import cached, state
from rl_board.ui.components.selection import selected_item
from rl_board.ui.diff import diff_html
from rl_board.ui.text import TextDisplay, escape_markdown, shown

TABLE_KEY = "groups_table"
_ROWS_KEY = "_groups_rows"
PROMPT_CHARS = 300


def _threshold(store: RolloutStore) -> float | None:
    """The reward that counts as solved: the user's, else the run's highest (shown as the placeholder)."""
    best = cached.ask(store, "reward_threshold")
    st.number_input(
        "Solved when the reward is at least",
        value=None,
        format="%.4g",
        placeholder=f"{best:.4g} (the run's highest)" if best is not None else "no rewards",
        help="A sample counts as solved from this reward on; empty = the highest reward of the run",
        **state.bind("threshold"),
    )
    value = state.get("threshold")
    return None if value is None else float(value)


def _open_group() -> None:
    name = selected_item(TABLE_KEY, _ROWS_KEY)
    if name is not None:
        state.put("group", name)


def render_groups(store: RolloutStore, step: int, display: TextDisplay) -> None:
    threshold = _threshold(store)
    table = cached.ask(store, "groups", step=step, threshold=threshold)
    if table.empty:
        st.info("No groups: no sample of this step has a reward.")
        return
    _summary(table)
    only_flat = st.toggle("Only groups with zero reward variance", **state.bind("zero_variance"))
    shown_rows = table[table["zero_variance"]] if only_flat else table
    st.session_state[_ROWS_KEY] = shown_rows["group"].tolist()
    frame = pd.DataFrame(
        {
            "prompt": [
                shown(p, display).text[:PROMPT_CHARS] if isinstance(p, str) else ""
                for p in shown_rows["prompt"]
            ],
            "samples": shown_rows["samples"],
            "reward mean": shown_rows["reward_mean"],
            "reward std": shown_rows["reward_std"],
            "solved": shown_rows["solved"],
            "zero variance": shown_rows["zero_variance"],
            "advantage std": shown_rows["advantage_std"],
            "group": shown_rows["group"],
        }
    )
    st.dataframe(
        frame,
        hide_index=True,
        key=TABLE_KEY,
        on_select=_open_group,
        selection_mode="single-row",
        column_config={
            "solved": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="percent"),
            "prompt": st.column_config.TextColumn(width="large"),
            "reward mean": st.column_config.NumberColumn(format="%.4g"),
            "reward std": st.column_config.NumberColumn(format="%.4g"),
            "advantage std": st.column_config.NumberColumn(format="%.4g"),
        },
        height="auto" if len(frame) <= 12 else 420,
    )
    st.caption("Click a row to see the group's best and worst answers side by side; click a header to sort.")
    chosen = state.get("group")
    if chosen in set(table["group"]):
        _best_and_worst(store, step, table[table["group"] == chosen].iloc[0], display)


def _summary(table: pd.DataFrame) -> None:
    a, b, c, d = st.columns(4)
    a.metric("Groups", len(table), border=True)
    b.metric("Samples per group", f"{table['samples'].mean():.3g}", border=True)
    c.metric(
        "Solved (mean share)",
        f"{table['solved'].mean():.0%}",
        border=True,
        help="Per group, the share of samples at or above the threshold; averaged over groups",
    )
    d.metric(
        "Zero-variance groups",
        f"{table['zero_variance'].mean():.0%}",
        border=True,
        help="Groups whose samples all got the same reward: their advantages are 0, nothing is learned",
    )


def _best_and_worst(store: RolloutStore, step: int, group: pd.Series, display: TextDisplay) -> None:
    st.markdown(f"#### Group {escape_markdown(str(group['group'])[:80])} · {int(group['samples'])} samples")
    left, right = st.columns(2)
    texts = []
    for column, label, index in (
        (left, "Best", group["best_sample"]),
        (right, "Worst", group["worst_sample"]),
    ):
        with column:
            if pd.isna(index):
                st.caption(f"{label}: no scored sample")
                continue
            detail = store.sample(step=step, index=int(index))
            reward = detail.fields.get("reward")
            st.markdown(
                f"**{label}** · sample {int(index)} · reward {reward if reward is None else f'{reward:.4g}'}"
            )
            text = shown(detail.fields.get("response") or "", display).text
            texts.append(text)
            st.code(text or " ", language=None, wrap_lines=True, height=360)
            st.button(
                f"Open sample {int(index)}",
                key=f"group_open_{label}",
                on_click=_open_sample,
                args=(step, int(index)),
                icon=":material/article:",
            )
    _diff(texts)


def _diff(texts: list[str]) -> None:
    if len(texts) == 2:
        st.markdown("**Word diff** (struck: only in the best · underlined: only in the worst)")
        st.html(diff_html(texts[0], texts[1]))


def _open_sample(step: int, index: int) -> None:
    state.put_many(step=step, sample=index)
    state.request_page("sample")
