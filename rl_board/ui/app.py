"""Entry point: page config, the sidebar, and the router (which only declares pages).

Adding a page is one line in ``PAGES`` (e.g. ``st.Page("views/metrics.py",
title="Metrics", icon=":material/monitoring:")``). Page files live in
``views/``, never ``pages/`` (Streamlit's legacy mode would take over).
"""

from __future__ import annotations

import logging

import streamlit as st

from rl_board.data.text import escape_markdown
from rl_board.errors import RLBoardError
from rl_board.ui import state
from rl_board.ui.components import sidebar

_LOG = logging.getLogger("rl_board.ui")
BUG_MESSAGE = ("Something went wrong while drawing this page (a bug in rl-board, not in your logs). "
               "The details are in the server's log; other pages still work.")
PAGE_FILES = {
    "overview": "views/overview.py",
    "steps": "views/steps.py",
    "sample": "views/sample.py",
    "metrics": "views/metrics.py",
    "health": "views/health.py",
}


def pages() -> list[st.Page]:
    """Every page of the app, in menu order (one line per page)."""
    return [
        st.Page(PAGE_FILES["overview"], title="Overview", icon=":material/show_chart:", default=True),
        st.Page(PAGE_FILES["steps"], title="Step browser", icon=":material/table_rows:"),
        st.Page(PAGE_FILES["sample"], title="Sample", icon=":material/article:"),
        st.Page(PAGE_FILES["metrics"], title="Metrics", icon=":material/monitoring:"),
        st.Page(PAGE_FILES["health"], title="Health", icon=":material/health_and_safety:"),
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
    st.session_state.pop("_context", None)
    state.set_context(sidebar.render())
    goto = state.pop_page_request()
    if goto in PAGE_FILES:
        st.switch_page(PAGE_FILES[goto])
    show_notices()
    try:
        navigation.run()
    except RLBoardError as exc:  # the page boundary: user problems become messages
        st.error(escape_markdown(str(exc)))
    except Exception:  # a bug: say so plainly, keep the traceback for the server log
        _LOG.exception("page failed")
        st.error(BUG_MESSAGE, icon=":material/bug_report:")
    state.write_url()


main()
