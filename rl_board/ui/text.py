"""Model text for display: hiding pad tokens and system prompts, safe labels.

Pure functions (no Streamlit). Model output is data: nothing here produces
markup; ``escape_markdown`` and ``token_label`` only make text show as itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

DEFAULT_PAD_TOKENS = ("<PAD>", "<EOD>")
DEFAULT_SYSTEM_MARKER = "<endofsystem>"

_SPLIT = re.compile(r"[,\s]+")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=&])")
_CONTROL = {i: chr(0x2400 + i) for i in range(32)} | {0x7F: "\u2421"}
_CONTROL.update({ord("\n"): "\u21b5", ord("\t"): "\u2192"})


@dataclass(frozen=True)
class TextDisplay:
    """What to hide from model text: pad tokens anywhere, a system prompt before a marker."""

    pad_tokens: tuple[str, ...] = ()
    system_marker: str = ""

    @property
    def is_noop(self) -> bool:
        return not self.pad_tokens and not self.system_marker


@dataclass(frozen=True)
class ShownText:
    """Text after hiding, with what was hidden (to tell the user)."""

    text: str
    pads_removed: int = 0
    system_chars: int = 0

    @property
    def note(self) -> str:
        parts = []
        if self.system_chars:
            parts.append(f"system prompt ({self.system_chars} characters)")
        if self.pads_removed:
            parts.append(f"{self.pads_removed} pad token(s)")
        return ("hidden: " + ", ".join(parts)) if parts else ""


def parse_token_list(raw: str) -> tuple[str, ...]:
    """``"<PAD>, <EOD>"`` -> ``("<PAD>", "<EOD>")``: split on commas and whitespace, drop repeats."""
    seen: dict[str, None] = {}
    for part in _SPLIT.split(raw or ""):
        if part:
            seen.setdefault(part, None)
    return tuple(seen)


def strip_system(text: str, marker: str) -> tuple[str, int]:
    """Drop everything up to and including the first ``marker``; returns (text, characters dropped)."""
    if not marker or not text:
        return text or "", 0
    head, found, tail = text.partition(marker)
    if not found:
        return text, 0
    return tail, len(head) + len(found)


def remove_pads(text: str, pads: tuple[str, ...]) -> tuple[str, int]:
    """Remove every occurrence of each pad token; returns (text, occurrences removed)."""
    removed = 0
    for pad in pads:
        if pad and pad in text:
            removed += text.count(pad)
            text = text.replace(pad, "")
    return text, removed


def shown(text: str | None, display: TextDisplay) -> ShownText:
    """Apply ``display`` to one text (None counts as empty)."""
    value = "" if text is None else str(text)
    value, system_chars = strip_system(value, display.system_marker)
    value, pads = remove_pads(value, display.pad_tokens)
    return ShownText(value, pads, system_chars)


def shown_column(values: pd.Series, display: TextDisplay, *, max_chars: int | None = None) -> pd.Series:
    """Vectorised ``shown(...).text`` over a column, optionally clipped for table cells."""
    out = values.astype("string").fillna("")
    if display.system_marker:
        parts = out.str.partition(display.system_marker)
        out = parts[2].where(parts[1] == display.system_marker, parts[0])
    for pad in display.pad_tokens:
        if pad:
            out = out.str.replace(pad, "", regex=False)
    if max_chars is not None:
        long = out.str.len() > max_chars
        out = out.where(~long, out.str.slice(0, max_chars) + "…")
    return out.where(values.notna(), None)


def token_label(token: str | None) -> str:
    """A token as visible text: newlines, tabs and control characters become symbols."""
    if token is None:
        return "∅"
    if token == "":
        return "∅"
    return token.translate(_CONTROL)


def escape_markdown(text: str) -> str:
    """Backslash-escape Markdown (and HTML-ish) characters so the text shows as itself."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text.replace("\n", " "))
