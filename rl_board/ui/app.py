"""Entry point: page config, the sidebar, and the router (which only declares pages).

Adding a page is a file in ``views/`` and one line in ``PAGES`` (key, file,
title, icon). Page files live in ``views/``, never ``pages/`` (Streamlit's
legacy multipage mode would take over).
"""

from __future__ import annotations

import logging

import streamlit as st

from rl_board.ui import state
from rl_board.ui.boundary import boundary
from rl_board.ui.components import sidebar

# (key, file, menu title, icon); the first is the default page. One line per page.
PAGES = (
    ("overview", "views/overview.py", "Overview", ":material/show_chart:"),
    ("steps", "views/steps.py", "Step browser", ":material/table_rows:"),
    ("sample", "views/sample.py", "Sample", ":material/article:"),
    ("groups", "views/groups.py", "Groups", ":material/workspaces:"),
    ("prompts", "views/prompts.py", "Prompts", ":material/history:"),
    ("matchup", "views/matchup.py", "Same prompts", ":material/compare_arrows:"),
    ("tools", "views/tools.py", "Tools", ":material/build:"),
    ("patterns", "views/patterns.py", "Patterns", ":material/pattern:"),
    ("metrics", "views/metrics.py", "Metrics", ":material/monitoring:"),
    ("health", "views/health.py", "Health", ":material/health_and_safety:"),
    ("query", "views/query.py", "SQL", ":material/database:"),
)
PAGE_FILES = {key: file for key, file, _, _ in PAGES}


def pages() -> list[st.Page]:
    """Every page of the app, in menu order."""
    return [
        st.Page(file, title=title, icon=icon, default=k == 0)
        for k, (_, file, title, icon) in enumerate(PAGES)
    ]


def show_notices() -> None:
    """Problems with the link that opened this session, shown until dismissed."""
    messages = state.notices()
    for message in messages:
        st.warning(message, icon=":material/link_off:")
    if messages:
        st.button("Dismiss", key="dismiss_notices", on_click=state.dismiss_notices)


def configure_logging() -> None:
    """rl-board's log lines (loads, bugs) go to the server's stderr, once per process."""
    logger = logging.getLogger("rl_board")
    if not any(getattr(h, "rl_board", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.rl_board = True
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def main() -> None:
    configure_logging()
    # An emoji favicon is inlined; a ":material/..." one would be fetched from a Google host.
    st.set_page_config(page_title="rl-board", page_icon="📈", layout="wide")
    navigation = st.navigation(pages())
    state.read_url_once()
    goto = state.pop_page_request()  # asked for by a click's callback, before this run began
    if goto in PAGE_FILES:  # switch before drawing anything: the sidebar is drawn once, by the new page's run
        st.switch_page(PAGE_FILES[goto])
    st.session_state.pop("_context", None)
    state.set_context(sidebar.render())
    show_notices()
    with boundary():  # user problems become messages; a bug is said plainly, its traceback logged
        navigation.run()
    state.write_url()


main()
