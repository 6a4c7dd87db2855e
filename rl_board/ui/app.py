"""Entry point: page config, the sidebar, and the router (which only lists pages).

Each page declares its menu title, icon and URL parameters in its own file
(``PAGE = PageSpec(...)`` in ``views/<name>.py``); the router reads those
declarations (``state.SPECS``) in the order of ``views.PAGES``. Adding a page
is a file in ``views/`` and its name on one line of ``PAGES``
(``views/__init__.py``). A page opens at ``/<name>``. Page files live in
``views/``, never ``pages/`` (Streamlit's legacy multipage mode would take over).
"""

from __future__ import annotations

import logging

import streamlit as st

from rl_board.ui import state
from rl_board.ui.boundary import boundary
from rl_board.ui.components import sidebar

PAGE_FILES = {name: f"views/{name}.py" for name in state.SPECS}  # page name -> its file (relative to app.py)


def pages() -> list[st.Page]:
    """Every page of the app, in menu order; the first opens by default."""
    return [
        st.Page(PAGE_FILES[name], title=spec.title, icon=spec.icon, default=k == 0)
        for k, (name, spec) in enumerate(state.SPECS.items())
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
    if not any(h.get_name() == "rl_board" for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.set_name("rl_board")
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
