"""The search's regular expressions are checked by the engine that matches them (RE2, through pyarrow)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from rl_board.errors import InvalidArgumentError
from rl_board.rollouts.filters import SampleFilter
from rl_board.rollouts.store import RolloutStore

WORDS = ("the answer is", "数学题的答案是", "let me think", "我们先算一下", "so the total is", "🙂 done")


def write_mixed_run(run: Path, seed: int) -> list[dict]:
    """Samples whose responses are English, Chinese, or an emoji line, chosen at random."""
    rng = np.random.default_rng(seed)
    rows = [
        {
            "step": k // 6,
            "prompt": f"question {k}",
            "response": f"{rng.choice(WORDS)} {k}",
            "reward": float(rng.random()),
        }
        for k in range(24)
    ]
    run.mkdir(parents=True)
    (run / "rollout_data_rank_0.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    )
    return rows


def has_han(text: str) -> bool:
    return any(unicodedata.name(c, "").startswith("CJK UNIFIED IDEOGRAPH") for c in text)


def test_re2_classes_python_lacks_find_chinese_text(tmp_path: Path, cache_dir: Path) -> None:
    rows = write_mixed_run(tmp_path / "run", seed=3)
    store = RolloutStore.open(tmp_path / "run", cache_dir=cache_dir)
    han = SampleFilter.build(text=r"\p{Han}+", regex=True)  # Python's re refuses \p{...}; RE2 knows it
    expected = [r for r in rows if has_han(r["response"])]
    assert 0 < len(expected) < len(rows)
    assert store.count(filters=han) == len(expected)
    found = store.samples(filters=han, columns=["response"])["response"].tolist()
    assert sorted(found) == sorted(r["response"] for r in expected)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("a**", "bad repetition operator"),
        ("(?<=a)b", "invalid perl operator"),  # Python's re accepts a look-behind; RE2 has none
        (r"(a)\1", "invalid escape sequence"),  # nor back-references
        ("[z-a]", "invalid character class range"),
        ("(", "missing )"),
        ("x" * 2_000_000, "pattern too large"),
    ],
)
def test_a_pattern_the_engine_refuses_is_one_clear_message(pattern: str, why: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        SampleFilter.build(text=pattern, regex=True)
    message = str(caught.value)
    assert message.startswith("invalid regular expression") and why in message and len(message) < 400
    assert "Traceback" not in message and "ArrowInvalid" not in message


def test_search_text_that_is_not_unicode_is_a_clear_message() -> None:
    for regex in (False, True):
        with pytest.raises(InvalidArgumentError, match="search text"):
            SampleFilter.build(text="abc\ud83d", regex=regex)  # a lone surrogate cannot be matched
