"""Model text for display: hiding pad tokens and system prompts, safe labels.

Pure functions (no Streamlit). Model output is data: nothing here produces
markup; ``escape_markdown``, ``token_label`` and ``visible_bidi`` only make
text show as itself. Bidi controls (U+202A–U+202E, U+2066–U+2069) would make
the browser reorder what follows them, so a name or text can read as
something else: every helper here shows them as ``⟨U+202E⟩`` instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

DEFAULT_PAD_TOKENS = ("<PAD>", "<EOD>")
DEFAULT_SYSTEM_MARKER = "<endofsystem>"

_SPLIT = re.compile(r"[,\s]+")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=&])")
_WORD_UNDERSCORE = re.compile(r"(?<=[^\W_])\\_(?=[^\W_])")
BIDI_CONTROLS = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
_BIDI = {cp: f"⟨U+{cp:04X}⟩" for cp in BIDI_CONTROLS}
_CONTROL = {i: chr(0x2400 + i) for i in range(32)} | {0x7F: "\u2421"} | _BIDI
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
    """A token as visible text: newlines, tabs, control and bidi characters become symbols."""
    if token is None:
        return "∅"
    if token == "":
        return "∅"
    return token.translate(_CONTROL)


def visible_bidi(text: str) -> str:
    """Bidi embedding, override and isolate controls as ``⟨U+202E⟩``: nothing reorders the text near them."""
    return text.translate(_BIDI)


def display_name(name: object) -> str:
    """A run, file or tag name for plain-text places (select options, table cells): bidi controls shown."""
    return visible_bidi(str(name))


def visible_bidi_column(values: pd.Series) -> pd.Series:
    """``visible_bidi`` over a column of text (missing values stay missing, other values are left alone)."""
    return values.map(lambda v: v.translate(_BIDI) if isinstance(v, str) else v)


def escape_markdown(text: str, *, word_underscores: bool = False) -> str:
    """Backslash-escape Markdown (and HTML-ish) characters so the text shows as itself; bidi controls shown.

    ``word_underscores`` leaves an ``_`` between two letters or digits as it is
    (``accuracy_reward``): CommonMark never reads one as emphasis, and a label
    that tests or users match on keeps its plain spelling.
    """
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", visible_bidi(text).replace("\n", " "))
    escaped = _WORD_UNDERSCORE.sub("_", escaped) if word_underscores else escaped
    return _LINKABLE.sub(lambda found: found[0] + WORD_JOINER, escaped)


WORD_JOINER = "\u2060"
"""Zero-width and unbreakable: put inside what GitHub-flavoured Markdown would turn into a link by itself (an
address with a scheme, ``www.``, an e-mail address), it leaves the text as it reads and makes no link."""
_LINKABLE = re.compile(r"(?i:\bhttps?\\?:)(?=//)|(?i:\bwww)(?=\\?\.)|[\w.+\\-](?=\\?@)")
"""Where GFM's autolinks begin (its schemes are http and https, then ``www.``, then an e-mail's ``@``)."""
