"""Reading an answer: its <think> part apart, and what it ends with (its last \\boxed{}, else last line)."""

from __future__ import annotations

import pytest

from rl_board.ui.reading import FINAL_CHARS, FinalAnswer, Thinking, final_answer, last_boxed, split_thinking


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>\nhmm\n</think>\n\nThe answer is 4.", Thinking("hmm", "The answer is 4.")),
        ("  \n<think>a</think>b", Thinking("a", "b")),
        ("<think>runs away and never", Thinking("runs away and never", "", closed=False)),
        ("opened by the prompt</think>\nanswer", Thinking("opened by the prompt", "answer")),
        ("no thinking at all", Thinking(None, "no thinking at all")),
        ("<think>a</think>b <think>c</think> d", Thinking("a", "b <think>c</think> d")),  # a second one stays
        ("answer then <think>x</think>", Thinking(None, "answer then <think>x</think>")),
        ("", Thinking(None, "")),
    ],
)
def test_split_thinking(text: str, expected: Thinking) -> None:
    assert split_thinking(text) == expected


def test_last_boxed_counts_nested_braces() -> None:
    assert last_boxed("x \\boxed{1} then \\boxed{\\frac{a}{b}} end") == "\\frac{a}{b}"
    assert last_boxed("\\boxed{2} and an unclosed \\boxed{3") == "2"
    assert last_boxed("none here") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Work.\n\nSo \\boxed{42}.\n", FinalAnswer("So \\boxed{42}.", "42")),
        ("\\boxed{\n3\n} then a remark\nlast", FinalAnswer("last", "3")),
        ("Work.\nThe answer is 7.\n\n  \n", FinalAnswer("The answer is 7.")),
        ("\\boxed{ } then\nlast", FinalAnswer("last")),
        ("   \n\n", None),
    ],
)
def test_final_answer(text: str, expected: FinalAnswer | None) -> None:
    assert final_answer(text) == expected


def test_a_long_final_line_is_clipped() -> None:
    final = final_answer("x" * (FINAL_CHARS + 50))
    assert final is not None and len(final.line) == FINAL_CHARS + 1 and final.line.endswith("…")
