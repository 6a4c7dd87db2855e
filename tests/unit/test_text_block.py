"""Model text through st.text: shown exactly as logged (st.text itself dedents and strips)."""

from __future__ import annotations

import textwrap

from rl_board.ui.components.text_block import EDGE, verbatim


def test_text_that_st_text_would_change_is_kept_by_zero_width_edges() -> None:
    for text in (" a leading space", "trailing newline\n", "    def f():\n        return 1", "\tx"):
        shown = verbatim(text)
        assert shown == f"{EDGE}{text}{EDGE}"
        assert textwrap.dedent(shown).strip() == shown  # what st.text does to its body changes nothing


def test_plain_text_is_left_alone() -> None:
    assert verbatim("What is 2 + 2?\nThink.") == "What is 2 + 2?\nThink."
    assert verbatim("") == ""
