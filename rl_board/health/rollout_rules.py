"""Health checks on rollout logs: rules of kind "rollouts", one run at a time.

Each rule reads per-sample columns of a rollout run (`RolloutRun`, built from
a `RolloutStore`), reduces them to one number per step and judges a rolling
window of steps, so one odd step does not fire a rule on its own. Thresholds
are ordinary rule params: `rl-board.toml` (`[rules.<name>]`) or `--set
rule.param=value`, exactly like the scalar rules.

Every finding carries a `link` saying where to look, in the terms of the
step browser's URL state (`rl_board/ui/state.py`):

- `step`: the step to open;
- `sample`: a sample index within the step (the sample view);
- `sort` / `desc`: a per-sample column to sort the batch table by;
- `filters`: URL filter names -> values: `search` (text searched in prompt,
  response and ground truth) and `reward` / `kl` / `length` as `[low, high]`
  (either may be None; `length` is `n_tokens`, or `response_chars` when the run
  has no tokens, as the step browser's filter panel does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rl_board.formats import schema as S
from rl_board.health.engine import (
    DIVERGING,
    NO_SIGNAL,
    Finding,
    Rule,
    RuleContext,
    Settings,
    register,
    run_rules,
    steps_where,
)
from rl_board.metrics.stdout import read_text_metrics
from rl_board.metrics.trainer_state import read_trainer_state
from rl_board.sources.companions import newest_trainer_state
from rl_board.sources.roots import inside
from rl_board.where import Bounds, Where

if TYPE_CHECKING:  # the rules read frames; only from_store sees a store
    from rl_board.rollouts.store import RolloutStore

KIND = "rollouts"
COLUMNS = (
    S.REWARD,
    S.REF_REWARD,
    S.REWARD_GAP,
    S.LOG_RATIO_MEAN,
    S.N_TOKENS,
    S.RESPONSE_CHARS,
    S.NONFINITE_TOKENS,
    S.PROMPT,
    S.TURNS,
    S.TOOL_CALLS,
    S.TOOL_ERRORS,
    S.FINAL_ANSWER,
    S.FINISH_REASON,
    S.REPETITION,
    S.SCRIPTS,
)
QUERY_CHARS = 120


@dataclass
class RolloutRun:
    """One rollout run as the rules see it: per-sample rows sorted by step.

    `samples` has `step`, `sample` (index within the step) and whichever of
    `COLUMNS` the run holds; `length` names the length column (`n_tokens`,
    else `response_chars`, else None).
    """

    run: str
    samples: pd.DataFrame
    length: str | None
    logged: pd.DataFrame | None = None  # what the trainer logged beside the run (step, tag, value), if found
    reward_weights: dict[str, float] = field(default_factory=dict)  # the columns the reward was made of
    families: pd.DataFrame | None = None  # template families (rollouts/patterns.py), largest first
    family_shares: pd.DataFrame | None = None  # per step, each family's share of the step's answers

    @classmethod
    def from_store(cls, run: str, store: RolloutStore) -> RolloutRun:
        """Read the columns the rules need (never the token arrays), and the trainer's own metrics beside."""
        parts = store.reward_components
        present = [c for c in (*COLUMNS, *parts) if store.has(c)]
        frame = store.samples(columns=list(dict.fromkeys(present)))
        gaps = store.mismatch()
        if len(gaps):  # the trainer's log-probs beside the engine's: per-sample mismatch
            frame = frame.merge(gaps, on=[S.STEP, "sample"], how="left")
        return cls(
            run,
            frame,
            length_column(frame),
            logged_beside(store),
            store.reward_weights,
            store.pattern_families(),
            store.family_shares(),
        )

    @classmethod
    def from_frame(cls, run: str, samples: pd.DataFrame) -> RolloutRun:
        """From a hand-made frame (tests): `step` required, `sample` numbered when missing."""
        frame = samples.sort_values(S.STEP, kind="stable").reset_index(drop=True)
        if "sample" not in frame.columns:
            frame["sample"] = frame.groupby(S.STEP).cumcount()
        return cls(run, frame, length_column(frame))

    def has(self, column: str) -> bool:
        return column in self.samples.columns and bool(self.samples[column].notna().any())

    def per_step(self, values: pd.Series) -> pd.Series:
        """A per-sample Series averaged per step (NaN skipped; steps with no value dropped)."""
        return values.groupby(self.samples[S.STEP], sort=True).mean().dropna()


