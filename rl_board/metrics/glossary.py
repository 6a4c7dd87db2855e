"""What a metric tag means, and what a healthy curve looks like.

Entries cover the metric families of ROLL, TRL, verl, DI-engine/LightZero,
NeMo-RL, prime-rl, slime and open-instruct. The diagnostics the health rules
judge (entropy, the train-inference mismatch, rollout-correction weights, the
zero-variance share, the length-clip ratio) are not written here: their
entries are built from the trainers' alias tables in `aliases.py`, which the
rules read too, so each is defined once, with the trainer's source file that
logs it and the doc, issue or paper that says what healthy is (`source`).

A pattern is an exact tag or uses placeholders: `{name}` stands for one path
segment (or one of a fixed set, see PLACEHOLDERS) and a trailing `*` for
anything. `explain(tag)` returns the first matching entry, trying exact names
before patterns; tags nobody described simply have no entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rl_board.metrics.aliases import PLACEHOLDERS, Alias, all_aliases, pattern_regex

__all__ = ["ENTRIES", "PLACEHOLDERS", "GlossaryEntry", "explain"]

REDUCER_SUFFIX = re.compile(r"@[A-Za-z_]+$")


@dataclass(frozen=True)
class GlossaryEntry:
    """One described metric (or family of metrics sharing a pattern); `source` cites who says what healthy
    is (empty for the hand-written entries)."""

    pattern: str
    family: str
    frameworks: tuple[str, ...]
    meaning: str
    healthy: str
    source: str = ""


def _e(pattern: str, family: str, frameworks: str, meaning: str, healthy: str) -> GlossaryEntry:
    """Compact constructor for the table below (frameworks as a comma list)."""
    return GlossaryEntry(pattern, family, tuple(f.strip() for f in frameworks.split(",")), meaning, healthy)


def _from_alias(alias: Alias) -> GlossaryEntry:
    """The entry of one trainer's name for a diagnostic: the concept's text, the trainer's note and file."""
    concept, name, trainer = alias.concept, alias.name, alias.trainer
    where = f"Logged by {trainer.name} in {name.file}"
    if alias.prefix:
        where += f"; {trainer.prefix_note}"
    meaning = " ".join(part for part in (concept.meaning, name.note, where + ".") if part)
    sources = "; ".join(concept.sources)
    return GlossaryEntry(
        alias.tag, concept.family, (trainer.name,), meaning, f"{concept.healthy} Source: {sources}.", sources
    )


