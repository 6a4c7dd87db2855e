"""Files under the logs root that rl-board does not read, each with the reason: never silence."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rl_board.ui import cached


def render_skipped(root: Path, *, expanded: bool = False) -> int:
    """An expander listing the skipped files (as data, never as markup); returns how many there are."""
    skipped = cached.skipped_under(str(root), cached.served())
    if len(skipped):
        with st.expander(
            f"{len(skipped)} file(s) under this root are not read",
            expanded=expanded,
            icon=":material/visibility_off:",
        ):
            st.dataframe(skipped, hide_index=True)
    return len(skipped)
