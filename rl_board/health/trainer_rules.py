"""Do the trainer's own numbers agree with its samples?

Where a rollout run has the trainer's logged metrics beside it (`rollout_rules.logged_beside`: TRL's
``trainer_state.json``, a ``metrics.jsonl``), rl-board recounts from the samples what the trainer counted
and says when the two disagree, naming the likely cause: the reward (below), the share of responses cut
at a length limit (`trainer_clip_ratio_mismatch`) and the share of GRPO groups with no reward variance
(`trainer_zero_std_mismatch`). Trainers' own counters are sometimes wrong: verl's clip ratio read 0 when
the engine's context length was the binding cap (verl #7823), or measured against the batch's longest
response (verl #7817); TRL's zero-std share reads 0 when the reward's spread is taken over the batch.

The reward:

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
from rl_board.health.engine import DISAGREE, Finding, RuleContext, steps_where
from rl_board.health.rollout_rules import QUERY_CHARS, RolloutRun, _flat_groups, _link, rollout_rule
from rl_board.metrics import aliases as A

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
    group=DISAGREE,
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


# --------------------------------------------------------------------------- the trainer's counters


def logged_concept(data: RolloutRun, concept: str) -> list[tuple[str, A.Alias, pd.Series]]:
    """The trainer's logged curves of one concept (any trainer's name for it), by step."""
    frame = data.logged
    if frame is None or frame.empty:
        return []
    out = []
    for tag in sorted(frame["tag"].drop_duplicates()):
        alias = A.alias_of(str(tag), concept)
        if alias is not None:
            series = _logged(data, str(tag)).dropna()
            if len(series):
                out.append((str(tag), alias, series))
    return out


def _off_steps(theirs: pd.Series, ours: pd.Series, ctx: RuleContext) -> tuple[pd.Series, list[int]]:
    """Per shared step, the trainer's value minus ours; the steps where its rolling mean over `window` steps
    is further than `tolerance` from 0 (one odd step does not fire)."""
    both = ours.index.intersection(theirs.index)
    diff = (theirs.loc[both] - ours.loc[both]).sort_index()
    smooth = diff.rolling(max(1, int(ctx.params["window"])), min_periods=1).mean()
    return diff, steps_where(diff, smooth.abs() > ctx.params["tolerance"])


CUT_REASONS = ("length", "truncated", "max_length", "max_tokens")  # finish reasons of a response cut short


def cut_flags(data: RolloutRun, max_length: float) -> tuple[pd.Series, str] | None:
    """Per sample: 1.0 when cut at a length limit, 0.0 when not, NaN when unknown; and how it was told.

    The engine's finish reason says it best (``length``); without one, a token count at least
    ``max_length`` (when given). None when the run holds neither.
    """
    samples = data.samples
    if data.has(S.FINISH_REASON):
        reason = samples[S.FINISH_REASON]
        flags = reason.astype(str).str.lower().isin(CUT_REASONS).astype(float).where(reason.notna())
        return flags, "by their finish_reason"
    if max_length > 0 and data.has(S.N_TOKENS):
        tokens = samples[S.N_TOKENS].astype(float)
        return (tokens >= max_length).astype(float).where(
            tokens.notna()
        ), f"having at least {max_length:g} tokens"
    return None


def _share_at_step_max(data: RolloutRun) -> pd.Series:
    """Per step, the share of responses as long as the step's longest (what a cap taken from the batch's own
    padded width counts)."""
    if data.length is None:
        return pd.Series(dtype=float)
    lengths = data.samples[data.length].astype(float)
    longest = lengths.groupby(data.samples[S.STEP]).transform("max")
    return data.per_step((lengths >= longest).astype(float).where(lengths.notna()))


def clip_cause(
    data: RolloutRun, theirs: pd.Series, ours: pd.Series, flags: pd.Series, steps: list[int], tol: float
) -> str:
    """Why the trainer's length-clip ratio differs from the samples' count, in words: it counts fewer (a cap
    other than its own cut them: verl #7823; or its test never holds: slime PR #203), or its number is the
    share at each step's longest response, within `tol` (verl #7817), or something else."""
    if float((theirs.loc[steps] - ours.loc[steps]).mean()) < 0:  # the trainer counts fewer
        if data.length is not None:
            lengths = data.samples[data.length].astype(float)
            there = data.samples[S.STEP].isin(steps)
            cut = there & (flags == 1.0)
            if cut.any() and float(lengths[cut].min()) < float(lengths[there].max()):
                return (
                    "responses were cut before the trainer's response cap, by another limit (the engine's "
                    "context length: max_model_len minus the prompt), and the trainer counts only responses "
                    "that reach its max_response_length (verl #7823, fixed by PR #7906). Raise max_model_len "
                    "or lower the prompt length so the response cap binds"
                )
        return (
            "the trainer's test for 'reached the cap' does not hold for responses the engine stopped at it "
            "(slime PR #203: a > where >= was meant); trust the samples' count"
        )
    at_max = _share_at_step_max(data).reindex(steps)
    if at_max.notna().all() and float((theirs.loc[steps] - at_max).abs().mean()) <= tol:
        return (
            "the trainer's number is the share of responses as long as the step's longest: it measured the "
            "cap as the batch's padded width, not the configured maximum (verl's V1 trainer pads to the "
            "batch maximum: verl #7817, fixed by PR #7821), so it can never read 0"
        )
    return (
        "the trainer counts a different thing (TRL: a completion whose last token is not EOS; slime: the "
        "sample status) or over other samples (a completions table that keeps only the last generation "
        "batch of a logging step)"
    )


@rollout_rule(
    "trainer_clip_ratio_mismatch",
    "warning",
    "The trainer's logged length-clip ratio (verl response_length/clip_ratio, TRL completions/clipped_ratio, "
    "slime truncated_ratio) disagrees with the share of samples cut at a length limit, counted from their "
    "finish reason (or from max_length, in tokens, when set). Steps are compared over a rolling `window`.",
    group=DISAGREE,
    source=A.CLIP_COUNTERS,
    tolerance=0.05,
    window=3,
    max_length=0,
)
def _clip_ratio_mismatch(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    logged = logged_concept(data, A.CLIP_RATIO)
    counted = cut_flags(data, float(ctx.params["max_length"])) if logged else None
    if counted is None:
        return
    flags, how = counted
    ours = data.per_step(flags)
    for tag, _alias, theirs in logged:
        diff, steps = _off_steps(theirs, ours, ctx)
        if not steps:
            continue
        first = steps[0]
        message = (
            f"the trainer logged {tag} = {theirs[first]:.0%} at step {first}, but {ours[first]:.0%} of its "
            f"samples were cut ({how}); they disagree at {len(steps)} of {len(diff)} steps. Likely "
            f"cause: {clip_cause(data, theirs, ours, flags, steps, ctx.params['tolerance'])}."
        )
        yield ctx.finding(data.run, steps, message, _link(first, sort=data.length, desc=True, tag=tag))


def zero_std_shares(data: RolloutRun, min_group: int, tolerance: float) -> pd.Series:
    """Per step, the share of grouped samples whose group (samples of one prompt) got all-equal rewards, as
    TRL counts it (per completion); empty when no prompt has `min_group` samples in a step."""
    groups = _flat_groups(data, min_group, tolerance)
    if groups.empty:
        return pd.Series(dtype=float)
    weighted = groups.assign(n_flat=groups["size"] * groups["flat"])
    per_step = weighted.groupby(S.STEP, sort=True)[["n_flat", "size"]].sum()
    return (per_step["n_flat"] / per_step["size"]).astype(float)


def zero_std_cause(data: RolloutRun, theirs: pd.Series, ours: pd.Series, steps: list[int]) -> str:
    """Why the trainer's zero-std share differs from the samples' count, in words (see the rule)."""
    low = float(theirs.loc[steps].mean()) < float(ours.loc[steps].mean())
    if low and float(theirs.loc[steps].max()) <= 0.05:
        return (
            "the trainer measured the reward's spread over the whole batch, not per group: TRL does so with "
            "scale_rewards='batch' or multi_objective_aggregation='normalize_then_sum' "
            "(trl/trainer/grpo_trainer.py), and then frac_reward_zero_std reads 0 unless every completion of "
            "the batch scored alike. The flat groups still get zero advantage: trust the samples' count"
        )
    reward = _logged(data, LOGGED_REWARD)
    if not reward.empty and data.has(S.REWARD):
        mine = data.per_step(data.samples[S.REWARD]).reindex(steps)
        if any(not _close(float(mine.get(s, math.nan)), float(reward.get(s, math.nan))) for s in steps):
            return (
                "rl-board's reward is not the trainer's at these steps (see trainer_reward_mismatch): "
                f"{likely_cause(data, steps)}"
            )
    return (
        "the samples are not all the trainer grouped: a completions table that keeps only the last "
        "generation batch of a logging step, or prompts that repeat within a step (rl-board groups by prompt "
        "text, the trainer by its own groups of num_generations)"
    )


@rollout_rule(
    "trainer_zero_std_mismatch",
    "warning",
    "The trainer's logged share of zero-variance groups (TRL frac_reward_zero_std) disagrees with the share "
    "counted from the samples (groups: a step's samples of one prompt, at least `min_group`). Steps are "
    "compared over a rolling `window`.",
    group=DISAGREE,
    source=A.LEARNS_NOTHING,
    tolerance=0.1,
    window=3,
    min_group=2,
    reward_tolerance=1e-6,
)
def _zero_std_mismatch(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    logged = logged_concept(data, A.ZERO_STD)
    if not logged or not (data.has(S.PROMPT) and data.has(S.REWARD)):
        return
    ours = zero_std_shares(data, max(2, int(ctx.params["min_group"])), ctx.params["reward_tolerance"])
    if ours.empty:
        return
    for tag, _alias, theirs in logged:
        diff, steps = _off_steps(theirs, ours, ctx)
        if not steps:
            continue
        first = steps[0]
        groups = _flat_groups(data, max(2, int(ctx.params["min_group"])), ctx.params["reward_tolerance"])
        flat = groups[(groups[S.STEP] == first) & groups["flat"]]
        prompt = str(flat[S.PROMPT].iloc[0]) if len(flat) else ""
        message = (
            f"the trainer logged {tag} = {theirs[first]:.0%} at step {first}, but {ours[first]:.0%} of its "
            f"grouped samples are in groups whose rewards are all equal; they disagree at {len(steps)} of "
            f"{len(diff)} steps. Likely cause: {zero_std_cause(data, theirs, ours, steps)}."
        )
        yield ctx.finding(data.run, steps, message, _link(first, text=prompt[-QUERY_CHARS:], tag=tag))
