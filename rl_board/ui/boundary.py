"""The page boundary: user problems become messages, bugs a plain apology (traceback to the server log).

The router wraps every page in it; a fragment (a part of a page that reruns on its own) wraps
itself, since its reruns do not pass through the router.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from rl_board.errors import RLBoardError
from rl_board.ui.text import escape_markdown

_LOG = logging.getLogger("rl_board.ui")
BUG_MESSAGE = (
    "Something went wrong while drawing this page (a bug in rl-board, not in your logs). "
    "The details are in the server's log; other pages still work."
)


@contextmanager
def boundary() -> Iterator[None]:
    """Streamlit's own control flow (rerun, stop, switch page) passes: it is not an ``Exception``."""
    try:
        yield
    except RLBoardError as exc:
        st.error(escape_markdown(str(exc)))
    except Exception:
        _LOG.exception("page failed")
        st.error(BUG_MESSAGE, icon=":material/bug_report:")
