"""Does rl-board's reward agree with what the trainer itself logged?

TRL logs its own per-step ``reward`` (and ``rewards/<fn>/mean``) in
``checkpoint-N/trainer_state.json`` beside its completions. When both are
there, the per-step mean of rl-board's reward must equal TRL's; where it does
not, the finding names the likely cause, worked out from the numbers:

- other weights: the logged rewards fit ``Σ w·mean(fn)`` with weights other
  than the ones rl-board used (``GRPOConfig.reward_weights`` is not on disk);
- other columns: rl-board's reward functions are not the ones TRL logged;
- a partial table: TRL's table keeps only the last generation batch of a
  logging step, while its metrics average every batch of it, so even the
  per-function means differ (nothing rl-board can fix; the finding says so).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pandas as pd

from rl_board.formats import schema as S
from rl_board.health.engine import Finding, RuleContext
from rl_board.health.rollout_rules import RolloutRun, rollout_rule

LOGGED_REWARD = "reward"


def _logged(data: RolloutRun, tag: str) -> pd.Series:
    frame = data.logged
    if frame is None or frame.empty:
        return pd.Series(dtype=float)
    rows = frame[frame["tag"] == tag]
    return rows.groupby("step")["value"].last().astype(float)


def _function_names(data: RolloutRun) -> list[str]:
    tags = [] if data.logged is None else data.logged["tag"].drop_duplicates().tolist()
    return [
        t[len("rewards/") : -len("/mean")] for t in tags if t.startswith("rewards/") and t.endswith("/mean")
    ]


def fitted_weights(data: RolloutRun, names: list[str]) -> dict[str, float] | None:
    """Weights w with which the samples' own reward columns give the reward the trainer logged, by least
    squares.

    Per step, TRL's logged reward is the mean over the scored rows of Σ w·f (a NaN part counts 0), which is
    linear in w: row k of the system is each column's sum over the step's scored rows over their number.
    None when there are too few steps or no weights fit.
    """
    present = [n for n in names if n in data.samples.columns]
    if len(present) != len(names) or not names:
        return None
    logged = _logged(data, LOGGED_REWARD)
    parts = data.samples[names].astype(float)
    scored = parts.notna().any(axis=1)
    rows = parts[scored].fillna(0.0).groupby(data.samples.loc[scored, S.STEP]).mean()
    steps = rows.index.intersection(logged.index)
    if len(steps) < len(names):
        return None
    matrix, target = rows.loc[steps].to_numpy(), logged.loc[steps].to_numpy()
    weights, *_ = np.linalg.lstsq(matrix, target, rcond=None)
    if not np.allclose(matrix @ weights, target, rtol=1e-3, atol=1e-4):
        return None
    return {n: float(round(w, 4)) for n, w in zip(names, weights, strict=True)}


def likely_cause(data: RolloutRun, steps: list[int]) -> str:
    """Why rl-board's reward differs from TRL's at these steps, in words (see the module docstring)."""
    names = _function_names(data)
    used = data.reward_weights
    if names and sorted(names) != sorted(used):
        return (
            f"rl-board sums {', '.join(used) or 'no column'}, but TRL logged the reward functions "
            f'{", ".join(names)}: name the reward in rl-board.toml [fields] as reward = "{" + ".join(names)}"'
        )
    fitted = fitted_weights(data, names)
    if fitted and any(not math.isclose(fitted[n], used.get(n, 1.0), abs_tol=1e-3) for n in names):
        terms = " + ".join(n if math.isclose(w, 1.0) else f"{w:g}*{n}" for n, w in fitted.items())
        return (
            f"the logged rewards fit reward_weights {fitted} (TRL does not write them to its tables): "
            f'set reward = "{terms}" in rl-board.toml [fields] or the Fields panel'
        )
    ours = {n: data.per_step(data.samples[n]) for n in names if n in data.samples.columns}
    for name, per_step in ours.items():
        logged = _logged(data, f"rewards/{name}/mean").reindex(steps)
        if any(not _close(per_step.get(s, math.nan), logged.get(s, math.nan)) for s in steps):
            return (
                f"even {name}'s mean differs from TRL's logged rewards/{name}/mean: TRL's completions table "
                "holds only the last generation batch of each logging step (logging_steps > 1, or several "
                "generation batches per step), while its metrics average them all"
            )
    return "the cause is not one rl-board can tell from the logged metrics"


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-4)


@rollout_rule(
    "trainer_reward_mismatch",
    "warning",
    "The per-step reward disagrees with the reward the trainer itself logged (TRL's trainer_state.json).",
    tolerance=1e-3,
)
def _trainer_reward_mismatch(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    logged = _logged(data, LOGGED_REWARD)
    if logged.empty or not data.has(S.REWARD):
        return
    ours = data.per_step(data.samples[S.REWARD])
    both = ours.index.intersection(logged.index)
    tol = ctx.params["tolerance"]
    off = [int(s) for s in both if not math.isclose(ours[s], logged[s], rel_tol=tol, abs_tol=tol / 10)]
    if not off:
        return
    first = off[0]
    message = (
        f"mean reward {ours[first]:.4g} at step {first}, but the trainer logged {logged[first]:.4g} "
        f"({len(off)} of {len(both)} steps differ). Likely cause: {likely_cause(data, off)}."
    )
    yield ctx.finding(data.run, off, message, None)
