"""Scalar health rules: patterns that pick input tags, and the checks registered with `scalar_rule`.

Importing this module registers the rules, and those on the trainers' own diagnostics (`field_rules`,
imported at the end); `rl_board.health.checks` imports it, so every user of the registry sees them.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from rl_board.health.engine import (
    DIVERGING,
    NO_SIGNAL,
    Finding,
    Rule,
    RuleContext,
    RunSeries,
    finite_mask,
    register,
    robust_z,
    scalar_rule,
    steps_where,
)
from rl_board.metrics import aliases
from rl_board.where import Where

# --------------------------------------------------------------------------- scalar rules
# Tag patterns (regex, searched in the full tag) for each input a rule needs.

VALUE_LOSS = (r"^ppo/loss/value$", r"^critic/(loss|vf_loss)$", r"(^|/)value_loss(_avg)?$")
RATIO_MEAN = (r"(^|/)(ppo_)?ratio_mean$",)
RATIO_MAX = (r"(^|/)(ppo_)?ratio_max$",)
RATIO_HIST = (r"^ppo/policy/ratio$", r"(^|/)ratio$")
POLICY_CLIPFRAC = (r"^ppo/policy/clipfrac$", r"^actor/(pg_|ppo_ratio_)?clipfrac$", r"(^|/)clipfrac_avg$")
APPROX_KL = (r"^ppo/policy/approxkl$", r"^actor/(approxkl|ppo_kl)$", r"(^|/)approx_kl(_avg)?$")
REF_KL = (r"^objective/kl$", r"^actor/(kl_loss|reward_kl_penalty)$", r"^critic/kl$")
KL_COEF = (r"^objective/kl_coef$", r"^actor/(kl_coef|reward_kl_penalty_coeff)$", r"(^|/)kl_(ctl|coeff?)$")
ENTROPY = aliases.patterns(aliases.ENTROPY)  # every trainer's name (the alias tables the glossary reads)
REWARD = (
    r"^env/reward_mean$",
    r"^critic/(score|rewards)/mean$",
    r"^ppo/mean_scores$",
    r"^val/score/mean$",
    r"(^|/)reward_mean$",
)


def _finite(series: pd.Series) -> pd.Series:
    """The series without NaN/Inf points (rules other than non_finite look at real numbers only)."""
    return series[finite_mask(series)]


def _window(ctx: RuleContext, key: str = "window") -> int:
    """An integer window length of at least 1."""
    return max(1, int(ctx.params[key]))


@scalar_rule("non_finite", "error", "A metric became NaN or infinite.", group=DIVERGING)
def _non_finite(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    for tag, series in data.curves.items():
        bad = ~finite_mask(series)
        if bad.any():
            steps = steps_where(series, bad)
            yield ctx.finding(
                data.run,
                steps,
                f"{tag} is NaN/Inf at {len(steps)} step(s), first at step {steps[0]}",
                where=Where(step=int(steps[0]), tag=tag),
            )


@scalar_rule(
    "value_loss_spike",
    "warning",
    "Value loss jumped far above its recent median (robust z-score).",
    group=DIVERGING,
    window=20,
    z=8.0,
    min_points=8,
)
def _value_loss_spike(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    for tag, series in data.find(VALUE_LOSS):
        finite = _finite(series)
        z = robust_z(finite, _window(ctx), int(ctx.params["min_points"]))
        steps = steps_where(finite, z > ctx.params["z"])
        if steps:
            peak = int(z.idxmax())
            yield ctx.finding(
                data.run,
                steps,
                f"{tag} spiked {len(steps)} time(s); largest at step {peak} "
                f"({finite[peak]:.4g}, robust z {z[peak]:.1f})",
                where=Where(step=int(peak), tag=tag),
            )


@scalar_rule(
    "policy_ratio",
    "warning",
    "Policy probability ratio far from 1 (mean) or very large (max).",
    group=DIVERGING,
    mean_tolerance=0.2,
    max_limit=10.0,
)
def _policy_ratio(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    tol, limit = ctx.params["mean_tolerance"], ctx.params["max_limit"]
    means = data.find(RATIO_MEAN) + [(f"{t} (mean)", s) for t, s in _histogram_stats(data, "mean")]
    maxes = data.find(RATIO_MAX) + [(f"{t} (max)", s) for t, s in _histogram_stats(data, "max")]
    for tag, series in means:
        finite = _finite(series)
        steps = steps_where(finite, (finite - 1).abs() > tol)
        if steps:
            yield ctx.finding(
                data.run,
                steps,
                f"{tag} is more than {tol:g} away from 1 at {len(steps)} step(s)",
                where=Where(step=int(steps[0]), tag=tag.split(" ")[0]),
            )
    for tag, series in maxes:
        finite = _finite(series)
        steps = steps_where(finite, finite > limit)
        if steps:
            yield ctx.finding(
                data.run,
                steps,
                f"{tag} exceeds {limit:g} at {len(steps)} step(s) (peak {finite.max():.4g})",
                where=Where(step=int(steps[0]), tag=tag.split(" ")[0]),
            )


def _histogram_stats(data: RunSeries, stat: str) -> list[tuple[str, pd.Series]]:
    """Mean (bucket-centre weighted) or max (right edge of the last non-empty bucket) of ratio histograms."""
    out = []
    for tag, records in data.find_histograms(RATIO_HIST):
        values = {}
        for step, left, right, count in zip(
            records["step"], records["left"], records["right"], records["count"], strict=True
        ):
            counts = np.asarray(count, dtype=float)
            if counts.sum() <= 0:
                continue
            centres = (np.asarray(left, dtype=float) + np.asarray(right, dtype=float)) / 2
            if stat == "mean":
                values[int(step)] = float((centres * counts).sum() / counts.sum())
            else:
                values[int(step)] = float(np.asarray(right, dtype=float)[counts > 0].max())
        out.append((tag, pd.Series(values, dtype=float).sort_index()))
    return out


def _rolling_high(name: str, patterns: tuple[str, ...], what: str, limit: float) -> None:
    """Register a rule firing where the rolling mean of a statistic stays above a limit."""

    def check(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
        for tag, series in data.find(patterns):
            finite = _finite(series)
            rolling = finite.rolling(_window(ctx), min_periods=_window(ctx)).mean()
            steps = steps_where(finite, rolling > ctx.params["limit"])
            if steps:
                yield ctx.finding(
                    data.run,
                    steps,
                    f"{tag}: {what} averaged above {ctx.params['limit']:g} over "
                    f"{_window(ctx)} points at {len(steps)} step(s) (peak mean {rolling.max():.3g})",
                    where=Where(step=int(steps[0]), tag=tag),
                )

    register(
        Rule(
            name,
            "scalars",
            "warning",
            f"{what} high (rolling mean).",
            {"limit": limit, "window": 5.0},
            check,
            DIVERGING,
        )
    )


_rolling_high("clipfrac_high", POLICY_CLIPFRAC, "share of clipped tokens", 0.3)
_rolling_high("approxkl_high", APPROX_KL, "per-update approximate KL", 0.05)


@scalar_rule("kl_negative", "warning", "KL to the reference policy went negative.", tolerance=1e-3)
def _kl_negative(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    for tag, series in data.find(REF_KL):
        finite = _finite(series)
        steps = steps_where(finite, finite < -ctx.params["tolerance"])
        if steps:
            yield ctx.finding(
                data.run,
                steps,
                f"{tag} is negative at {len(steps)} step(s) (lowest "
                f"{finite.min():.4g}); KL to the reference should stay >= 0",
                where=Where(step=int(steps[0]), tag=tag),
            )


@scalar_rule(
    "kl_coef_rising",
    "warning",
    "Adaptive KL coefficient rising steadily.",
    group=DIVERGING,
    window=10,
    min_rise=0.5,
    min_up_fraction=0.8,
)
def _kl_coef_rising(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    window = _window(ctx)
    for tag, series in data.find(KL_COEF):
        finite = _finite(series)
        ups = (finite.diff() > 0).astype(float).rolling(window, min_periods=window).mean()
        rise = finite / finite.shift(window).abs().clip(lower=1e-12) - 1
        steps = steps_where(finite, (ups >= ctx.params["min_up_fraction"]) & (rise >= ctx.params["min_rise"]))
        if steps:
            yield ctx.finding(
                data.run,
                steps,
                f"{tag} rose by more than {ctx.params['min_rise']:.0%} over "
                f"{window} points at {len(steps)} step(s)",
                where=Where(step=int(steps[0]), tag=tag),
            )


@scalar_rule(
    "entropy_collapse",
    "warning",
    "Policy entropy fell to a small fraction of its early level.",
    group=NO_SIGNAL,
    early_points=5,
    fraction=0.1,
    window=5,
)
def _entropy_collapse(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    for tag, series in data.find(ENTROPY):
        finite = _finite(series)
        if len(finite) <= int(ctx.params["early_points"]) or (finite < 0).any():
            # negative values: differential entropy of continuous actions, where "near 0" means nothing
            continue
        early = float(finite.iloc[: int(ctx.params["early_points"])].median())
        rolling = finite.rolling(_window(ctx), min_periods=1).median()
        steps = steps_where(
            finite,
            (rolling < ctx.params["fraction"] * early)
            & (np.arange(len(finite)) >= ctx.params["early_points"]),
        )
        if early > 0 and steps:
            yield ctx.finding(
                data.run,
                steps,
                f"{tag} fell below {ctx.params['fraction']:.0%} of its early level "
                f"({early:.3g}) from step {steps[0]}",
                where=Where(step=int(steps[0]), tag=tag),
            )


@scalar_rule(
    "reward_stalls_kl_rises",
    "warning",
    "Reward plateaued or declined after a peak while KL to the reference kept rising.",
    window=10,
    plateau_tolerance=0.1,
    decline_fraction=0.2,
    kl_rise=0.1,
)
def _reward_stalls_kl_rises(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    window = _window(ctx)
    for (rtag, reward), (ktag, kl) in ((r, k) for r in data.find(REWARD) for k in data.find(REF_KL)):
        both = pd.concat([_finite(reward), _finite(kl)], axis=1, keys=["r", "k"], join="inner")
        if len(both) < 2 * window:
            continue
        r_now, k_now = both["r"].rolling(window).mean(), both["k"].rolling(window).mean()
        r_before, k_before = r_now.shift(window), k_now.shift(window)
        scale = float(both["r"].std()) or 1e-12
        plateau = (r_now - r_before).abs() <= ctx.params["plateau_tolerance"] * scale
        peak = r_now.cummax()
        decline = (peak - r_now) > ctx.params["decline_fraction"] * (
            peak - float(both["r"].iloc[0])
        ).abs().clip(lower=1e-12)
        kl_up = (k_now - k_before) > ctx.params["kl_rise"] * k_before.abs().clip(lower=1e-12)
        steps = steps_where(both, (plateau | decline) & kl_up)
        if steps:
            yield ctx.finding(
                data.run,
                steps,
                f"{rtag} stopped improving (plateau or decline) while {ktag} kept "
                f"rising, from step {steps[0]} ({len(steps)} step(s))",
                where=Where(step=int(steps[0]), tag=rtag),
            )


from rl_board.health import field_rules  # noqa: E402, F401  (the trainers' own diagnostics register on import)
