"""Health rules on the failures answers repeat: a template spreading with high reward, loops, mixed scripts,
answers cut at the length cap. Each names the samples that make it fire (a link the step browser opens)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from rl_board.formats import schema as S
from rl_board.health.engine import Finding, RuleContext, steps_where
from rl_board.health.rollout_rules import RolloutRun, _link, rolling, rollout_rule
from rl_board.rollouts.patterns import LOOP


@rollout_rule(
    "template_spreading",
    "warning",
    "A family of near-identical answers spreads over the steps and earns more than the other answers "
    "(a reward-hacking template?).",
    window=3,
    min_share=0.1,
    min_rise=0.05,
    reward_margin=0.1,
)
def _template_spreading(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if data.families is None or data.families.empty or data.family_shares is None:
        return
    shares = data.family_shares.set_index(S.STEP)
    window = max(1, int(ctx.params["window"]))
    for family in data.families.to_dict("records"):
        name = family["template"]
        if name not in shares.columns or len(shares) < 2 * window:
            continue
        curve = shares[name]
        smooth = rolling(curve, ctx)
        early, late = float(curve.iloc[:window].mean()), float(smooth.iloc[-1])
        paid = family["reward_mean"] - family["reward_rest"] >= ctx.params["reward_margin"]
        if late >= ctx.params["min_share"] and late - early >= ctx.params["min_rise"] and paid:
            steps = steps_where(curve, smooth >= ctx.params["min_share"])
            message = (
                f"template {name} ({family['samples']} answers, e.g. {str(family['example'])[:60]!r}) grew "
                f"from {early:.0%} to {late:.0%} of the answers and earns {family['reward_mean']:.3g} "
                f"against {family['reward_rest']:.3g} for the rest: read it before trusting the reward."
            )
            yield ctx.finding(
                data.run,
                steps,
                message,
                _link(int(family["example_step"]), sample=int(family["example_sample"])),
            )


def _share_rule(data: RolloutRun, ctx: RuleContext, flags: np.ndarray) -> tuple[list[int], pd.Series]:
    share = data.per_step(data.samples.assign(_f=flags)["_f"].astype(float))
    smooth = rolling(share, ctx)
    return steps_where(share, smooth >= ctx.params["min_share"]), share


@rollout_rule(
    "loops",
    "warning",
    "Answers that loop a phrase (repetition at or above 0.5) make up a share of a step's answers.",
    window=3,
    min_share=0.05,
)
def _loops(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if not data.has(S.REPETITION):
        return
    steps, share = _share_rule(data, ctx, (data.samples[S.REPETITION] >= LOOP).to_numpy())
    if steps:
        worst = int(share[steps].idxmax())
        message = (
            f"{share[worst]:.0%} of the answers at step {worst} loop (repetition ≥ {LOOP}); the rolling "
            f"share is at least {ctx.params['min_share']:.0%} at {len(steps)} step(s). Degenerate repetition "
            "often runs to the length cap."
        )
        yield ctx.finding(
            data.run,
            steps,
            message,
            _link(worst, sort=S.REPETITION, desc=True, ranges={"repetition": (LOOP, None)}),
        )


@rollout_rule(
    "mixed_scripts",
    "warning",
    "Answers that switch writing systems (Latin+Han...) make up a share of a "
    "step's answers (language mixing).",
    window=3,
    min_share=0.05,
)
def _mixed_scripts(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if not data.has(S.SCRIPTS):
        return
    mixed = data.samples[S.SCRIPTS].fillna("").str.contains("+", regex=False).to_numpy()
    steps, share = _share_rule(data, ctx, mixed)
    if steps:
        worst = int(share[steps].idxmax())
        message = (
            f"{share[worst]:.0%} of the answers at step {worst} use more than one writing system; the "
            f"rolling share is at least {ctx.params['min_share']:.0%} at {len(steps)} step(s)."
        )
        yield ctx.finding(
            data.run, steps, message, _link(worst, sort=S.SCRIPTS, desc=True, contains={S.SCRIPTS: "+"})
        )


@rollout_rule(
    "cut_at_length",
    "warning",
    "Answers the generation cut at the length cap, without an end "
    "(finish_reason length), make up a share of a step's answers.",
    window=3,
    min_share=0.1,
)
def _cut_at_length(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if not data.has(S.FINISH_REASON):
        return
    steps, share = _share_rule(data, ctx, (data.samples[S.FINISH_REASON] == "length").to_numpy())
    if steps:
        worst = int(share[steps].idxmax())
        message = (
            f"{share[worst]:.0%} of the answers at step {worst} were cut at the length cap without an end; "
            f"the rolling share is at least {ctx.params['min_share']:.0%} at {len(steps)} step(s)."
        )
        yield ctx.finding(
            data.run, steps, message, _link(worst, sort=data.length or S.RESPONSE_CHARS, desc=True)
        )
