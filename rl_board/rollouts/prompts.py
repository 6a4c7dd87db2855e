"""Prompts across training: one prompt followed down the steps, and run-wide lists of how prompts fare.

A prompt is known by its text (group ids such as verl's uid change every
step; the text does not). Per step a prompt is *solved* when at least one of
its samples reaches the threshold (by default the run's highest reward). A
prompt is *newly failing* when it was solved at some step but not at the last
step it appears in, and a *regression* is each step where it goes from
solved to not solved.

A NaN reward is an unscored sample, not a zero: it is left out of every mean,
and a step where none of a prompt's samples was scored says nothing about
whether it was solved (it is left out of the solved share, the regressions
and the status). A prompt never scored has no mean reward (NaN).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from rl_board.formats import schema as S

NEVER, ALWAYS, NEWLY_FAILING, LEARNED, MIXED = (
    "never solved",
    "always solved",
    "newly failing",
    "learned",
    "mixed",
)
STATUSES = (NEVER, ALWAYS, NEWLY_FAILING, LEARNED, MIXED)


def prompt_id(text: str) -> str:
    """A short, stable id for a prompt's text (for links: prompts are long)."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def per_step(samples: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """One row per (prompt, step): samples, scored samples, reward sum and mean (of the scored ones), best
    reward, solved (any sample at the threshold)."""
    frame = samples.dropna(subset=[S.PROMPT]).assign(_r=samples[S.REWARD].astype("float64"))
    grouped = frame.groupby([S.PROMPT, S.STEP], sort=True)["_r"]
    out = pd.DataFrame(
        {
            "samples": grouped.size(),
            "scored": grouped.count(),
            "reward_sum": grouped.sum(),
            "reward_mean": grouped.mean(),
            "reward_best": grouped.max(),
        }
    )
    out["solved"] = out["reward_best"] >= threshold
    return out.reset_index()


def prompt_table(samples: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """One row per prompt over the whole run: steps seen, first step solved, regressions, status."""
    steps = per_step(samples, threshold)
    if steps.empty:
        return pd.DataFrame(
            columns=[
                "prompt",
                "id",
                "steps",
                "samples",
                "reward_mean",
                "first_solved",
                "solved_share",
                "regressions",
                "last_step",
                "solved_last",
                "status",
            ]
        )
    rows = [_summary(prompt, group) for prompt, group in steps.groupby(S.PROMPT, sort=False)]
    return pd.DataFrame(rows).sort_values(["status", "prompt"], kind="stable").reset_index(drop=True)


def _summary(prompt: str, steps: pd.DataFrame) -> dict:
    """One prompt's row; ``steps`` are its rows of ``per_step``, by step. Unscored steps only count as
    seen."""
    scored = int(steps["scored"].sum())
    solved = steps.loc[steps["scored"] > 0, "solved"].to_numpy(dtype=bool)
    first = steps.loc[steps["solved"], S.STEP]
    regressions = int(np.sum(solved[:-1] & ~solved[1:])) if len(solved) > 1 else 0
    return {
        "prompt": prompt,
        "id": prompt_id(prompt),
        "steps": len(steps),
        "samples": int(steps["samples"].sum()),
        "reward_mean": float(steps["reward_sum"].sum() / scored) if scored else float("nan"),
        "first_solved": int(first.iloc[0]) if len(first) else None,
        "solved_share": float(solved.mean()) if len(solved) else float("nan"),
        "regressions": regressions,
        "last_step": int(steps[S.STEP].iloc[-1]),
        "solved_last": bool(solved[-1]) if len(solved) else False,
        "status": _status(solved),
    }


def _status(solved: np.ndarray) -> str:
    if not solved.any():
        return NEVER
    if solved.all():
        return ALWAYS
    if not solved[-1]:
        return NEWLY_FAILING
    if not solved[: int(np.argmax(solved))].any() and solved[int(np.argmax(solved)) :].all():
        return LEARNED  # unsolved until some step, solved ever since
    return MIXED
