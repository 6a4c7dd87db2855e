"""GRPO groups: the samples of one prompt within one step, and what the group's rewards say.

A group is keyed by the log's group id when it has one (``group``: verl's
``uid`` prefix, ROLL's ``id``, prime-rl's group, AReaL's task), else by the
prompt's text. Its rewards give the advantage signal GRPO learns from: a
group whose rewards are all equal (``zero_variance``) teaches nothing. A
sample counts as *solved* when its reward reaches the threshold (by default
the highest reward seen in the run: "full marks").
"""

from __future__ import annotations

import numpy as np

from rl_board.formats import schema as S
from rl_board.lazy import pd

GROUP = "group"
ADVANTAGE = "advantage"
TOLERANCE = 1e-9
COLUMNS = (
    "step",
    "group",
    "prompt",
    "samples",
    "reward_mean",
    "reward_std",
    "reward_min",
    "reward_max",
    "solved",
    "zero_variance",
    "advantage_std",
    "best_sample",
    "worst_sample",
)


def group_keys(samples: pd.DataFrame) -> pd.Series:
    """Each sample's group: its group id where the log has one, else its prompt text."""
    by_prompt = samples[S.PROMPT].astype("string") if S.PROMPT in samples.columns else None
    if GROUP in samples.columns:
        ids = samples[GROUP].astype("string")
        return ids.fillna(by_prompt) if by_prompt is not None else ids
    if by_prompt is None:
        return pd.Series(pd.NA, index=samples.index, dtype="string")
    return by_prompt


def default_threshold(rewards: pd.Series) -> float:
    """Full marks: the highest finite reward seen (NaN when there is none)."""
    finite = rewards[np.isfinite(rewards.to_numpy(dtype=np.float64))]
    return float(finite.max()) if len(finite) else float("nan")


def group_table(samples: pd.DataFrame, *, threshold: float | None = None) -> pd.DataFrame:
    """One row per (step, group), sorted by step then group; see ``COLUMNS``.

    ``samples`` needs ``step``, ``sample`` and ``reward``, and ``prompt`` or
    ``group``; ``advantage`` is used when present. ``solved`` is the share of
    the group's scored samples with a reward at or above ``threshold``: a NaN
    reward (unscored) is left out of it as of every mean, so a group with no
    scored sample has NaN there.
    """
    if samples.empty or S.REWARD not in samples.columns:
        return pd.DataFrame(columns=list(COLUMNS))
    frame = samples.assign(_key=group_keys(samples)).dropna(subset=["_key"])
    rewards = frame[S.REWARD].astype("float64")
    limit = default_threshold(rewards) if threshold is None else float(threshold)
    solved = (rewards >= limit).astype("float64").where(rewards.notna())  # unscored: neither solved nor not
    frame = frame.assign(_reward=rewards, _solved=solved)
    grouped = frame.groupby([S.STEP, "_key"], sort=True)
    out = pd.DataFrame(
        {
            "prompt": grouped[S.PROMPT].first() if S.PROMPT in frame.columns else pd.NA,
            "samples": grouped.size(),
            "reward_mean": grouped["_reward"].mean(),
            "reward_std": grouped["_reward"].std(ddof=0),
            "reward_min": grouped["_reward"].min(),
            "reward_max": grouped["_reward"].max(),
            "solved": grouped["_solved"].mean(),
        }
    )
    scored = grouped["_reward"].count()  # NaN rewards do not count: two scored samples make a spread
    out["zero_variance"] = (scored >= 2) & (out["reward_max"] - out["reward_min"] <= TOLERANCE)
    out["advantage_std"] = grouped[ADVANTAGE].std(ddof=0) if ADVANTAGE in frame.columns else np.nan
    out["best_sample"] = _extreme(frame, best=True)
    out["worst_sample"] = _extreme(frame, best=False)
    out = out.reset_index().rename(columns={"_key": "group"})
    out["group"] = out["group"].astype(str)
    return out[list(COLUMNS)]


def _extreme(frame: pd.DataFrame, *, best: bool) -> pd.Series:
    """The sample index of each group's highest (or lowest) reward; NaN rewards never win."""
    ranked = frame.sort_values("_reward", ascending=not best, na_position="last", kind="stable")
    first = ranked.groupby([S.STEP, "_key"], sort=True).head(1)
    return first.set_index([S.STEP, "_key"])["sample"]


def step_group_stats(groups: pd.DataFrame) -> pd.DataFrame:
    """Per step: how many groups, their mean solved share, and the share with zero reward variance."""
    if groups.empty:
        return pd.DataFrame(columns=["step", "groups", "solved_mean", "zero_variance_share"])
    by_step = groups.groupby("step", sort=True)
    return pd.DataFrame(
        {
            "groups": by_step.size(),
            "solved_mean": by_step["solved"].mean(),
            "zero_variance_share": by_step["zero_variance"].mean(),
        }
    ).reset_index()