HAND_WRITTEN: tuple[GlossaryEntry, ...] = (
    # --- rewards and scores
    _e(
        "env/reward_mean",
        "reward",
        "TRL",
        "Average reward the reward model gave this batch of responses.",
        "Climbs early, then flattens; a sudden jump with rising KL often means the policy found a loophole.",
    ),
    _e(
        "env/reward_std",
        "reward",
        "TRL",
        "Spread of rewards inside the batch.",
        "Stays positive; falling to ~0 means every response scores alike and the advantage signal vanishes.",
    ),
    _e(
        "env/reward_dist",
        "reward",
        "TRL",
        "Histogram of the batch's rewards.",
        "Shifts right and narrows late in training; a second far-right bump is worth reading the samples.",
    ),
    _e(
        "critic/score/{stat}",
        "reward",
        "ROLL, verl",
        "Raw task or environment score per sample (before any shaping).",
        "Mean rises over training; min/max show whether the gains are broad or a few outliers.",
    ),
    _e(
        "critic/rewards/{stat}",
        "reward",
        "ROLL, verl",
        "Reward after normalisation, clipping or the KL penalty.",
        "Follows the score; a widening gap from the score means the penalty is eating the gains.",
    ),
    _e(
        "val/score/{stat}",
        "reward",
        "ROLL",
        "Score on held-out validation prompts or environments.",
        "Should track the training score; training up while validation falls is overfitting or hacking.",
    ),
    _e(
        "val-core/*",
        "reward",
        "verl",
        "Validation score per data source and metric.",
        "Rises with the training score.",
    ),
    _e(
        "ppo/mean_scores",
        "reward",
        "TRL",
        "Mean raw score of the batch before the KL penalty.",
        "Rises, then levels off.",
    ),
    _e(
        "ppo/std_scores",
        "reward",
        "TRL",
        "Standard deviation of raw scores.",
        "Nonzero; a collapse to 0 starves learning.",
    ),
    _e(
        "ppo/mean_non_score_reward",
        "kl",
        "TRL",
        "The KL penalty part of the reward (negative KL times its coefficient); TRL's PPO takes the KL per "
        "token as the k1 estimate logp − ref_logp unless its kl_penalty / kl_estimator says otherwise.",
        "Small and negative; growing in size means the policy is drifting from the reference.",
    ),
    # --- KL and reference
    _e(
        "objective/kl",
        "kl",
        "TRL",
        "KL between the policy and the frozen reference: TRL's PPO, RLOO and online DPO sum the k1 estimate "
        '(logp − ref_logp) over each response and average over the batch (PPO with kl_estimator="k3": k3). '
        "rl-board's rollout KL is per token (mean) and k3 unless the sidebar says otherwise.",
        "Positive and rising slowly; negative values point at a sampling or estimator bug.",
    ),
    _e(
        "objective/kl_dist",
        "kl",
        "TRL",
        "Histogram of per-sample KL to the reference.",
        "Mostly small with a short tail.",
    ),
    _e(
        "kl",
        "kl",
        "TRL",
        "TRL's GRPO: the k3 estimate exp(ref_logp − logp) − (ref_logp − logp) − 1 per token, averaged over "
        "the batch's completion tokens (rl-board's default KL); TRL's RLOO logs the k1 estimate logp − "
        "ref_logp here.",
        "Small and slowly rising; k3 is never negative, so a negative value is an RLOO k1 estimate.",
    ),
    _e(
        "objective/kl_coef",
        "kl",
        "TRL",
        "Current weight of the KL penalty (changes when the adaptive controller is on).",
        "Stable or wandering; a steady climb often comes before instability.",
    ),
    _e(
        "actor/kl_loss",
        "kl",
        "ROLL, verl",
        "KL between the policy and the reference, used as a loss term. verl estimates it per token as set by "
        "actor kl_loss_type: low_var_kl (the default) or k3 = k3, kl or k1 = k1, mse or k2 = k2 (k3 clamped "
        "to ±10). ROLL: the same estimators, by its kl_loss_type.",
        "Small and positive; steady growth means the policy is moving far from where it started.",
    ),
    _e(
        "actor/kl_coef",
        "kl",
        "verl",
        "Weight of the KL loss term.",
        "Fixed unless a controller is configured.",
    ),
    _e(
        "actor/reward_kl_penalty",
        "kl",
        "verl",
        "KL to the reference when it is folded into the reward (use_kl_in_reward): per token by "
        "algorithm.kl_penalty, kl (k1, the default), low_var_kl (k3) or mse (k2); mean over each response, "
        "then over the batch.",
        "Positive and slowly rising.",
    ),
    _e(
        "critic/kl",
        "kl",
        "verl",
        "Older verl's name for actor/reward_kl_penalty: the in-reward KL to the reference, per token by "
        "algorithm.kl_penalty (kl = k1, the default; low_var_kl = k3; mse = k2), mean over each response.",
        "Positive and slowly rising.",
    ),
    _e(
        "actor/reward_kl_penalty_coeff",
        "kl",
        "verl",
        "Coefficient of the in-reward KL penalty.",
        "Constant, or adapting gently; a sustained climb is a warning sign.",
    ),
    _e(
        "critic/ref_log_prob/mean",
        "kl",
        "ROLL",
        "Mean log-probability of the sampled tokens under the reference model.",
        "Drifts slowly below the policy's own log-probability.",
    ),
    _e(
        "critic/old_log_prob/mean",
        "policy",
        "ROLL",
        "Mean log-probability of sampled tokens under the policy that generated them.",
        "Moves slowly; a sharp rise means the policy is getting very confident.",
    ),
    _e(
        "objective/logprobs",
        "policy",
        "TRL",
        "Histogram of token log-probabilities under the policy.",
        "Stable shape.",
    ),
    _e(
        "objective/ref_logprobs",
        "kl",
        "TRL",
        "Histogram of token log-probabilities under the reference.",
        "Stable shape.",
    ),
    # --- entropy: built from the alias tables (aliases.ENTROPY)
    # --- PPO update statistics
    _e(
        "ppo/policy/clipfrac",
        "ppo",
        "TRL",
        "Share of tokens whose probability ratio hit the PPO clip range.",
        "Typically below ~0.2; persistently high means updates are too large.",
    ),
    _e(
        "actor/clipfrac",
        "ppo",
        "ROLL",
        "Share of tokens clipped by the PPO objective.",
        "Low (well under 0.2).",
    ),
    _e(
        "actor/ppo_ratio_clipfrac",
        "ppo",
        "ROLL",
        "Share of tokens clipped on either side of the ratio range.",
        "Low.",
    ),
    _e(
        "actor/ppo_ratio_high_clipfrac",
        "ppo",
        "ROLL",
        "Share of tokens clipped because the ratio was too high.",
        "Low.",
    ),
    _e(
        "actor/ppo_ratio_low_clipfrac",
        "ppo",
        "ROLL",
        "Share of tokens clipped because the ratio was too low.",
        "Low.",
    ),
    _e(
        "actor/pg_clipfrac",
        "ppo",
        "verl",
        "Share of tokens clipped in the policy-gradient loss.",
        "Low (under ~0.2).",
    ),
    _e(
        "actor/pg_clipfrac_lower",
        "ppo",
        "verl",
        "Share clipped by the dual-clip lower bound (negative advantages).",
        "Near 0.",
    ),
    _e(
        "{learner}/clipfrac_avg",
        "ppo",
        "DI-engine",
        "Share of samples clipped by PPO, averaged over the iteration.",
        "Low; rising steadily means each update moves the policy too far.",
    ),
    _e(
        "ppo/policy/approxkl",
        "ppo",
        "TRL",
        "Approximate KL between the policy before and after this update.",
        "Small (around 0.01 or below); spikes mean an over-large step.",
    ),
    _e(
        "ppo/policy/policykl",
        "ppo",
        "TRL",
        "Another estimate of the per-update policy change.",
        "Small and positive.",
    ),
    _e("actor/approxkl", "ppo", "ROLL", "Approximate KL between old and new policy in the update.", "Small."),
    _e("actor/policykl", "ppo", "ROLL", "Per-update policy change, a second estimator.", "Small."),
    _e(
        "actor/ppo_kl",
        "ppo",
        "verl",
        "KL between the rollout policy and the updated policy.",
        "Small and positive.",
    ),
    _e(
        "{learner}/approx_kl_avg",
        "ppo",
        "DI-engine",
        "Approximate per-update KL, averaged over the iteration.",
        "Small (~0.01); a sustained rise means the learning rate or epochs are too aggressive.",
    ),
    _e(
        "ppo/policy/ratio",
        "ppo",
        "TRL",
        "Histogram of new/old token probability ratios.",
        "Centred tightly on 1; a long right tail (ratios of tens or hundreds) precedes collapse.",
    ),
    _e(
        "actor/ratio_{stat}",
        "ppo",
        "ROLL",
        "Summary of new/old probability ratios over tokens.",
        "Mean near 1, max modest; a huge max means some tokens became far likelier than when sampled.",
    ),
    _e("ppo/policy/advantages_mean", "ppo", "TRL", "Mean advantage of the batch.", "Near 0 after whitening."),
    _e("ppo/policy/advantages", "ppo", "TRL", "Histogram of advantages.", "Roughly symmetric around 0."),
    _e(
        "critic/advantages/{stat}",
        "ppo",
        "ROLL, verl",
        "Advantage statistics of the batch.",
        "Mean near 0, bounded.",
    ),
    _e(
        "critic/returns/{stat}",
        "value",
        "ROLL, verl",
        "Discounted return targets the critic learns.",
        "Follow the reward.",
    ),
    _e(
        "{learner}/adv_{stat}_avg",
        "ppo",
        "DI-engine",
        "Advantage statistics per iteration.",
        "Bounded, mean near 0.",
    ),
    # --- losses
    _e(
        "ppo/loss/policy",
        "loss",
        "TRL",
        "PPO clipped surrogate loss.",
        "Small, noisy around 0; no trend needed.",
    ),
    _e(
        "ppo/loss/value",
        "loss",
        "TRL",
        "Value-function (critic) loss.",
        "Falls then stays low; spikes or NaN mean trouble.",
    ),
    _e(
        "ppo/loss/total",
        "loss",
        "TRL",
        "Policy loss plus weighted value loss.",
        "Dominated by the value term; no spikes.",
    ),
    _e(
        "actor/pg_loss",
        "loss",
        "ROLL, verl",
        "Policy-gradient (surrogate) loss of the actor.",
        "Noisy around 0, bounded.",
    ),
    _e("actor/weighted_pg_loss", "loss", "ROLL", "Policy loss after per-sample weights.", "Like pg_loss."),
    _e(
        "actor/total_loss",
        "loss",
        "ROLL",
        "Everything the actor optimises: policy, KL and entropy terms.",
        "Bounded.",
    ),
    _e("actor/{kind}sft_loss", "loss", "ROLL", "Supervised loss mixed into RL training.", "Stays low."),
    _e(
        "critic/loss",
        "loss",
        "ROLL",
        "Critic loss: value prediction against the return.",
        "Decreases then flattens; no spikes.",
    ),
    _e(
        "critic/vf_loss",
        "loss",
        "verl",
        "Critic value-function loss.",
        "Decreases then flattens; spikes precede divergence.",
    ),
    _e(
        "{learner}/value_loss_avg",
        "loss",
        "DI-engine",
        "Critic loss averaged over the iteration.",
        "Large at first, then small; later spikes mean the value targets jumped.",
    ),
    _e(
        "{learner}/policy_loss_avg",
        "loss",
        "DI-engine",
        "PPO policy loss averaged over the iteration.",
        "Small, near 0.",
    ),
    _e(
        "{learner}/total_loss_avg",
        "loss",
        "DI-engine",
        "Weighted sum of policy, value and entropy losses.",
        "Falls, no spikes.",
    ),
    # --- value / critic
    _e(
        "critic/value",
        "value",
        "ROLL",
        "Mean value estimate of the policy that sampled the batch.",
        "Tracks the return.",
    ),
    _e("critic/vpred", "value", "ROLL", "Mean value prediction of the current critic.", "Tracks the return."),
    _e(
        "critic/values/{stat}",
        "value",
        "ROLL, verl",
        "Critic value estimates over the batch.",
        "Tracks returns.",
    ),
    _e("critic/clipfrac", "value", "ROLL", "Share of value predictions clipped by value clipping.", "Low."),
    _e("critic/vf_clipfrac", "value", "verl", "Share of value predictions clipped.", "Low."),
    _e("critic/error", "value", "ROLL", "Squared error of value against return.", "Falls."),
    _e(
        "critic/vf_explained_var",
        "value",
        "verl",
        "How much of the return's variance the critic explains.",
        "Rises toward 1; near or below 0 means the critic is no help.",
    ),
    _e(
        "ppo/val/var_explained",
        "value",
        "TRL",
        "Explained variance of returns by the value head.",
        "Rises toward 1.",
    ),
    _e(
        "ppo/val/*",
        "value",
        "TRL",
        "Value-head statistics (mean, variance, prediction, error, clipping).",
        "Stable.",
    ),
    _e("ppo/returns/*", "value", "TRL", "Mean and variance of return targets.", "Follow the reward."),
    _e(
        "{learner}/value_{stat}_avg",
        "value",
        "DI-engine",
        "Critic value statistics per iteration.",
        "Track returns.",
    ),
    _e(
        "critic/reward_clip_frac",
        "reward",
        "ROLL",
        "Share of rewards clipped.",
        "Low; high means the clip range is too narrow.",
    ),
    # --- sequence lengths
    _e(
        "tokens/response_length/{stat}",
        "length",
        "ROLL",
        "Response length in tokens.",
        "Changes gradually; hitting the maximum everywhere or shrinking to a few tokens is a red flag.",
    ),
    _e(
        "tokens/prompt_length/{stat}",
        "length",
        "ROLL",
        "Prompt length in tokens.",
        "Set by the data; stable.",
    ),
    _e("tokens/responses_len_{stat}", "length", "TRL", "Response length in tokens.", "Gradual change."),
    _e("tokens/queries_len_{stat}", "length", "TRL", "Query (prompt) length in tokens.", "Stable."),
    _e("tokens/*_dist", "length", "TRL", "Histogram of query or response lengths.", "Stable shape."),
    _e(
        "response_length/{stat}",
        "length",
        "verl",
        "Response length in tokens.",
        "Gradual change, not pinned at the limit.",
    ),
    _e("prompt_length/*", "length", "verl", "Prompt length statistics.", "Stable."),
    # --- optimiser, throughput, time, memory
    _e("actor/lr", "optimizer", "ROLL, verl", "Actor learning rate.", "Follows the schedule."),
    _e("critic/lr", "optimizer", "ROLL, verl", "Critic learning rate.", "Follows the schedule."),
    _e("ppo/learning_rate", "optimizer", "TRL", "Learning rate.", "Follows the schedule."),
    _e(
        "actor/grad_norm",
        "optimizer",
        "verl",
        "Actor gradient norm before clipping.",
        "Bounded; spikes precede NaN.",
    ),
    _e("critic/grad_norm", "optimizer", "verl", "Critic gradient norm.", "Bounded."),
    _e("{learner}/cur_lr_avg", "optimizer", "DI-engine", "Learning rate in use.", "Follows the schedule."),
    _e(
        "system/tps",
        "throughput",
        "ROLL",
        "Tokens processed per second.",
        "Steady; drops point at stragglers or memory pressure.",
    ),
    _e("system/samples", "throughput", "ROLL", "Samples processed so far.", "Grows linearly."),
    _e("perf/throughput", "throughput", "verl", "Tokens per second per GPU.", "Steady."),
    _e("perf/*", "throughput", "verl", "Throughput, token counts, MFU and memory of the step.", "Steady."),
    _e(
        "time/{phase}/{part}",
        "time",
        "ROLL",
        "Seconds spent in a pipeline phase (total, or execute/onload/offload).",
        "Steady per step; a growing phase is where a slowdown lives.",
    ),
    _e(
        "time/*",
        "time",
        "ROLL",
        "Seconds spent in one stage of the step (rollout, reference, advantages...).",
        "Steady.",
    ),
    _e(
        "timing_s/*",
        "time",
        "verl",
        "Seconds spent in a stage of the step (gen, ref, values, adv, update_actor...).",
        "Steady; generation usually dominates.",
    ),
    _e("timing_per_token_ms/*", "time", "verl", "Milliseconds per token for a stage.", "Steady."),
    _e(
        "memory/cpu/{phase}/*",
        "memory",
        "ROLL",
        "Host memory (RSS/VMS) at the start or end of a phase.",
        "Flat across steps; a staircase is a leak.",
    ),
    _e(
        "memory/{phase}/*",
        "memory",
        "ROLL",
        "GPU memory (allocated/reserved, peak) around a phase, per device.",
        "Peaks stay under the device size with headroom; creeping growth is a leak.",
    ),
    # --- DI-engine collector / evaluator
    _e(
        "{collector}/reward_std",
        "reward",
        "DI-engine",
        "Spread of the episode returns among the collected episodes.",
        "Some spread is normal while exploring; it narrows as the policy becomes consistent.",
    ),
    _e(
        "{evaluator}/reward_std",
        "reward",
        "DI-engine",
        "Spread of the evaluation episodes' returns.",
        "Shrinks as the policy becomes reliable; a wide spread late means success depends on the start.",
    ),
    _e(
        "{collector}/reward_{stat}",
        "reward",
        "DI-engine",
        "Episode return of the data-collection episodes.",
        "Rises over training (exploration noise keeps it below evaluation).",
    ),
    _e(
        "{evaluator}/reward_{stat}",
        "reward",
        "DI-engine",
        "Episode return in evaluation (deterministic policy).",
        "Rises; the best value marks ckpt_best.",
    ),
    _e(
        "{collector}/*",
        "collector",
        "DI-engine",
        "Collector bookkeeping: episodes, env steps, samples, speed.",
        "Counts grow steadily; speeds stay level.",
    ),
    _e("{evaluator}/*", "evaluator", "DI-engine", "Evaluation bookkeeping: episodes, steps, time.", "Level."),
    _e(
        "{learner}/*",
        "learner",
        "DI-engine",
        "Per-iteration learner statistic (averaged over the iteration).",
        "Bounded.",
    ),
)


ENTRIES: tuple[GlossaryEntry, ...] = tuple(_from_alias(a) for a in all_aliases()) + HAND_WRITTEN
"""The trainers' diagnostics first (from the alias tables), then the hand-written families."""


def _regex(pattern: str) -> re.Pattern[str]:
    """Compile a glossary pattern (see `aliases.pattern_regex`)."""
    return pattern_regex(pattern)


@lru_cache(maxsize=1)
def _index() -> tuple[dict[str, GlossaryEntry], tuple[tuple[re.Pattern[str], GlossaryEntry], ...]]:
    """Exact names in a dict; patterns in table order (specific ones are listed first)."""
    exact = {e.pattern: e for e in ENTRIES if not re.search(r"[{*]", e.pattern)}
    patterns = tuple((_regex(e.pattern), e) for e in ENTRIES if e.pattern not in exact)
    return exact, patterns


def explain(tag: str) -> GlossaryEntry | None:
    """The entry describing `tag` (a reducer suffix like `@sum` is ignored), or None."""
    name = REDUCER_SUFFIX.sub("", tag.strip())
    exact, patterns = _index()
    if name in exact:
        return exact[name]
    return next((entry for regex, entry in patterns if regex.match(name)), None)
