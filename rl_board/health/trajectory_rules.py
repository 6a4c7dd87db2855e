"""Health rules on agent trajectories: tools failing more, runs cut by their limits, runs that never answer.

Each reads the per-sample trajectory columns (``rollouts/trajectories.py``),
reduces them to one number per step, and judges a rolling window, so one odd
step does not fire a rule on its own. A run without tool calls or finish
reasons is not judged by the rules that need them.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from rl_board.formats import schema as S
from rl_board.health.engine import Finding, RuleContext, steps_where
from rl_board.health.rollout_rules import RolloutRun, _link, rolling, rollout_rule

CUT = ("turn_limit", "length", "tool_budget")  # finish reasons that mean a limit stopped the trajectory


def _rising(per_step: pd.Series, ctx: RuleContext) -> tuple[list[int], float]:
    """Steps where the rolling value rose at least ``min_rise`` above the first window's and is at least
    ``min_level``; and that first level."""
    window = max(1, int(ctx.params["window"]))
    if len(per_step) < 2 * window:
        return [], float("nan")
    smooth = rolling(per_step, ctx)
    early = float(per_step.iloc[:window].mean())
    late = np.arange(len(per_step)) >= window
    hit = (
        late
        & (smooth >= early + ctx.params["min_rise"]).to_numpy()
        & (smooth >= ctx.params["min_level"]).to_numpy()
    )
    return steps_where(per_step, hit), early


@rollout_rule(
    "tool_errors_rising",
    "warning",
    "The share of tool calls that fail is rising (the policy calls tools wrongly more often).",
    window=3,
    min_rise=0.1,
    min_level=0.2,
)
def _tool_errors_rising(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if not data.has(S.TOOL_CALLS) or not (data.samples[S.TOOL_CALLS] > 0).any():
        return
    by_step = data.samples.groupby(S.STEP, sort=True)
    calls = by_step[S.TOOL_CALLS].sum()
    rate = (by_step[S.TOOL_ERRORS].sum() / calls).where(calls > 0).dropna()
    steps, early = _rising(rate, ctx)
    if steps:
        last = steps[-1]
        message = (
            f"{rate[last]:.0%} of tool calls fail at step {last} (first steps: {early:.0%}); read the "
            "failing calls' arguments and results: a tool whose format the policy lost, or a sandbox down?"
        )
        yield ctx.finding(
            data.run,
            steps,
            message,
            _link(last, sort=S.TOOL_ERRORS, desc=True, ranges={"tool_errors": (1.0, None)}),
        )


@rollout_rule(
    "cut_by_limits_rising",
    "warning",
    "A rising share of trajectories is cut by the turn limit, the length cap or the tool budget.",
    window=3,
    min_rise=0.1,
    min_level=0.2,
)
def _cut_by_limits(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if not data.has(S.FINISH_REASON):
        return
    reasons = data.samples[S.FINISH_REASON]
    share = data.per_step(reasons.isin(CUT).astype(float).where(reasons.notna()))
    steps, early = _rising(share, ctx)
    if steps:
        last = steps[-1]
        rows = data.samples[data.samples[S.STEP] == last]
        causes = rows[S.FINISH_REASON].where(rows[S.FINISH_REASON].isin(CUT)).value_counts()
        which = ", ".join(f"{cause} {count}" for cause, count in causes.items())
        message = (
            f"{share[last]:.0%} of trajectories are cut at step {last} ({which}; first steps: {early:.0%}): "
            "the policy runs longer than its limits allow, so these end without the answer being scored "
            "as intended."
        )
        yield ctx.finding(data.run, steps, message, _link(last, sort=S.TURNS, desc=True))


@rollout_rule(
    "no_final_answer",
    "warning",
    "Many trajectories end without a final answer (the last turn is a tool call or a result, or empty).",
    window=3,
    min_share=0.25,
)
def _no_final_answer(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if not data.has(S.FINAL_ANSWER) or not data.has(S.TURNS) or not (data.samples[S.TURNS] > 2).any():
        return
    missing = data.per_step(1.0 - data.samples[S.FINAL_ANSWER].astype(float))
    smooth = rolling(missing, ctx)
    steps = steps_where(missing, smooth >= ctx.params["min_share"])
    if steps:
        worst = int(missing[steps].idxmax())
        message = (
            f"{missing[worst]:.0%} of trajectories at step {worst} end without a final answer; the rolling "
            f"share is at least {ctx.params['min_share']:.0%} at {len(steps)} step(s). Open them sorted "
            "by turns: cut by a limit, or a tool loop?"
        )
        yield ctx.finding(data.run, steps, message, _link(worst, sort=S.TURNS, desc=True))
