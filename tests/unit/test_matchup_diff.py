"""Same prompts across two runs, and the word diff of two answers (hostile text stays text)."""

from __future__ import annotations

import pandas as pd

from rl_board.rollouts.matchup import match, prompt_rewards
from rl_board.ui.diff import diff_html


def test_match_by_prompt_by_hand() -> None:
    a = prompt_rewards(
        pd.DataFrame(
            {"step": [0, 0, 1], "sample": [0, 1, 0], "prompt": ["p", "p", "q"], "reward": [0.0, 1.0, 0.5]}
        )
    )
    b = prompt_rewards(
        pd.DataFrame({"step": [5, 5], "sample": [0, 1], "prompt": ["p", "r"], "reward": [1.0, 0.0]})
    )
    both = match(a, b)
    assert both["prompt"].tolist() == ["p"]
    row = both.iloc[0]
    assert (row["reward_a"], row["reward_b"], row["gain"]) == (0.5, 1.0, 0.5)
    assert (row["best_step_a"], row["best_sample_a"]) == (0, 1)


def test_diff_marks_words_and_escapes_text() -> None:
    out = diff_html("the answer is <b>4</b>", 'the answer is <script>alert("x")</script>')
    assert "<script>" not in out and "&lt;script&gt;" in out and "&lt;b&gt;4&lt;/b&gt;" in out
    assert out.count("line-through") == 1 and out.count("underline") == 1
    assert diff_html("same", "same").count("<span") == 0
