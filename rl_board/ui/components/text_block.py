"""Model text as plain text in a bordered box: the sample page's prompt, response, reference and messages.

Why not ``st.code``: it loads the code viewer's syntax highlighter (1.5 MB of script) even with
``language=None``; in a new tab on a sample link, evaluating it took 0.2-0.4 s of the browser's
main thread, before any of the page's text could show. ``st.text`` is drawn by Streamlit's main
script and shows the text as text too (never Markdown or HTML), whitespace and line breaks kept.
"""

from __future__ import annotations

import textwrap

import streamlit as st

from rl_board.ui.text import visible_bidi

SHORT_CHARS = 400
SHORT_LINES = 12
EDGE = "\u200b"  # a zero-width space: neither whitespace to strip nor a common indent


def verbatim(text: str) -> str:
    """``text`` as ``st.text`` will show it unchanged: st.text dedents and strips its body, so a text with
    leading or trailing whitespace or a common indent (a response's first token is often a space) gets a
    zero-width space at each end."""
    return text if textwrap.dedent(text).strip() == text else f"{EDGE}{text}{EDGE}"


def is_short(text: str) -> bool:
    """Short enough to show whole; longer text scrolls inside a box of fixed height."""
    return len(text) < SHORT_CHARS and text.count("\n") < SHORT_LINES


def text_block(text: str, *, height: int) -> None:
    """``text`` in a box (its whole height when short, else ``height`` pixels that scroll); bidi controls
    shown."""
    with st.container(border=True, height="content" if is_short(text) else height):
        st.text(verbatim(visible_bidi(text)) or " ")
