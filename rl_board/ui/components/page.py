"""What every page does first: get the context, say what is missing, draw the header."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rl_board.data.text import escape_markdown
from rl_board.ui import state
from rl_board.ui.context import Context


def current_run(title: str) -> Context | None:
    """The context when a run with samples is chosen; otherwise explain and return None."""
    ctx: Context | None = state.context()
    st.title(title)
    if ctx is None or ctx.root is None:
        st.info("Choose a logs root inside the served folders in the sidebar.")
        return None
    if ctx.store is None:
        st.info("Choose a run in the sidebar (**Run**).")
        runs_table(ctx)
        return None
    st.caption(f"Run **{escape_markdown(ctx.run or '')}** · {ctx.store.num_samples} samples · "
               f"{len(ctx.store.steps)} steps")
    if ctx.store.num_samples == 0:
        files = len(ctx.store.report.files)
        st.info(f"This run has no complete samples yet ({files} file(s) read). "
                "Lines appear here as soon as the trainer writes them; use ↻ in the sidebar.")
        return None
    return ctx


def runs_table(ctx: Context) -> None:
    """The runs under the logs root, so a first-time user sees what there is to open."""
    runs = ctx.runs
    if not isinstance(runs, pd.DataFrame) or runs.empty:
        return
    shown = runs[["run", "samples", "steps", "files", "bytes", "modified"]].copy()
    shown["MB"] = (shown.pop("bytes") / 1e6).round(2)
    shown["modified"] = pd.to_datetime(shown["modified"], unit="s", errors="coerce")
    st.dataframe(shown, hide_index=True, column_config={
        "samples": st.column_config.NumberColumn(help="known once the run has been opened"),
        "modified": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm"),
    })


def missing(what: str, why: str) -> None:
    """Say plainly that a part of the page does not apply to this run."""
    st.info(f"**{what}** — {why}", icon=":material/info:")
