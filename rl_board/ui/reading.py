"""Reading an answer: its ``<think>`` part apart from what it answers, and the answer's final line.

Pure functions (no Streamlit). Nothing here judges an answer: ``final_answer`` only points at what the answer
ends with (its last non-blank line, and its last ``\\boxed{...}``), so it is easy to find in a long text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPEN, CLOSE = "<think>", "</think>"
_OPENING = re.compile(r"\A\s*<think>")
_BOXED = "\\boxed"
FINAL_CHARS = 300


@dataclass(frozen=True)
class Thinking:
    """A response cut at its thinking: ``thinking`` (None when it has none), then ``answer``."""

    thinking: str | None
    answer: str
    closed: bool = True  # False: a <think> that never closed (the whole response is thinking)


def split_thinking(text: str) -> Thinking:
    """A leading ``<think>...</think>`` block apart from the rest. A response with ``</think>`` and no
    ``<think>`` (the chat template opened it in the prompt) thinks up to it; a ``<think>`` never closed
    thinks to the end."""
    opened = _OPENING.match(text)
    if opened is None:
        if CLOSE in text and OPEN not in text:
            head, _, tail = text.partition(CLOSE)
            return Thinking(head.strip("\n"), tail.lstrip("\n"))
        return Thinking(None, text)
    rest = text[opened.end() :]
    head, found, tail = rest.partition(CLOSE)
    if not found:
        return Thinking(rest.strip("\n"), "", closed=False)
    return Thinking(head.strip("\n"), tail.lstrip("\n"))


@dataclass(frozen=True)
class FinalAnswer:
    """What an answer ends with: its last non-blank ``line``, and its last ``\\boxed{...}``'s content when it
    has one (both clipped to ``FINAL_CHARS``)."""

    line: str
    boxed: str | None = None


def _clip(text: str) -> str:
    return text if len(text) <= FINAL_CHARS else text[:FINAL_CHARS] + "…"


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` whose braces close (nested braces counted)."""
    start = text.rfind(_BOXED + "{")
    while start >= 0:
        depth = 0
        for k in range(start + len(_BOXED), len(text)):
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            if depth == 0:
                return text[start + len(_BOXED) + 1 : k]
        start = text.rfind(_BOXED + "{", 0, start)
    return None


def final_answer(text: str) -> FinalAnswer | None:
    """The last non-blank line of ``text`` and its last ``\\boxed{...}``; None for a blank text."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    if not lines:
        return None
    boxed = last_boxed(text)
    return FinalAnswer(_clip(lines[-1]), _clip(boxed.strip()) if boxed and boxed.strip() else None)
