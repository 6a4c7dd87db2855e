"""Entry point: page config, sidebar, and the page router."""

from __future__ import annotations

import streamlit as st

from rl_board.data.paths import served_roots
from rl_board.errors import RLBoardError
from rl_board.ui import cached


def main() -> None:
    st.set_page_config(page_title="rl-board", page_icon="📈", layout="wide")
    roots = served_roots()
    with st.sidebar:
        st.title("rl-board")
        root = st.selectbox("Logs root", [str(r) for r in roots], key="root")
    try:
        runs = cached.runs_under(root, cached.cache_dir())
    except RLBoardError as exc:
        st.error(str(exc))
        return
    if runs.empty:
        st.info(f"No rollout runs (folders holding *.jsonl files) under {root}.")
        return
    run = st.sidebar.selectbox("Run", runs["run"].tolist(), key="run")
    store = cached.store_for(runs.set_index("run").loc[run, "path"])
    st.header(run)
    st.caption(f"{store.num_samples} samples · {len(store.steps)} steps · {len(store.report.files)} files")
    st.dataframe(store.step_summary(), hide_index=True)


main()
