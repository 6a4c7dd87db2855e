"""Model text in a bordered box: the sample page's prompt, response, reference and messages; answers to read.

Plain text by default; with ``rendered``, as Markdown made safe (``safe_markdown``: formatting, LaTeX and
code drawn, no HTML, link or image). An answer (``answer_block``) shows its final line (and last \\boxed{})
first, folds its ``<think>`` part and reads at its whole height; only a very long one scrolls, in a box most
of a screen high.

Why not ``st.code``: it loads the code viewer's syntax highlighter (1.5 MB of script) even with
``language=None``; in a new tab on a sample link, evaluating it took 0.2-0.4 s of the browser's
main thread, before any of the page's text could show. ``st.text`` is drawn by Streamlit's main
script and shows the text as text too (never Markdown or HTML), whitespace and line breaks kept.
"""

from __future__ import annotations

import textwrap

import streamlit as st

from rl_board.ui.reading import final_answer, split_thinking
from rl_board.ui.safe_markdown import safe_markdown
from rl_board.ui.text import escape_markdown, visible_bidi

SHORT_CHARS = 400
SHORT_LINES = 12
LONG_CHARS = 20_000  # an answer up to this long reads whole, without a box of its own to scroll
READ_HEIGHT = 760  # px: a longer one scrolls in a box most of a 1000-px-high window high (or shows all)
EDGE = "\u200b"  # a zero-width space: neither whitespace to strip nor a common indent
RENDERED_HELP = (
    "Show model text as Markdown: headings, lists, tables, LaTeX and code. Links, images and HTML stay "
    "plain text (nothing is fetched or run). Off: the text exactly as logged."
)


def verbatim(text: str) -> str:
    """``text`` as ``st.text`` will show it unchanged: st.text dedents and strips its body, so a text with
    leading or trailing whitespace or a common indent (a response's first token is often a space) gets a
    zero-width space at each end."""
    return text if textwrap.dedent(text).strip() == text else f"{EDGE}{text}{EDGE}"


def is_short(text: str) -> bool:
    """Short enough to show whole; longer text scrolls inside a box of fixed height."""
    return len(text) < SHORT_CHARS and text.count("\n") < SHORT_LINES


def text_block(text: str, *, height: int | None, rendered: bool = False) -> None:
    """``text`` in a box (its whole height when short or ``height`` is None, else ``height`` pixels that
    scroll): plain text with bidi controls shown, or with ``rendered`` as safe Markdown."""
    with st.container(border=True, height="content" if height is None or is_short(text) else height):
        if rendered:
            st.markdown(safe_markdown(text) or " ", anchors=False)
        else:
            st.text(verbatim(visible_bidi(text)) or " ")


def _one_line(text: str, rendered: bool, math: bool = False) -> None:
    if rendered:
        st.markdown(safe_markdown(f"${text}$" if math else text), width="content", anchors=False)
    else:
        st.text(verbatim(visible_bidi(text)), width="content")


def _final(text: str, rendered: bool, key: str) -> None:
    """What the answer ends with, in a box at its top: its last line, and its last \\boxed{} (as LaTeX in
    the rendered view). Not for an answer of one line: that line is right below."""
    final = final_answer(text)
    if final is None or final.line == text.strip():
        return
    with st.container(border=True, key=f"{key}_final", horizontal=True, vertical_alignment="center"):
        st.markdown(":material/flag: **Final line**", width="content")
        _one_line(" ".join(final.line.splitlines()), rendered)
        if final.boxed is not None:
            st.markdown("· **last \\\\boxed\\{\\}**", width="content")
            _one_line(" ".join(final.boxed.splitlines()), rendered, math=True)


def answer_block(text: str, *, rendered: bool, key: str, final: bool = True) -> None:
    """A model's answer to read: its final line first (``final``), a leading ``<think>`` part folded (drawn
    when opened: a runaway one can be long), then the rest at its whole height (longer than ``LONG_CHARS``:
    in a box ``READ_HEIGHT`` high, or all of it on request). ``key`` names its widgets and boxes
    (``{key}_final``, ``{key}_thinking``, ``{key}_all``)."""
    parts = split_thinking(text)
    if parts.thinking is not None and not parts.closed:
        st.caption(
            f"All of it is thinking: its {escape_markdown('<think>')} never closes, so no answer follows "
            f"({len(parts.thinking)} characters)."
        )
        _long_text(text, rendered, key)
        return
    if final:
        _final(parts.answer, rendered, key)
    if parts.thinking is not None:
        fold = st.expander(
            f"Thinking · {len(parts.thinking)} characters",
            icon=":material/psychology:",
            key=f"{key}_thinking",
            on_change="rerun",
        )
        if fold.open:
            with fold:
                _long_text(parts.thinking, rendered, f"{key}_thinking")
        if not parts.answer.strip():
            st.caption("No answer after the thinking.")
            return
    _long_text(parts.answer, rendered, key)


def _long_text(text: str, rendered: bool, key: str) -> None:
    whole = len(text) <= LONG_CHARS or st.toggle(
        f"Show all {len(text)} characters",
        key=f"{key}_all",
        help=f"Longer than {LONG_CHARS} characters: shown in a box that scrolls",
    )
    text_block(text, height=None if whole else READ_HEIGHT, rendered=rendered)
