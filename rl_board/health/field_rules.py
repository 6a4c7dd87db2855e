"""Health rules on the trainers' own diagnostics, judged by the numbers their authors publish.

Each rule reads its input curves by concept from the trainers' alias tables
(`rl_board.metrics.aliases`, which the glossary reads too), so it sees TRL's,
verl's, NeMo-RL's, prime-rl's, slime's and open-instruct's names alike. Every
rule is causal: a point is judged only from the points logged up to it, so the
first step of a finding is the step at which a running job could have stopped.

- `logprob_mismatch_trend`: the train-inference log-prob mismatch rising, or
  staying above the limit its trainer publishes (NeMo-RL).
- `importance_weights_off`: verl's rollout-correction weights outside the
  bounds of verl's own health check.
- `learns_nothing`: (almost) every GRPO group's rewards identical, named as
  the length cap when every completion is also cut (TRL).
- `early_entropy_collapse`: entropy losing most of its value in the first
  ~200 steps (Cui et al. 2025).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rl_board.health.engine import (
    DIVERGING,
    NO_SIGNAL,
    Finding,
    RuleContext,
    RunSeries,
    scalar_rule,
    steps_where,
)
from rl_board.metrics import aliases as A
from rl_board.where import Where

REWARD_TAGS = (  # what the entropy rule quotes as the reward meanwhile (it does not judge it)
    r"^(train/)?reward$",  # TRL GRPO
    r"^env/reward_mean$",
    r"^critic/score/mean$",
    r"^ppo/mean_scores$",
    r"^reward/mean$",
    r"^rollout/raw_reward$",
    r"(^|/)reward_mean$",
)


@dataclass(frozen=True)
class Curve:
    """One input curve: its tag, the alias (trainer and concept) it is, its finite points by step."""

    tag: str
    alias: A.Alias
    values: pd.Series

    @property
    def who(self) -> str:
        return f"{self.tag} ({self.alias.trainer.name})"


def curves(data: RunSeries, concept: str) -> list[Curve]:
    """The run's curves of one concept (every trainer's name for it), NaN/Inf points dropped."""
    out = []
    for tag, series in data.find(A.patterns(concept)):
        alias = A.alias_of(tag, concept)
        finite = series[np.isfinite(series.to_numpy(dtype=float))]
        if alias is not None and len(finite):
            out.append(Curve(tag, alias, finite.astype(float)))
    return out


def sustained(mask: pd.Series, points: int) -> pd.Series:
    """True where `mask` has held for at least `points` consecutive points (up to and including this one)."""
    held = mask.astype(int).groupby((~mask).cumsum()).cumsum()
    return held >= max(1, points)


def rolling_median(values: pd.Series, window: int) -> pd.Series:
    """Median of the last `window` points (NaN until there are that many): a spike moves it by nothing."""
    return values.rolling(max(1, window), min_periods=max(1, window)).median()


def _int(ctx: RuleContext, key: str) -> int:
    return max(1, int(ctx.params[key]))


def _span(steps: list[int]) -> str:
    return f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}-{steps[-1]}, {len(steps)} points"


# --------------------------------------------------------------------------- train-inference mismatch

MISMATCH_LIMITS = {  # the published limits, as rule parameters (ratio_limit=1.05, kl_limit=1e-3)
    a.name.limit_key: a.name.limit
    for a in A.aliases(A.MISMATCH)
    if a.name.limit_key and a.name.limit is not None
}


@scalar_rule(
    "logprob_mismatch_trend",
    "warning",
    "The train-inference log-prob mismatch the trainer logs (NeMo-RL token_mult_prob_error / gen_kl_error, "
    "prime-rl mismatch_kl, slime train_rollout_logprob_abs_diff, open-instruct vllm_vs_local_logprob_diff, "
    "verl rollout_corr/k3_kl) rises above its own history, or stays above the limit NeMo-RL publishes. "
    "Judged on the median of the last `window` points.",
    group=DIVERGING,
    source="; ".join(A.CONCEPTS[A.MISMATCH].sources),
    window=12,
    early_points=20,
    rise=0.3,
    z=7.0,
    sustain=3,
    floor=1e-4,
    **MISMATCH_LIMITS,
)
def _mismatch_trend(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    """A smoothed trend against the curve's own history, not one point.

    The rule judges the excess over a perfect match (the value minus 1.0 for NeMo-RL's multiplicative
    error, else the value; below `floor` counts as `floor`, so a rise among negligible numbers is no
    trend), on a log scale, where batch-to-batch noise is about the same size at any level.

    - Now: the median of the last `window` points. A spike that comes back moves it by nothing; a level
      must hold for more than half the window to count.
    - History: the median of every earlier point (at least `early_points` of them), and its spread (1.4826
      x the median distance from it). A healthy run's slow drift moves it along; the first half of a
      failure does not.
    - High: now exceeds history by a factor of 1 + `rise` AND by `z` spreads over sqrt(`window`) (about four
      standard deviations of a median of `window` noisy, correlated batches), or now exceeds the trainer's
      published limit (`ratio_limit` for token_mult_prob_error, `kl_limit` for gen_kl_error).
    - It fires once high for `sustain` points in a row, at the step where that completes.

    With the defaults a rise by a third (by half on a curve with 20% noise) is seen about `window`/2 +
    `sustain` points after it happens; a flat or slowly drifting curve with 5-20% noise and rare spikes
    stays quiet.
    """
    window, early_n, hold = _int(ctx, "window"), _int(ctx, "early_points"), _int(ctx, "sustain")
    for curve in curves(data, A.MISMATCH):
        values = curve.values
        if len(values) < early_n + window:
            continue
        excess = values - curve.alias.name.baseline
        logged = pd.Series(np.log(np.maximum(excess.to_numpy(), ctx.params["floor"])), index=values.index)
        history = logged.expanding(min_periods=early_n).median().shift(window)
        spread = 1.4826 * (logged - logged.expanding().median()).abs().expanding(min_periods=early_n).median()
        margin = np.maximum(
            np.log1p(ctx.params["rise"]), ctx.params["z"] * spread.shift(window) / np.sqrt(window)
        )
        now = rolling_median(logged, window)
        rising = now > history + margin
        key = curve.alias.name.limit_key
        limit = ctx.params[key] - curve.alias.name.baseline if key else np.inf
        level = rolling_median(excess, window)
        over = level > limit
        fired = sustained((rising | over).fillna(False), hold)
        steps = steps_where(values, fired)
        if not steps:
            continue
        first, peak = steps[0], int(level[fired].idxmax())
        shown = curve.alias.name.baseline
        before = float(np.exp(history[first])) if np.isfinite(history[first]) else float(excess.iloc[0])
        over_steps = steps_where(values, over & fired)
        above = (
            f" It is above the published limit {ctx.params[key]:g} from step {over_steps[0]}."
            if over_steps
            else ""
        )
        before_first = pd.Series(values.index < first, index=values.index)
        spikes = int(((excess > limit) & ~over.fillna(False) & before_first).sum()) if key else 0
        spiky = (
            f" Besides, {spikes} isolated point(s) went above {ctx.params[key]:g} and came back: "
            "NeMo-RL reads such spikes as an inference or weight-refit bug."
            if spikes
            else ""
        )
        message = (
            f"{curve.who} rose from {before + shown:.4g} (median of the points before) to "
            f"{level[first] + shown:.4g} (median of the last {window}) by step {first}, and to "
            f"{level[peak] + shown:.4g} at step {peak}; high at {_span(steps)}.{above}{spiky} "
            "A steady rise usually means the engine samples with weights that drift from the trainer's "
            "(a broken or partial weight update, a KV/prefix cache or CUDA graph not reset after it) and "
            "comes before off-policy collapse. Try: recompute the engine's and the trainer's log-probs at a "
            "fixed checkpoint with lr=0 (still rising: the weight sync is the bug, open-instruct #1473); "
            "check the refit path and the engine's cache reset; match precision (bf16 vs fp32 lm_head); "
            "meanwhile turn on rollout correction (truncated importance sampling or masking)."
        )
        yield ctx.finding(data.run, steps, message, Where(step=first, tag=curve.tag))


# --------------------------------------------------------------------------- rollout-correction weights

IS_CHECKS = (  # concept, param(s), how a smoothed value breaks the bound, what it reads as
    (A.IS_MEAN, ("mean_low", "mean_high"), "outside", "mean IS weight far from 1: systematic off-policy gap"),
    (A.IS_ESS, ("min_ess",), "below", "low effective sample size: a few tokens carry the gradient"),
    (A.IS_STD, ("max_std",), "above", "IS weights too spread"),
    (A.ROLLOUT_KL, ("max_kl",), "abs_above", "KL(rollout || trainer) shows a significant off-policy gap"),
    (A.CHI2_TOKEN, ("max_chi2",), "above", "chi-square divergence: severe distribution shift"),
)


@scalar_rule(
    "importance_weights_off",
    "error",
    "verl's rollout-correction metrics (rollout_corr/*) outside the bounds of verl's own health check: mean "
    "IS weight outside [0.5, 2.0], effective sample size below 0.3, std above 1, |kl| above 0.1, chi2_token "
    "above 1; judged on the median of the last `window` points.",
    group=DIVERGING,
    source=A.VERL_ROLLOUT_CORR,
    window=5,
    mean_low=0.5,
    mean_high=2.0,
    min_ess=0.3,
    max_std=1.0,
    max_kl=0.1,
    max_chi2=1.0,
)
def _importance_weights(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    """A bound broken by the rolling median of `window` points (more than half of them): one bad batch does
    not fire, a collapse does within about `window`/2 points."""
    window = _int(ctx, "window")
    broken: list[tuple[Curve, list[int], str]] = []
    for concept, keys, how, means in IS_CHECKS:
        for curve in curves(data, concept):
            smooth = rolling_median(curve.values, window)
            bound = [ctx.params[k] for k in keys]
            if how == "outside":
                bad, said = (smooth < bound[0]) | (smooth > bound[1]), f"outside [{bound[0]:g}, {bound[1]:g}]"
            elif how == "below":
                bad, said = smooth < bound[0], f"below {bound[0]:g}"
            elif how == "abs_above":
                bad, said = smooth.abs() > bound[0], f"|value| above {bound[0]:g}"
            else:
                bad, said = smooth > bound[0], f"above {bound[0]:g}"
            steps = steps_where(curve.values, bad)
            if steps:
                worst = smooth[steps].abs().idxmin() if how == "below" else smooth[steps].abs().idxmax()
                text = (
                    f"{curve.tag} {said} (median of {window} points) from step {steps[0]} ({_span(steps)}; "
                    f"worst {smooth[worst]:.3g} at step {int(worst)}): {means}"
                )
                broken.append((curve, steps, text))
    if not broken:
        return
    steps = sorted({s for _, found, _ in broken for s in found})
    first = min(broken, key=lambda b: b[1][0])
    message = (
        "; ".join(text for _, _, text in broken) + ". The engine's samples are too far off the trainer's "
        "policy for importance sampling to correct. Try (verl docs/algo/rollout_corr.md): check that the "
        "rollout log-probs reach the trainer (calculate_log_probs=True), tighten rollout_is_threshold or "
        "add rejection sampling (rollout_rs), switch sequence-level weights to geometric, and look for what "
        "makes the engine differ (precision, weight sync, staleness of async rollouts)."
    )
    yield ctx.finding(data.run, steps, message, Where(step=first[1][0], tag=first[0].tag))


# --------------------------------------------------------------------------- GRPO learns nothing


@scalar_rule(
    "learns_nothing",
    "error",
    "Almost every GRPO group's completions got the same reward (TRL frac_reward_zero_std near 1): zero "
    "advantages, zero gradient. With every completion also cut (completions/clipped_ratio near 1) the "
    "maximum completion length is too small.",
    group=NO_SIGNAL,
    source=A.LEARNS_NOTHING,
    window=5,
    zero_std_limit=0.9,
    clipped_limit=0.9,
)
def _learns_nothing(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    """The rolling mean of the zero-std share over `window` points at or above `zero_std_limit`."""
    window = _int(ctx, "window")
    clipped = curves(data, A.CLIP_RATIO)
    for curve in curves(data, A.ZERO_STD):
        smooth = curve.values.rolling(window, min_periods=window).mean()
        steps = steps_where(curve.values, smooth >= ctx.params["zero_std_limit"])
        if not steps:
            continue
        first = steps[0]
        cut = _clipped_share(clipped, curve, steps, window)
        seen = f"{curve.who} averaged {smooth[first]:.0%} over {window} points from step {first} "
        seen += f"(high at {_span(steps)})"
        if cut is not None and cut[1] >= ctx.params["clipped_limit"]:
            cause = (
                f", while {cut[0].tag} says {cut[1]:.0%} of the completions were cut at the length cap. "
                "Every completion stops before its answer, every group scores alike, the gradient is 0: "
                "max_completion_length is too small for this task (autocontext #1067, ms-swift #4950). "
                "Try: raise max_completion_length (or shorten the prompt / reasoning format), and read a few "
                "samples to see where they are cut."
            )
        else:
            also = f" ({cut[0].tag}: {cut[1]:.0%} cut)" if cut is not None else ""
            cause = (
                f"{also}. The groups' rewards do not vary, so their advantages and the gradient are 0. "
                "Usually the prompts are too hard or too easy for the model, or a reward function returns a "
                "constant (a parse failure scored 0). Try: score a few samples by hand, check the reward "
                "functions, filter prompts the model always or never solves, or sample more completions per "
                "prompt (num_generations)."
            )
        yield ctx.finding(data.run, steps, seen + cause, Where(step=first, tag=curve.tag))


def _clipped_share(
    clipped: list[Curve], zero_std: Curve, steps: list[int], window: int
) -> tuple[Curve, float] | None:
    """The length-clip ratio logged beside the zero-std share (the same tracker prefix first): its rolling
    mean's median over `steps`; None when the run logs none there."""
    for curve in sorted(clipped, key=lambda c: c.alias.prefix != zero_std.alias.prefix):
        share = curve.values.rolling(window, min_periods=1).mean().reindex(steps).median()
        if np.isfinite(share):
            return curve, float(share)
    return None


