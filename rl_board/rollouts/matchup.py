"""Two runs (or two steps of one run) on the same prompts: per prompt, the reward each got."""

from __future__ import annotations

import pandas as pd

from rl_board.formats import schema as S


def prompt_rewards(samples: pd.DataFrame) -> pd.DataFrame:
    """Per prompt: samples, mean reward, and the (step, sample) of its best answer."""
    frame = samples.dropna(subset=[S.PROMPT]).assign(_r=samples[S.REWARD].astype("float64"))
    if frame.empty:
        return pd.DataFrame(columns=["prompt", "samples", "reward_mean", "best_step", "best_sample"])
    grouped = frame.groupby(S.PROMPT, sort=False)
    best = (
        frame.sort_values("_r", ascending=False, na_position="last", kind="stable").groupby(S.PROMPT).head(1)
    )
    out = pd.DataFrame({"samples": grouped.size(), "reward_mean": grouped["_r"].mean()})
    out["best_step"] = best.set_index(S.PROMPT)[S.STEP]
    out["best_sample"] = best.set_index(S.PROMPT)["sample"]
    return out.reset_index()


def match(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Prompts both sides saw, with ``reward_a``, ``reward_b`` and ``gain`` = b − a (largest gain first)."""
    both = a.merge(b, on="prompt", suffixes=("_a", "_b"))
    both = both.rename(columns={"reward_mean_a": "reward_a", "reward_mean_b": "reward_b"})
    both["gain"] = both["reward_b"] - both["reward_a"]
    return both.sort_values("gain", ascending=False, kind="stable").reset_index(drop=True)
