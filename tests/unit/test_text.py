"""Display helpers for model text: hiding pads and system prompts, safe labels."""

from __future__ import annotations

import pandas as pd
import pytest

from rl_board.ui.text import (
    TextDisplay,
    display_name,
    escape_markdown,
    parse_token_list,
    remove_pads,
    shown,
    shown_column,
    strip_system,
    token_label,
    visible_bidi,
    visible_bidi_column,
)

SYSTEM = "You are careful.<endofsystem>"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<PAD>, <EOD>", ("<PAD>", "<EOD>")),
        ("<PAD>,<PAD>  <EOD>\n", ("<PAD>", "<EOD>")),
        ("", ()),
        (" , ", ()),
    ],
)
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


# --------------------------------------------------------------------------- bidi controls (red-team finding)

BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]
RLO_NAME = "run\u202egnp.exe"  # shows as "runexe.png" when the override is honoured


def test_visible_bidi_shows_every_embedding_override_and_isolate():
    assert visible_bidi(RLO_NAME) == "run⟨U+202E⟩gnp.exe"
    assert visible_bidi("\u2066a\u2069") == "⟨U+2066⟩a⟨U+2069⟩"
    for ch in BIDI:
        assert ch not in visible_bidi(f"x{ch}y") and ch not in display_name(f"x{ch}y")
    assert visible_bidi("שלום abc") == "שלום abc"  # ordinary right-to-left text is left alone


def test_every_name_helper_shows_bidi_controls():
    for helper in (escape_markdown, token_label, display_name):
        out = helper(RLO_NAME)
        assert "\u202e" not in out and "U" in out and "202E" in out, helper.__name__
    column = visible_bidi_column(pd.Series([RLO_NAME, None, 3], dtype=object))
    assert column.tolist() == ["run⟨U+202E⟩gnp.exe", None, 3]


def test_escape_markdown_keeps_underscores_inside_words_only_when_asked():
    assert escape_markdown("accuracy_reward") == "accuracy\\_reward"
    assert escape_markdown("accuracy_reward", word_underscores=True) == "accuracy_reward"
    assert escape_markdown("_em_ ![x](y)", word_underscores=True) == "\\_em\\_ \\!\\[x\\]\\(y\\)"


# --------------------------------------------------------------------------- Plotly text (red-team finding)


def test_plotly_text_escapes_tags_but_not_quotes():
    from rl_board.ui.charts import plotly_text

    assert plotly_text('say "hi" & <a href=x>') == 'say "hi" &amp; &lt;a href=x&gt;'
    assert plotly_text("it's") == "it's"
    assert plotly_text(RLO_NAME) == "run⟨U+202E⟩gnp.exe"


def test_metric_and_rollout_figures_show_quotes_as_quotes():
    from rl_board.ui.charts import comparison_figure
    from rl_board.ui.metric_charts import histogram_figure, scalar_figure

    frame = pd.DataFrame({"step": [0, 1], "value": [1.0, 2.0], "wall_time": [1.0, 2.0]})
    fig = scalar_figure({'run "a" <b>': frame, "b": frame}, tag='loss "x" <img src=y>', smoothing=0)
    assert fig.layout.title.text == 'loss "x" &lt;img src=y&gt;'
    names = {t.name for t in fig.data}
    assert 'run "a" &lt;b&gt;' in names and not any("&quot;" in n for n in names)
    assert not any("&quot;" in (t.hovertemplate or "") for t in fig.data)
    records = pd.DataFrame({"step": [0], "left": [[0.0]], "right": [[1.0]], "count": [[3.0]]})
    assert "&quot;" not in histogram_figure(records, tag='h "q"', run='r "q"').layout.title.text
    summary = pd.DataFrame({"step": [0, 1], "reward_mean": [0.1, 0.2], "reward_std": [0.0, 0.0]})
    comparison = comparison_figure({'run "q" <i>': summary}, "reward", title="t", y_title="y")
    assert {t.name for t in comparison.data} >= {'run "q" &lt;i&gt;'}


def test_escape_markdown_leaves_no_address_that_markdown_would_link():
    """GitHub-flavoured Markdown links a bare ``http://…``, ``www.…`` or ``a@b.co`` by itself, escaped or
    not: a label, run name or caption that holds one shows it as text, with nothing a click could follow."""
    import re

    import pytest

    markdown_it = pytest.importorskip("markdown_it")
    gfm_link = re.compile(r"://|www\.|[\w.+-]@[\w-]+\.[\w-]", re.I)
    names = ["run http://evil.example/x", "see WWW.evil.example", "mail a.b+c@evil.example now"]
    for name in names:
        escaped = escape_markdown(name)
        parsed = markdown_it.MarkdownIt("commonmark").parseInline(escaped)
        texts = [c.content for t in parsed for c in (t.children or [])]
        assert not any(gfm_link.search(text) for text in texts), (name, escaped, texts)
        assert "".join(texts).replace("\u2060", "") == name  # reads as it was