# --------------------------------------------------------------------------- early entropy collapse


@scalar_rule(
    "early_entropy_collapse",
    "error",
    "Policy entropy lost most of its starting value (`drop`) within the first `horizon` steps: the reward's "
    "ceiling is then already set (Cui et al. 2025). Judged on the median of the last `window` points.",
    group=NO_SIGNAL,
    source="; ".join(A.CONCEPTS[A.ENTROPY].sources),
    early_points=5,
    window=10,
    drop=0.5,
    horizon=200,
)
def _early_entropy_collapse(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    """Start level: the median of the first `early_points` points. A point fires when the rolling median of
    the last `window` points (more than half of them) is below (1 - `drop`) x the start level, no later
    than `horizon` steps after the first logged step. A clean run's entropy declines slowly (a fifth to a
    third over hundreds of steps); Cui et al. report the collapse as about three quarters of the entropy
    spent in the first ~200 steps, the reward flattening as it goes."""
    early_n, window = _int(ctx, "early_points"), _int(ctx, "window")
    for curve in curves(data, A.ENTROPY):
        values = curve.values
        if len(values) < early_n + window or (values < 0).any():
            continue  # negative: differential entropy of continuous actions, where a fraction means nothing
        start = float(values.iloc[:early_n].median())
        if start <= 0:
            continue
        smooth = rolling_median(values, window)
        since = values.index.to_numpy() - int(values.index[0])
        low = (smooth < (1 - ctx.params["drop"]) * start) & (since <= ctx.params["horizon"])
        steps = steps_where(values, low)
        if not steps:
            continue
        first = steps[0]
        gone = 1 - smooth[first] / start
        message = (
            f"{curve.who} fell from {start:.3g} (median of its first {early_n} points) to "
            f"{smooth[first]:.3g} (median of the last {window}) by step {first}: {gone:.0%} of it gone "
            f"{first - int(values.index[0])} steps in; low at {_span(steps)}.{_reward_context(data, first)} "
            "Cui et al. (arXiv 2505.22617) find the reward bought with entropy early caps it later "
            "(R = -a exp(H) + b): with the entropy spent, the reward plateaus. Try: a higher clip bound for "
            "the ratio (clip-higher, DAPO), Clip-Cov or KL-Cov on the high-covariance tokens (Cui et al.), "
            "an entropy bonus or target (TRL entropy_coef / entropy_target), a higher sampling temperature "
            "or a lower learning rate."
        )
        yield ctx.finding(data.run, steps, message, Where(step=first, tag=curve.tag))


def _reward_context(data: RunSeries, step: int) -> str:
    """How the reward moved up to `step` and since, in words ("" when the run logs no reward we know)."""
    found = data.find(REWARD_TAGS)
    if not found:
        return ""
    tag, series = found[0]
    finite = series[np.isfinite(series.to_numpy(dtype=float))]
    before, after = finite[finite.index <= step], finite[finite.index > step]
    if len(before) < 2:
        return ""
    text = f" Meanwhile {tag} went from {before.iloc[:3].mean():.3g} to {before.iloc[-3:].mean():.3g}"
    if len(after) >= 3:
        text += f" by then, and {after.iloc[-3:].mean():.3g} at the last step"
    return text + "."
