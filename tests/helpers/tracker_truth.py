"""One GRPO-like run every tracker test logs through a tracker's own library, and its exact points.

7 tags, 50 steps (1..50), 307 points: five tags every step, ``actor/grad_norm``
with a gap (no point at steps 20, 21, 22), ``val/score`` every 5 steps; two
NaN values and a few exact zeros (SwanLab writes 0.0 as an empty message).
``logged_rows()`` is what a training loop hands to ``log(metrics, step=step)``
once per step; ``POINTS`` is what a reader must give back.
"""

from __future__ import annotations

import math

STEPS = range(1, 51)
GAP = frozenset({20, 21, 22})
EVERY_FIFTH = "val/score"
NAN_AT = {("train/kl", 7), ("actor/pg_loss", 33)}
ZERO_AT = {("actor/clip_frac", s) for s in (1, 2, 3)}
TAGS = (
    "train/reward",
    "train/kl",
    "actor/pg_loss",
    "actor/clip_frac",
    "response_length/mean",
    "actor/grad_norm",
    EVERY_FIFTH,
)
CONFIG = {"algorithm": "grpo", "lr": 1e-6, "rollout": {"n": 8, "temperature": 1.0}, "model": "tiny-random"}


def value(tag: str, step: int) -> float:
    """The value of ``tag`` at ``step`` (a plain function, so every writer and reader agrees)."""
    if (tag, step) in NAN_AT:
        return math.nan
    if (tag, step) in ZERO_AT:
        return 0.0
    base = {
        "train/reward": 0.1 + 0.015 * step,
        "train/kl": 0.001 * step,
        "actor/pg_loss": -0.05 + 0.002 * step,
        "actor/clip_frac": 0.01 * (step % 7),
        "response_length/mean": 120.0 + 3.0 * step,
        "actor/grad_norm": 1.0 / step,
        EVERY_FIFTH: 0.2 + 0.01 * step,
    }[tag]
    return base + 0.001 * math.sin(step)


def logged_rows() -> list[tuple[int, dict[str, float]]]:
    """(step, {tag: value}) as a trainer logs them, one call per step."""
    rows = []
    for step in STEPS:
        row = {}
        for tag in TAGS:
            if tag == EVERY_FIFTH and step % 5:
                continue
            if tag == "actor/grad_norm" and step in GAP:
                continue
            row[tag] = value(tag, step)
        rows.append((step, row))
    return rows


POINTS: dict[tuple[str, int], float] = {
    (tag, step): v for step, row in logged_rows() for tag, v in row.items()
}
assert len(POINTS) == 307


def same_value(got: float, want: float) -> bool:
    """Equal as doubles, NaN equal to NaN."""
    return (math.isnan(got) and math.isnan(want)) or got == want


def mismatches(points: dict[tuple[str, int], float]) -> list[str]:
    """Every way ``points`` ((tag, step) -> value, as read back) differs from the truth, in words."""
    out = [f"missing {key}" for key in POINTS if key not in points]
    out += [f"extra {key}" for key in points if key not in POINTS]
    out += [
        f"{key}: {points[key]!r} != {want!r}"
        for key, want in POINTS.items()
        if key in points and not same_value(points[key], want)
    ]
    return out
