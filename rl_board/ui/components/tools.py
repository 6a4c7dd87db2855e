"""The Tools page of an agent run: every tool's calls, error rate and the reward of the trajectories that
called it, over training; a tool's argument examples, each opening its sample at the turn that made the
call."""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from rl_board.api import RolloutStore
from rl_board.formats import fields as F
from rl_board.ui import cached, state, svg_figures
from rl_board.ui.components import chart
from rl_board.ui.components.page import missing
from rl_board.ui.components.selection import clicked_point, selected_item
from rl_board.ui.context import Context
from rl_board.ui.text import display_name, visible_bidi_column
from rl_board.ui.trajectory_charts import tool_figure

EXAMPLES = 6
CELL = 300
MAX_LINES = 8  # tools drawn in the charts (the most called)
_TOOLS_KEY, _EXAMPLES_KEY = "tools_table", "tool_examples"
_TOOL_ROWS, _EXAMPLE_ROWS = "_tool_rows", "_tool_example_rows"


def per_tool(tools: pd.DataFrame) -> pd.DataFrame:
    """The whole run per tool: calls, errors, error rate, trajectories that called it (summed over steps), the
    mean reward of those trajectories, and the steps it was called in; the most called first."""
    grouped = tools.groupby("tool", sort=False)
    weighted = (tools["reward_mean"] * tools["trajectories"]).groupby(tools["tool"]).sum(min_count=1)
    out = pd.DataFrame(
        {
            "calls": grouped["calls"].sum(),
            "errors": grouped["errors"].sum(),
            "trajectories": grouped["trajectories"].sum(),
            "first step": grouped["step"].min(),
            "last step": grouped["step"].max(),
        }
    )
    out["error rate"] = (out["errors"] / out["calls"]).where(out["calls"] > 0)
    out["mean reward"] = weighted / out["trajectories"].where(out["trajectories"] > 0)
    out = out.reset_index().sort_values(["calls", "tool"], ascending=[False, True], kind="stable")
    return out[
        ["tool", "calls", "errors", "error rate", "trajectories", "mean reward", "first step", "last step"]
    ]


def examples(calls: pd.DataFrame, tool: str, n: int = EXAMPLES) -> pd.DataFrame:
    """A few calls of ``tool``: a failed call when there is one, then distinct arguments, then any others."""
    mine = calls[calls["name"].fillna("") == tool]
    distinct = mine.drop_duplicates("arguments")
    failed = mine[mine["error"].fillna(False).astype(bool)].head(1)
    return pd.concat([failed, distinct, mine]).drop_duplicates(["step", "sample", "turn", "call"]).head(n)


def _choose_tool() -> None:
    tool = selected_item(_TOOLS_KEY, _TOOL_ROWS)
    if tool is not None:
        state.put("tool", tool)


def _open_example() -> None:
    target = selected_item(_EXAMPLES_KEY, _EXAMPLE_ROWS)
    if target is not None:
        step, sample, turn = target
        state.put_many(step=int(step), sample=int(sample), turn=int(turn))
        state.request_page("sample")


def _open_step(key: str, names: list[str]) -> None:
    """A chart point opens its step in the step browser, filtered to the trajectories that called its tool."""
    point = clicked_point(key)
    if point is None:
        return
    step, curve = int(round(point[0])), point[1]
    state.put_many(step=step, sample=None, table_page=1, tools=names[curve] if curve < len(names) else "")
    state.request_page("steps")


def _table(summary: pd.DataFrame) -> None:
    shown = summary.assign(tool=visible_bidi_column(summary["tool"]))
    st.session_state[_TOOL_ROWS] = summary["tool"].tolist()
    st.dataframe(
        shown,
        hide_index=True,
        key=_TOOLS_KEY,
        on_select=_choose_tool,
        selection_mode="single-row",
        column_config={
            "error rate": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1),
            "mean reward": st.column_config.NumberColumn(format="%.4f"),
        },
    )
    st.caption(
        "Summed over every step. Mean reward: of the trajectories that called the tool. Click a row to see "
        "that tool's calls below."
    )


def _charts(tools: pd.DataFrame, names: list[str]) -> None:
    drawn = names[:MAX_LINES]
    for metrics in (("calls", "error_rate"), ("reward_mean", "trajectories")):
        for col, metric in zip(st.columns(2), metrics, strict=True):
            with col:
                key = f"chart_tool_{metric}"
                chart.show(
                    key,
                    figure=partial(tool_figure, tools, metric, drawn),
                    svg=partial(svg_figures.tool_chart, tools, metric, drawn),
                    on_select=partial(_open_step, key, drawn),
                )
    more = f" The {MAX_LINES} most called of {len(names)} tools are drawn." if len(names) > MAX_LINES else ""
    st.caption(
        chart.click_hint(
            "open its step in the step browser, filtered to the trajectories that called that tool"
        )
        + more
    )


def _examples(ctx: Context, store: RolloutStore, tool: str, column: DeltaGenerator) -> None:
    steps = store.steps
    if state.get("step") not in steps:
        state.put("step", steps[-1])
    with column:
        st.selectbox("Examples from step", steps, **state.bind("step"))
    step = int(state.get("step"))
    calls = cached.ask(store, "tool_calls", step=step)
    picked = examples(calls, tool)
    if picked.empty:
        st.info(f"{display_name(tool)} was not called in step {step}.")
        return
    st.session_state[_EXAMPLE_ROWS] = list(zip(picked["step"], picked["sample"], picked["turn"], strict=True))
    frame = pd.DataFrame(
        {
            "step": picked["step"],
            "sample": picked["sample"],
            "turn": picked["turn"],
            "arguments": visible_bidi_column(picked["arguments"].fillna("").str.slice(0, CELL)),
            "error": picked["error"],
            "result": visible_bidi_column(picked["result"].fillna("").str.slice(0, CELL)),
        }
    )
    st.dataframe(
        frame,
        hide_index=True,
        key=_EXAMPLES_KEY,
        on_select=_open_example,
        selection_mode=["single-row", "single-cell"],
        column_config={
            "arguments": st.column_config.TextColumn(width="large"),
            "result": st.column_config.TextColumn(width="large"),
        },
    )
    n = int((calls["name"].fillna("") == tool).sum())
    st.caption(
        f"{len(picked)} of the {n} calls of this tool in step {step} (a failed call first when there is one, "
        "then different arguments). Click a row to open the sample at the turn that made the call."
    )


def render_tools(ctx: Context) -> None:
    store = ctx.run_store
    if not store.multi_turn or not store.has("tools"):
        missing("No tools", f"no trajectory of this run made a tool call ({F.label('n_tool_calls')}: 0).")
        return
    tools = cached.ask(store, "tools_summary")
    summary = per_tool(tools)
    names = summary["tool"].tolist()
    _table(summary)
    _charts(tools, names)
    if state.get("tool") not in names:
        state.put("tool", names[0])
    st.subheader("Calls of one tool")
    left, right = st.columns(2)
    left.selectbox("Tool", names, format_func=display_name, **state.bind("tool"))
    _examples(ctx, store, str(state.get("tool")), right)