BESIDE_METRICS = "metrics.jsonl"  # lines of {"step": N, name: value, ...} (prime-rl's {out}/metrics.jsonl)
TRAINER_FOLDERS = ("completions", "rollouts")  # a trainer's rollouts in {out}/<this>, its metrics in {out}


def logged_beside(store: RolloutStore) -> pd.DataFrame | None:
    """The metrics a trainer logged beside this run (step, tag, value); None when there are none.

    Looked for only inside the folders the store may read: a Hugging Face trainer's
    ``checkpoint-N/trainer_state.json`` (TRL), and a ``metrics.jsonl`` of metric lines in the run's folder,
    or in its parent when the run's folder is the trainer's ``completions/`` or ``rollouts/`` (prime-rl
    writes ``{out}/metrics.jsonl`` beside ``{out}/rollouts/``). A metric file higher up belongs to no one
    run and is not paired.
    """
    outer = store.run_dir.name in TRAINER_FOLDERS
    base = store.run_dir.parent if outer else store.run_dir
    frames = []
    state = newest_trainer_state(base, store.allowed)
    if state is not None:
        frames.append(read_trainer_state(state, str(base)).scalars)
    for folder in dict.fromkeys((store.run_dir, base)):
        path = folder / BESIDE_METRICS
        if (store.allowed is None or inside(path, store.allowed)) and path.is_file():
            frames.append(read_text_metrics(path, str(folder)).committed.scalars)
    frames = [f[["step", "tag", "value"]] for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else None


def length_column(samples: pd.DataFrame) -> str | None:
    """The length the step browser filters on: tokens when known, else characters."""
    for name in (S.N_TOKENS, S.RESPONSE_CHARS):
        if name in samples.columns and samples[name].notna().any():
            return name
    return None


RolloutCheck = Callable[[RolloutRun, RuleContext], Iterator[Finding]]


def rollout_rule(
    name: str, severity: str, summary: str, *, group: str = "", source: str = "", **params: float
) -> Callable[[RolloutCheck], RolloutCheck]:
    """Decorator registering a rollout check `fn(run: RolloutRun, ctx) -> Iterable[Finding]` (``group`` and
    ``source`` as for ``engine.Rule``)."""

    def wrap(fn: RolloutCheck) -> RolloutCheck:
        register(Rule(name, KIND, severity, summary, dict(params), fn, group, source))
        return fn

    return wrap


def rolling(per_step: pd.Series, ctx: RuleContext) -> pd.Series:
    """Mean over the last `window` steps (over the steps so far at the start of a run)."""
    window = max(1, int(ctx.params["window"]))
    return per_step.rolling(window, min_periods=1).mean()


def _link(step: int, *, text: str = "", ranges: dict[str, Bounds] | None = None, **more: Any) -> Where:
    return Where(step=int(step), text=text, ranges=dict(ranges or {}), **more)


# --------------------------------------------------------------------------- rules


@rollout_rule(
    "rollout_kl_negative",
    "warning",
    "Mean k1 KL estimate (log-ratio to the reference) negative over a window of steps.",
    window=3,
    tolerance=1e-3,
)
def _kl_negative(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if not data.has(S.LOG_RATIO_MEAN):
        return
    per_step = data.per_step(data.samples[S.LOG_RATIO_MEAN])
    smooth = rolling(per_step, ctx)
    steps = steps_where(per_step, smooth < -ctx.params["tolerance"])
    if steps:
        worst = int(per_step[steps].idxmin())
        message = (
            f"mean log-ratio to the reference (k1 KL) is negative at {len(steps)} step(s), lowest "
            f"{per_step[worst]:.4g} at step {worst}; on samples drawn from the policy it should stay "
            ">= 0 (log-probs from another model, temperature or tokenisation?)"
        )
        yield ctx.finding(data.run, steps, message, _link(worst, sort=S.LOG_RATIO_MEAN, desc=False))


@rollout_rule(
    "logprob_mismatch",
    "warning",
    "The inference engine's log-probs drift from the trainer's (train-vs-inference mismatch).",
    group=DIVERGING,
    window=3,
    limit=1e-3,
)
def _logprob_mismatch(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if not data.has("mismatch_mean"):
        return
    per_step = data.per_step(data.samples["mismatch_mean"])
    smooth = rolling(per_step, ctx)
    steps = steps_where(per_step, smooth > ctx.params["limit"])
    if steps:
        worst = int(per_step[steps].idxmax())
        rows = data.samples[data.samples[S.STEP] == worst]
        sample = (
            int(rows.loc[rows["mismatch_max"].idxmax(), "sample"])
            if rows["mismatch_max"].notna().any()
            else None
        )
        message = (
            f"mean per-token mismatch (k3) between the trainer's and the engine's log-probs reaches "
            f"{per_step[worst]:.3g} at step {worst}; the rolling mean exceeds {ctx.params['limit']:g} at "
            f"{len(steps)} step(s). Importance ratios are off: check the engine's sampling settings, "
            "precision and weight sync."
        )
        yield ctx.finding(data.run, steps, message, _link(worst, sample=sample))  # Where.sample: None = unset


@rollout_rule(
    "below_reference",
    "warning",
    "Share of samples scoring below the reference model is not shrinking.",
    window=5,
    min_share=0.2,
    min_drop=0.05,
)
def _below_reference(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if not data.has(S.REWARD_GAP):
        return
    gap = data.samples[S.REWARD_GAP]
    per_step = data.per_step((gap < 0).astype(float).where(gap.notna()))
    window = max(1, int(ctx.params["window"]))
    if len(per_step) < 2 * window:
        return  # too short to tell a trend
    smooth = rolling(per_step, ctx)
    early = float(per_step.iloc[:window].mean())
    late_half = pd.Series(np.arange(len(per_step)) >= len(per_step) // 2, index=per_step.index)
    stuck = late_half & (smooth >= early - ctx.params["min_drop"]) & (smooth >= ctx.params["min_share"])
    steps = steps_where(per_step, stuck)
    if steps:
        last = steps[-1]
        message = (
            f"{smooth[last]:.0%} of samples score below the reference around step {last} "
            f"(first {window} steps: {early:.0%}); it should shrink as training goes on. "
            "Samples that never beat the reference deserve a read."
        )
        yield ctx.finding(data.run, steps, message, _link(last, sort=S.REWARD_GAP, desc=False))


def _correlations(data: RolloutRun, min_samples: int) -> pd.Series:
    """Per step: Pearson correlation of response length and reward (steps with too few samples left out)."""
    frame = data.samples[[S.STEP, data.length or "", S.REWARD]].dropna()
    frame.columns = [S.STEP, "length", "reward"]
    out = {}
    for step, group in frame.groupby(S.STEP, sort=True):
        if len(group) >= min_samples and group["length"].std() > 0 and group["reward"].std() > 0:
            out[int(step)] = float(np.corrcoef(group["length"], group["reward"])[0, 1])
    return pd.Series(out, dtype=float)


@rollout_rule(
    "length_hacking",
    "warning",
    "Response length and reward strongly correlated within steps (the policy may be paid for length).",
    window=3,
    limit=0.5,
    min_samples=8,
)
def _length_hacking(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if data.length is None or not data.has(S.REWARD):
        return
    corr = _correlations(data, max(3, int(ctx.params["min_samples"])))
    if corr.empty:
        return
    smooth = rolling(corr, ctx)
    steps = steps_where(corr, smooth > ctx.params["limit"])
    if steps:
        worst = int(corr[steps].idxmax())
        lengths = data.samples.loc[data.samples[S.STEP] == worst, data.length]
        long_from = float(np.nanquantile(lengths.to_numpy(dtype=float), 0.75))
        message = (
            f"length ({data.length}) and reward correlate above {ctx.params['limit']:g} (rolling mean "
            f"over {int(ctx.params['window'])} steps) at {len(steps)} step(s); strongest at step {worst} "
            f"(r = {corr[worst]:.2f}). Read the long, high-reward samples."
        )
        link = _link(worst, ranges={"length": (long_from, None)}, sort=S.REWARD, desc=True)
        yield ctx.finding(data.run, steps, message, link)


@rollout_rule(
    "truncation_high",
    "warning",
    "Many responses stop at the maximum length (truncated). max_length=0 takes the run's longest "
    "response in tokens; runs without tokens are checked only when max_length is set (in characters); "
    "steps with fewer than min_samples samples are not judged.",
    window=3,
    limit=0.1,
    max_length=0,
    min_samples=8,
)
def _truncation(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    given = float(ctx.params["max_length"])
    if data.length is None or (data.length != S.N_TOKENS and not given):
        return  # a character count is no generation limit: without max_length there is no cap to test
    lengths = data.samples[data.length].astype(float)
    cap = given or float(lengths.max())
    per_step = data.per_step((lengths >= cap).astype(float).where(lengths.notna()))
    sizes = lengths.groupby(data.samples[S.STEP]).count()
    per_step = per_step[sizes.reindex(per_step.index) >= ctx.params["min_samples"]]  # tiny batches say little
    steps = steps_where(per_step, rolling(per_step, ctx) > ctx.params["limit"])
    if steps:
        worst = int(per_step[steps].idxmax())
        source = "max_length" if given else "the run's longest response"
        message = (
            f"{per_step[worst]:.0%} of responses at step {worst} reach {cap:g} {_unit(data.length)} "
            f"({source}); the rolling share exceeds {ctx.params['limit']:.0%} at {len(steps)} step(s). "
            "Truncated answers tend to be judged unfinished."
        )
        yield ctx.finding(data.run, steps, message, _link(worst, ranges={"length": (cap, None)}))


def _unit(length: str) -> str:
    return "tokens" if length == S.N_TOKENS else "characters"


def _flat_groups(data: RolloutRun, min_group: int, tolerance: float) -> pd.DataFrame:
    """Per (step, prompt) group of at least `min_group` samples: its size and whether rewards are all
    equal."""
    frame = data.samples[[S.STEP, S.PROMPT, S.REWARD]].dropna()
    groups = frame.groupby([S.STEP, S.PROMPT], sort=False)[S.REWARD].agg(["size", "min", "max"]).reset_index()
    groups = groups[groups["size"] >= min_group]
    groups["flat"] = (groups["max"] - groups["min"]) <= tolerance
    return groups


@rollout_rule(
    "zero_variance_groups",
    "warning",
    "Many GRPO groups (samples of one prompt in a step) got identical rewards: no learning signal.",
    group=NO_SIGNAL,
    window=3,
    limit=0.5,
    min_group=2,
    tolerance=1e-9,
)
def _zero_variance(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if not (data.has(S.PROMPT) and data.has(S.REWARD)):
        return
    groups = _flat_groups(data, max(2, int(ctx.params["min_group"])), ctx.params["tolerance"])
    if groups.empty:
        return  # every prompt appears once per step: not a grouped run
    per_step = groups.groupby(S.STEP, sort=True)["flat"].mean()
    smooth = rolling(per_step, ctx)
    steps = steps_where(per_step, smooth > ctx.params["limit"])
    if steps:
        worst = int(per_step[steps].idxmax())
        flat = groups[(groups[S.STEP] == worst) & groups["flat"]]
        prompt = str(flat[S.PROMPT].iloc[0]) if len(flat) else ""
        message = (
            f"{per_step[worst]:.0%} of prompt groups at step {worst} have zero reward variance "
            f"({len(flat)} of {int((groups[S.STEP] == worst).sum())}); their advantages are all 0. "
            f"The rolling share exceeds {ctx.params['limit']:.0%} at {len(steps)} step(s)."
        )
        yield ctx.finding(data.run, steps, message, _link(worst, text=prompt[-QUERY_CHARS:]))


@rollout_rule(
    "nonfinite_tokens",
    "error",
    "NaN or Inf in per-token arrays (logprobs, ref_logprobs, values, token_rewards).",
)
def _nonfinite(data: RolloutRun, ctx: RuleContext) -> Iterator[Finding]:
    if not data.has(S.NONFINITE_TOKENS):
        return
    bad = data.samples[data.samples[S.NONFINITE_TOKENS].fillna(0) > 0]
    if bad.empty:
        return
    first = bad.iloc[0]
    steps = sorted({int(s) for s in bad[S.STEP]})
    step, index = int(first[S.STEP]), int(first["sample"])
    message = (
        f"{len(bad)} sample(s) in {len(steps)} step(s) hold NaN/Inf token values "
        f"({int(bad[S.NONFINITE_TOKENS].sum())} values); first at step {step}, sample {index}"
    )
    yield ctx.finding(data.run, steps, message, _link(step, sample=index))


# --------------------------------------------------------------------------- running


def check_rollouts(data: RolloutRun, *, settings: Settings | None = None) -> list[Finding]:
    """Run every enabled rollout rule on one run."""
    if data.samples.empty:
        return []
    return run_rules(KIND, data, settings=settings)
