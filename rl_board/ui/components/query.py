"""The SQL page's parts: the query box, example queries, the views' columns, and the result table."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rl_board import api
from rl_board.api import QueryError, QueryResult, RolloutStore
from rl_board.ui import state
from rl_board.ui.components.sample_table import open_sample
from rl_board.ui.components.selection import selected_item
from rl_board.ui.text import display_name, escape_markdown, visible_bidi, visible_bidi_column

TABLE_KEY = "sql_table"
CELL_CHARS = 1000
_ROWS_KEY = "_sql_rows"
_RESULT_KEY = "_sql_result"
_RAN = "sqlran"  # the text last run (a view field, not in the URL: a link runs its own query)
_BOX = "w.sql"


def render_query(store: RolloutStore, run: str) -> None:
    """The whole page body for one run."""
    _examples()
    st.text_area(
        "SQL (DuckDB)", height=160, placeholder="SELECT * FROM samples LIMIT 10", **state.bind("sql")
    )
    left, right = st.columns([1, 6], vertical_alignment="center")
    left.button("Run", key="sql_run", type="primary", icon=":material/play_arrow:", on_click=_run_box)
    right.caption(
        f"One reading statement over **samples** (one row per sample) and **steps** (one row per "
        f"step). Read-only: no files, network or extensions; stopped after "
        f"{api.QUERY_TIMEOUT:g} s; at most {api.QUERY_MAX_ROWS:,} rows."
    )
    _schema(store)
    ran = state.get(_RAN)
    if ran is None:  # first visit (or a shared link): show what the box holds
        ran = state.get("sql") or ""
        state.put(_RAN, ran)
    if ran != (state.get("sql") or ""):
        st.caption("The query was edited: press **Run** to see its result.")
    if not ran.strip():
        st.info("Write a query (or click an example above) and press **Run**.")
        return
    outcome = _result(store, run, ran)
    if isinstance(outcome, QueryError):
        st.error(escape_markdown(str(outcome)), icon=":material/error:")
        if outcome.detail != str(outcome):
            st.code(visible_bidi(outcome.detail), language=None)
        return
    _result_table(outcome)


def _run_box() -> None:
    text = st.session_state.get(_BOX, state.get("sql")) or ""
    state.put_many(sql=text, **{_RAN: text})


def _run_example(sql: str) -> None:
    state.put_many(sql=sql, **{_RAN: sql})


def _examples() -> None:
    st.caption("Examples (click one to run it):")
    cols = st.columns(len(api.QUERY_EXAMPLES))
    for k, (col, example) in enumerate(zip(cols, api.QUERY_EXAMPLES, strict=True)):
        col.button(
            example.title,
            key=f"sql_example_{k}",
            on_click=_run_example,
            args=(example.sql,),
            width="stretch",
            help="Puts this query in the box and runs it",
        )


@st.cache_data(show_spinner=False, max_entries=32)
def _schema_frames(path: str, signature: str, _store: RolloutStore) -> dict[str, pd.DataFrame]:
    return api.query_schema(_store)


def _schema(store: RolloutStore) -> None:
    with st.expander("Tables and columns", icon=":material/table_chart:"):
        frames = _schema_frames(str(store.run_dir), store.signature, store)
        left, right = st.columns(2)
        for col, (view, what) in zip(
            (left, right),
            (("samples", "one row per sample (token arrays as lists)"), ("steps", "one row per step")),
            strict=True,
        ):
            frame = frames[view].copy()
            frame["column"] = visible_bidi_column(frame["column"])
            col.markdown(f"**{view}** — {what}")
            col.dataframe(
                frame,
                hide_index=True,
                key=f"sql_schema_{view}",
                height=300,
                column_config={"help": st.column_config.TextColumn("what it holds", width="large")},
            )
        st.markdown(
            "**KL macros** — r is a log-ratio logp − ref_logp (e.g. an item of `token_log_ratio`); "
            "on token arrays: `list_transform(token_log_ratio, lambda r: kl_k3(r))`"
        )
        st.dataframe(
            pd.DataFrame({"macro": list(api.QUERY_MACROS), "computes": list(api.QUERY_MACROS.values())}),
            hide_index=True,
            key="sql_schema_macros",
        )


def _result(store: RolloutStore, run: str, sql: str) -> QueryResult | QueryError:
    """The query's outcome, kept per (run, state of the run, text) so reruns (a click, a widget) do not re-run
    it."""
    key = (run, store.signature, sql)
    known = st.session_state.get(_RESULT_KEY)
    if known is not None and known[0] == key:
        return known[1]
    with st.spinner("Running the query…"):
        try:
            outcome: QueryResult | QueryError = api.run_query(store, sql)
        except QueryError as exc:
            outcome = exc
    st.session_state[_RESULT_KEY] = (key, outcome)
    return outcome


def _result_table(result: QueryResult) -> None:
    frame = result.frame
    rows = len(frame)
    note = f"**{rows:,}** row{'' if rows == 1 else 's'} in {result.seconds:.2f} s"
    if result.capped:
        st.warning(
            f"Only the first {result.max_rows:,} rows are shown: the result has more. "
            "Add a LIMIT or narrow the WHERE clause.",
            icon=":material/content_cut:",
        )
    st.markdown(note)
    if frame.columns.empty:
        return
    targets = result.targets
    shown = display_frame(frame)
    if targets is None:
        st.dataframe(shown, hide_index=True, key=TABLE_KEY, height="auto" if rows <= 12 else 460)
        st.caption("Add `step` and `sample` columns to the SELECT to open samples from this table.")
        return
    st.session_state[_ROWS_KEY] = targets
    st.dataframe(
        shown,
        hide_index=True,
        key=TABLE_KEY,
        on_select=_open_selected,
        selection_mode=["single-row", "single-cell"],
        height="auto" if rows <= 12 else 460,
    )
    st.caption("Click any cell of a row to open that sample.")


def _open_selected() -> None:
    target = selected_item(TABLE_KEY, _ROWS_KEY)
    if target is not None:
        open_sample(*target)


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Result cells as the table shows them: names unique and visible, text clipped, lists and objects as
    text."""
    out = pd.DataFrame(index=frame.index)
    seen: set[str] = set()
    for k in range(frame.shape[1]):
        name = display_name(frame.columns[k])
        while name in seen:
            name += "'"
        seen.add(name)
        column = frame.iloc[:, k]
        if (
            pd.api.types.is_numeric_dtype(column.dtype)
            or pd.api.types.is_bool_dtype(column.dtype)
            or pd.api.types.is_datetime64_any_dtype(column.dtype)
        ):
            out[name] = column
        else:
            out[name] = visible_bidi_column(column.map(_text, na_action="ignore").astype(object))
    return out


def _text(value: object) -> str:
    if hasattr(value, "tolist"):
        value = value.tolist()
    text = str(value)
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS] + "…"
