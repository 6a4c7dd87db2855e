"""What every page does first: get the context, say what is missing, draw the header."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from rl_board.api import relative_to_roots
from rl_board.ui import state
from rl_board.ui.components.selection import selected_row
from rl_board.ui.components.skipped import render_skipped
from rl_board.ui.context import Context
from rl_board.ui.text import escape_markdown, visible_bidi_column


def current_run(title: str) -> Context | None:
    """The context when a run with samples is chosen; otherwise explain and return None."""
    ctx: Context | None = state.context()
    st.title(title)
    if ctx is None or ctx.root is None:
        st.info("Choose a logs root inside the served folders in the sidebar.")
        return None
    if ctx.store is None:
        if isinstance(ctx.runs, pd.DataFrame) and ctx.runs.empty:
            st.warning(
                "This logs root holds no rollout run rl-board can read: no folder under it holds "
                "rollout files of a known format (see the list below for what was found instead).",
                icon=":material/search_off:",
            )
            render_skipped(ctx.root, expanded=True)
            st.markdown(GUIDE)
            return None
        st.info("Choose a run in the sidebar (**Run**) or click one in the table below.")
        runs_table(ctx)
        render_skipped(ctx.root)
        st.markdown(GUIDE)
        return None
    st.caption(
        f"Run **{escape_markdown(ctx.run or '')}** · {ctx.store.num_samples} samples · "
        f"{len(ctx.store.steps)} steps"
    )
    if ctx.store.num_samples == 0:
        files = len(ctx.store.report.files)
        st.info(
            f"This run has no complete samples yet ({files} file(s) read). "
            "Lines appear here as soon as the trainer writes them; use ↻ in the sidebar."
        )
        return None
    return ctx


GUIDE = """
**How to read a run**

1. **Overview** — reward, KL and response-length curves per step (mean ± a band of the spread).
   Hover a chart for its values; click a step on it to open that step in the step browser
   (**Interactive charts** on the sidebar adds zoom and pan).
2. **Step browser** — the step's batch: charts, averages, filters and the sample table.
   Sort by *KL (mean)* (descending) to find the samples that drifted most; click a row to open one.
3. **Sample** — the prompt, then the response at full width (ground truth and the reference answer
   beside it when the log has them), and the response's tokens coloured by KL (or any per-token
   metric): hover a token for all its numbers.

Every view is a link: copy the address bar to share exactly what you see.
"""
_RUNS_KEY = "runs_table"


def _open_run_from_table(names: list[str]) -> None:
    row = selected_row(_RUNS_KEY)
    if row is not None and row < len(names):
        state.put_many(run=names[row], step=None, sample=None, table_page=1)


def _contents(row: pd.Series) -> str:
    if pd.isna(row["samples"]):
        return "not opened yet"
    return f"{int(row['samples'])} samples · {int(row['steps'])} steps"


def runs_table(ctx: Context) -> None:
    """The runs under the logs root, so a first-time user sees what there is to open (click one)."""
    runs = ctx.runs
    if not isinstance(runs, pd.DataFrame) or runs.empty:
        return
    names = [relative_to_roots(Path(p), ctx.roots) for p in runs["path"]]
    shown = pd.DataFrame(
        {
            "run": visible_bidi_column(runs["run"]),
            "format": runs["format"],
            "contents": [_contents(r) for _, r in runs.iterrows()],
            "files": runs["files"],
            "MB": (runs["bytes"] / 1e6).round(2),
            "modified": pd.to_datetime(runs["modified"], unit="s", errors="coerce"),
        }
    )
    st.dataframe(
        shown,
        hide_index=True,
        key=_RUNS_KEY,
        on_select=lambda: _open_run_from_table(names),
        selection_mode="single-row",
        column_config={
            "contents": st.column_config.TextColumn(help="known once the run has been opened"),
            "modified": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm"),
        },
    )


def missing(what: str, why: str) -> None:
    """Say plainly that a part of the page does not apply to this run."""
    st.info(f"**{what}** — {why}", icon=":material/info:")
