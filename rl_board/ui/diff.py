"""A word-level diff of two answers as HTML: every piece of model text escaped, the markup fixed here.

Removed words are struck through on the left answer's colour, added words
underlined on the right's; the rest is plain. Pure (no Streamlit), tested
with hostile text like the token chips.
"""

from __future__ import annotations

import difflib
import html
import re

_WORDS = re.compile(r"\s+|[^\s]+")
_STYLE = "white-space:pre-wrap;font-family:monospace;font-size:0.85rem;line-height:1.5"
_DEL = "background:#ffebe9;color:#82071e;text-decoration:line-through"
_INS = "background:#dafbe1;color:#116329;text-decoration:underline"
MAX_WORDS = 6000


def words(text: str) -> list[str]:
    """Words and the white space between them (so the diff keeps the layout)."""
    return _WORDS.findall(text)


def diff_html(left: str, right: str) -> str:
    """One block: what the left answer has and the right lacks (struck), and the reverse (underlined)."""
    a, b = words(left)[:MAX_WORDS], words(right)[:MAX_WORDS]
    parts = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            parts.append(f'<span style="{_DEL}">{html.escape("".join(a[i1:i2]))}</span>')
        if op in ("insert", "replace"):
            parts.append(f'<span style="{_INS}">{html.escape("".join(b[j1:j2]))}</span>')
        if op == "equal":
            parts.append(html.escape("".join(a[i1:i2])))
    note = (
        ""
        if len(words(left)) <= MAX_WORDS and len(words(right)) <= MAX_WORDS
        else (f'<div style="color:#57606a">(first {MAX_WORDS} words compared)</div>')
    )
    return f'<div class="rlb-diff" style="{_STYLE}">{"".join(parts)}</div>{note}'
