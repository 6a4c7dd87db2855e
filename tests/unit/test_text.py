"""Display helpers for model text: hiding pads and system prompts, safe labels."""

from __future__ import annotations

import pandas as pd
import pytest

from rl_board.ui.text import (
    TextDisplay,
    escape_markdown,
    parse_token_list,
    remove_pads,
    shown,
    shown_column,
    strip_system,
    token_label,
)

SYSTEM = "You are careful.<endofsystem>"


@pytest.mark.parametrize(("raw", "expected"), [
    ("<PAD>, <EOD>", ("<PAD>", "<EOD>")),
    ("<PAD>,<PAD>  <EOD>\n", ("<PAD>", "<EOD>")),
    ("", ()),
    (" , ", ()),
])
def test_parse_token_list(raw, expected):
    assert parse_token_list(raw) == expected


def test_strip_system_drops_up_to_first_marker():
    assert strip_system(SYSTEM + "What is 1+1?", "<endofsystem>") == ("What is 1+1?", len(SYSTEM))
    assert strip_system("a<m>b<m>c", "<m>") == ("b<m>c", 4)


def test_strip_system_without_marker_or_text_keeps_text():
    assert strip_system("no marker here", "<endofsystem>") == ("no marker here", 0)
    assert strip_system("text", "") == ("text", 0)
    assert strip_system("", "<m>") == ("", 0)


def test_remove_pads_counts_occurrences():
    assert remove_pads("a<PAD><PAD>b<EOD>", ("<PAD>", "<EOD>")) == ("ab", 3)
    assert remove_pads("clean", ("<PAD>",)) == ("clean", 0)
    assert remove_pads("x", ("",)) == ("x", 0)


def test_shown_reports_what_was_hidden():
    out = shown(SYSTEM + "Hi<PAD><PAD>", TextDisplay(("<PAD>",), "<endofsystem>"))
    assert out.text == "Hi"
    assert out.pads_removed == 2 and out.system_chars == len(SYSTEM)
    assert "system prompt" in out.note and "2 pad token(s)" in out.note


def test_shown_noop_and_none():
    assert shown(None, TextDisplay()).text == ""
    assert shown("<PAD>", TextDisplay()).text == "<PAD>"
    assert shown("x", TextDisplay()).note == ""
    assert TextDisplay().is_noop


def test_shown_column_matches_scalar_version_and_keeps_missing():
    display = TextDisplay(("<PAD>",), "<endofsystem>")
    values = pd.Series([SYSTEM + "A<PAD>", "no system<PAD>", None, "<endofsystem>"])
    out = shown_column(values, display)
    assert out.iloc[0] == "A" and out.iloc[1] == "no system" and out.iloc[3] == ""
    assert pd.isna(out.iloc[2])
    for raw, got in zip(values, out, strict=True):
        if pd.notna(raw):
            assert got == shown(raw, display).text


def test_shown_column_clips_long_cells():
    out = shown_column(pd.Series(["x" * 50, "short"]), TextDisplay(), max_chars=10)
    assert out.iloc[0] == "x" * 10 + "…" and out.iloc[1] == "short"


def test_token_label_makes_invisible_characters_visible():
    assert token_label("\n") == "↵"
    assert token_label("\t") == "→"
    assert token_label("\x1b[31m") == "\u241b[31m"
    assert token_label("") == "∅" and token_label(None) == "∅"
    assert token_label(" word") == " word"


def test_escape_markdown_neutralises_markup():
    text = "# Title **bold** [link](javascript:alert(1)) <b>x</b> $x^2$"
    escaped = escape_markdown(text)
    for ch in "#*[]()<>$":
        assert f"\\{ch}" in escaped
    assert "\n" not in escape_markdown("a\nb")
