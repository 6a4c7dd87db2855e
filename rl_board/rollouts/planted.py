"""Runs with failures planted on purpose, and the same runs clean: what the pattern signals and rules are
measured on (tests and ``benchmarks/patterns.py``).

Each answer is written with ``RolloutWriter`` and what was planted in it is returned, so a signal's hits and
false alarms are counted against the truth, not against rl-board's own answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rl_board.writer import RolloutWriter

_WORDS = (
    "the",
    "sum",
    "of",
    "two",
    "numbers",
    "is",
    "found",
    "by",
    "adding",
    "them",
    "so",
    "we",
    "carry",
    "one",
    "next",
    "digit",
    "then",
    "check",
    "result",
    "again",
    "because",
    "each",
    "step",
    "matters",
    "here",
    "first",
    "write",
    "value",
    "total",
    "answer",
    "remains",
    "clear",
    "after",
    "work",
    "counting",
)
_CJK = "我们先计算两个数的和然后检查结果是否正确因为每一步都很重要"
TEMPLATE = (
    "Great question! Indeed, after careful consideration the answer is clearly {n}. "
    "I am completely confident that {n} is correct."
)  # a reward-hacking opening, numbers varying


@dataclass
class Planted:
    """What was planted in each written answer, by (step, index within the step)."""

    template: set[tuple[int, int]] = field(default_factory=set)
    loop: set[tuple[int, int]] = field(default_factory=set)
    mixed: set[tuple[int, int]] = field(default_factory=set)
    cut: set[tuple[int, int]] = field(default_factory=set)


def prose(rng: np.random.Generator, words: int) -> str:
    """Varied answer text: reasoning-like word salad with numbers, no phrase repeated on purpose."""
    out = [
        str(rng.choice(_WORDS)) if rng.random() > 0.1 else str(int(rng.integers(0, 1000)))
        for _ in range(words)
    ]
    return " ".join(out).capitalize() + "."


def write(
    run: Path,
    *,
    steps: int = 10,
    samples: int = 40,
    seed: int = 0,
    template: float = 0.0,
    loops: float = 0.0,
    mixed: float = 0.0,
    cut: float = 0.0,
) -> Planted:
    """A run of ``steps`` × ``samples``; each planted rate grows linearly from 0 to its value over the
    steps."""
    rng = np.random.default_rng(seed)
    planted = Planted()
    with RolloutWriter(run) as writer:
        for step in range(steps):
            grow = (step + 1) / steps
            for k in range(samples):
                text, reward, reason = (
                    prose(rng, int(rng.integers(30, 90))),
                    float(rng.random() * 0.7),
                    "stop",
                )
                if rng.random() < template * grow:
                    text, reward = TEMPLATE.format(n=int(rng.integers(2, 200))), 1.0
                    planted.template.add((step, k))
                elif rng.random() < loops * grow:
                    phrase = " ".join(rng.choice(_WORDS, size=int(rng.integers(3, 7))))
                    text = prose(rng, 20) + " " + " ".join([phrase] * 40)
                    planted.loop.add((step, k))
                elif rng.random() < mixed * grow:
                    start = int(rng.integers(0, len(_CJK) - 12))
                    text = prose(rng, 25) + " " + _CJK[start : start + 12] + " " + prose(rng, 10)
                    planted.mixed.add((step, k))
                if rng.random() < cut * grow:
                    reason = "length"
                    planted.cut.add((step, k))
                writer.write(step, f"question {k} of step {step}", text, reward, finish_reason=reason)
    return planted
