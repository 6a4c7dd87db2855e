"""What each trainer calls the diagnostics the health rules judge: one alias table per trainer.

A `Concept` is one thing worth watching (the train-inference log-prob mismatch, the policy's entropy, the
share of prompt groups whose rewards do not vary, ...), described once: what it is, what healthy looks like
and who publishes that. A trainer's table (`Trainer`) maps each concept to the names that trainer logs it
under (`Name`), each with the file of the trainer's source that logs it and what differs from the concept
(its scale, the estimator, the value of a perfect match).

The glossary (`glossary.py`) builds its entries for these names from these tables, and the health rules
(`rl_board.health`) pick their input curves with `patterns(concept)`: a name is defined in one place.

A name is a glossary pattern: an exact tag, `{x}` for one path segment (or one of a fixed set, see
PLACEHOLDERS) and a trailing `*` for anything. `pattern_regex` compiles one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

PLACEHOLDERS = {
    "stat": r"(?:mean|max|min|std)",
    "phase": (
        r"(?:train_step|generate|model_update|compute_log_probs|do_checkpoint|compute_values|compute_rewards"
        r"|[^/]+)"
    ),
    "learner": r"(?:learner|learner_iter|learner_step)",
    "collector": r"(?:collector|collector_iter|collector_step)",
    "evaluator": r"(?:evaluator|evaluator_iter|evaluator_step)",
}


@lru_cache(maxsize=1024)
def pattern_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glossary pattern: `{x}` is one segment (or a known set), a trailing `*` is anything."""
    out, pos = [], 0
    for match in re.finditer(r"\{(\w+)\}|\*", pattern):
        out.append(re.escape(pattern[pos : match.start()]))
        out.append(".+" if match.group(0) == "*" else PLACEHOLDERS.get(match.group(1), r"[^/]*"))
        pos = match.end()
    out.append(re.escape(pattern[pos:]))
    return re.compile("^" + "".join(out) + "$")


# --------------------------------------------------------------------------- concepts


@dataclass(frozen=True)
class Concept:
    """One diagnostic, whatever a trainer calls it: the glossary's meaning and healthy text, and its
    sources (docs, issues, papers) that the glossary and the Health page cite."""

    key: str
    family: str
    meaning: str
    healthy: str
    sources: tuple[str, ...]


ENTROPY = "entropy"
MISMATCH = "mismatch"
ROLLOUT_KL = "rollout_kl"
IS_MEAN = "is_weight_mean"
IS_ESS = "is_weight_ess"
IS_STD = "is_weight_std"
CHI2_TOKEN = "chi2_token"
ZERO_STD = "zero_std_share"
CLIP_RATIO = "length_clip_ratio"

CUI_ENTROPY = "Cui et al. 2025, The Entropy Mechanism of RL for Reasoning LMs (arXiv 2505.22617)"
TRL_ENTROPY = "TRL docs, grpo_trainer.md (typical per-token entropy 2-10 nats)"
NEMO_GRPO = "NeMo-RL docs/guides/grpo.md (metrics) and docs/adding-new-models.md"
PRIME_TRAINING = "prime-rl docs/training.md"
VIME_64 = "vllm-project/vime #64 (slime's train_rollout_logprob_abs_diff: flat 0.011 vs 0.011 -> 0.036)"
OPEN_INSTRUCT_1473 = "allenai/open-instruct #1473 (logprob diff rising even at lr=0, crash near step 550)"
VERL_ROLLOUT_CORR = "verl docs/algo/rollout_corr.md (check_rollout_correction_health, Troubleshooting)"
LEARNS_NOTHING = "autocontext #1067, modelscope/ms-swift #4950 (every completion cut: zero gradient)"
CLIP_COUNTERS = (
    "verl #7823 (clip_ratio reads 0 when max_model_len binds; fix PR #7906), verl #7817 / PR #7821 "
    "(V1 measures against the batch's longest response), THUDM/slime PR #203 (a clip ratio always 0)"
)

CONCEPTS: dict[str, Concept] = {
    c.key: c
    for c in (
        Concept(
            ENTROPY,
            "entropy",
            "Mean per-token entropy of the policy on its own samples (nats).",
            "Declines slowly. Falling by most of its starting value within the first ~200 steps while the "
            "reward flattens is entropy collapse: the reward's ceiling is then already set (Cui et al.). "
            "A fast slide toward 0 means exploration has stopped.",
            (CUI_ENTROPY, TRL_ENTROPY),
        ),
        Concept(
            MISMATCH,
            "kl",
            "How far the inference engine's log-probs (vLLM, SGLang) of the sampled tokens are from the "
            "trainer's (FSDP, Megatron) for the same tokens: the train-inference mismatch.",
            "Flat and small. A steady rise means the weights the engine samples with drift from the "
            "trainer's (broken weight updates, refit or cache bugs) and foretells off-policy collapse; "
            "isolated spikes that return point at an inference or refit bug.",
            (NEMO_GRPO, PRIME_TRAINING, VIME_64, OPEN_INSTRUCT_1473),
        ),
        Concept(
            ROLLOUT_KL,
            "kl",
            "KL(rollout engine || trainer) on the engine's samples, k1 estimate: rollout logp - trainer "
            "logp per token, averaged (can be negative).",
            "Near 0; |kl| above 0.1 is a significant off-policy gap (verl's rollout-correction health "
            "check).",
            (VERL_ROLLOUT_CORR,),
        ),
        Concept(
            IS_MEAN,
            "off-policy",
            "Mean of the rollout-correction importance weights trainer prob / rollout prob (before "
            "truncation at rollout_is_threshold).",
            "Near 1; outside [0.5, 2.0] the engine and the trainer disagree systematically.",
            (VERL_ROLLOUT_CORR,),
        ),
        Concept(
            IS_ESS,
            "off-policy",
            "Effective sample size of the importance weights, as a share of the tokens (1: all weights "
            "equal).",
            "Above 0.3; lower means a few tokens carry the gradient (weight concentration).",
            (VERL_ROLLOUT_CORR,),
        ),
        Concept(
            IS_STD,
            "off-policy",
            "Spread (standard deviation) of the importance weights, clamped to the truncation range.",
            "At most 1; more means the weights are too spread to correct the gap.",
            (VERL_ROLLOUT_CORR,),
        ),
        Concept(
            CHI2_TOKEN,
            "off-policy",
            "Token-level chi-square divergence E[rho^2] - 1 of the importance weights rho = trainer prob / "
            "rollout prob: the variance the correction adds.",
            "At most 1; above it the distribution shift is severe.",
            (VERL_ROLLOUT_CORR,),
        ),
        Concept(
            ZERO_STD,
            "reward",
            "Share of prompt groups whose completions all got the same reward: their advantages are 0, "
            "so they teach nothing.",
            "Well below 1. Near 1 the step has no learning signal; with every completion cut at the "
            "length cap (clipped ratio 1) the maximum completion length is too small.",
            (LEARNS_NOTHING,),
        ),
        Concept(
            CLIP_RATIO,
            "length",
            "Share of responses cut at the maximum length (truncated before their end).",
            "Low. Near 1 every response is cut. The trainer's own count can be wrong: rl-board recounts it "
            "from the samples when it has them and says when the two disagree.",
            (LEARNS_NOTHING, CLIP_COUNTERS),
        ),
    )
}


# --------------------------------------------------------------------------- trainers' names


@dataclass(frozen=True)
class Name:
    """One name a trainer logs a concept under.

    ``file``: where in the trainer's source it is logged. ``baseline``: the value of a perfect match (1.0 for
    NeMo-RL's multiplicative error, else 0). ``limit``: the bound the trainer's authors publish (in the
    name's own units; None when they publish none) and ``limit_key`` the rule parameter that holds it.
    """

    name: str
    file: str
    note: str = ""
    baseline: float = 0.0
    limit: float | None = None
    limit_key: str = ""


@dataclass(frozen=True)
class Trainer:
    """One trainer's alias table: concept -> the names it logs it under.

    ``prefixes``: the prefixes a tracker adds to every name (transformers' W&B and TensorBoard callbacks
    write TRL's ``entropy`` as ``train/entropy``).
    """

    name: str
    repo: str
    names: dict[str, tuple[Name, ...]]
    prefixes: tuple[str, ...] = ("",)
    prefix_note: str = ""


TRL = Trainer(
    "TRL",
    "huggingface/trl",
    {
        ENTROPY: (
            Name("entropy", "trl/trainer/grpo_trainer.py (GRPO), trl/trainer/rloo_trainer.py (RLOO)"),
            Name("objective/entropy", "trl/experimental/ppo/ppo_trainer.py (also online DPO, XPO, Nash-MD)"),
            Name("ppo/policy/entropy", "trl/trainer/ppo_trainer.py before TRL 0.12 (removed in #2174)"),
        ),
        ZERO_STD: (
            Name(
                "frac_reward_zero_std",
                "trl/trainer/grpo_trainer.py",
                "A group is a prompt's num_generations completions; its std is compared to 0 with isclose.",
            ),
        ),
        CLIP_RATIO: (
            Name(
                "completions/clipped_ratio",
                "trl/trainer/grpo_trainer.py",
                "A completion counts as clipped when its last token is neither EOS nor padding.",
            ),
        ),
    },
    prefixes=("", "train/"),
    prefix_note="transformers' W&B and TensorBoard callbacks log it as train/<name> "
    "(transformers/integrations/integration_utils.py, rewrite_logs)",
)

VERL = Trainer(
    "verl",
    "volcengine/verl",
    {
        ENTROPY: (Name("actor/entropy", "verl/workers/actor/dp_actor.py"),),
        MISMATCH: (
            Name(
                "rollout_corr/k3_kl",
                "verl/trainer/ppo/rollout_corr_helper.py",
                "KL(rollout engine || trainer), k3 estimate exp(r) - r - 1 with r = trainer logp - rollout "
                "logp: the same number as rl-board's per-sample mismatch; never negative.",
            ),
        ),
        ROLLOUT_KL: (Name("rollout_corr/kl", "verl/trainer/ppo/rollout_corr_helper.py", limit=0.1),),
        IS_MEAN: (Name("rollout_corr/rollout_is_mean", "verl/trainer/ppo/rollout_corr_helper.py"),),
        IS_ESS: (Name("rollout_corr/rollout_is_eff_sample_size", "verl/trainer/ppo/rollout_corr_helper.py"),),
        IS_STD: (Name("rollout_corr/rollout_is_std", "verl/trainer/ppo/rollout_corr_helper.py"),),
        CHI2_TOKEN: (Name("rollout_corr/chi2_token", "verl/trainer/ppo/rollout_corr_helper.py"),),
        CLIP_RATIO: (
            Name(
                "response_length/clip_ratio",
                "verl/trainer/ppo/metric_utils.py",
                "Counts responses whose length equals the response tensor's width.",
            ),
        ),
    },
)

NEMO_LOSS = "nemo_rl/algorithms/loss/loss_functions.py (logged under train/ by nemo_rl/algorithms/grpo.py)"
NEMO_RL = Trainer(
    "NeMo-RL",
    "NVIDIA-NeMo/RL",
    {
        MISMATCH: (
            Name(
                "train/token_mult_prob_error",
                NEMO_LOSS,
                "Multiplicative error: the token mean of exp(|generation logp - trainer logp|); 1.0 is a "
                "perfect match, above 1.05 is worth investigating.",
                baseline=1.0,
                limit=1.05,
                limit_key="ratio_limit",
            ),
            Name(
                "train/gen_kl_error",
                NEMO_LOSS,
                "KL(generation || trainer) per token ('vllm-kl'); about 1e-3 is typical, above it worth a "
                "look.",
                limit=1e-3,
                limit_key="kl_limit",
            ),
        ),
        ENTROPY: (
            Name(
                "train/approx_entropy",
                NEMO_LOSS,
                "Estimated from the sampled tokens' log-probs.",
            ),
        ),
    },
)

PRIME_RL = Trainer(
    "prime-rl",
    "PrimeIntellect-ai/prime-rl",
    {
        MISMATCH: (
            Name(
                "mismatch_kl/all/mean",
                "src/prime_rl/trainer/rl/train.py (estimator in src/prime_rl/trainer/rl/loss.py)",
                "k3 KL between the trainer's current policy and the (older) inference policy, over trainable "
                "tokens; a sustained growing mean is the early-warning sign for off-policy collapse.",
            ),
        ),
        ENTROPY: (Name("entropy/all/mean", "src/prime_rl/trainer/rl/train.py"),),
    },
)

SLIME = Trainer(
    "slime",
    "THUDM/slime",
    {
        MISMATCH: (
            Name(
                "train/train_rollout_logprob_abs_diff",
                "slime/backends/megatron_utils/loss.py (logged under train/ by "
                "slime/backends/megatron_utils/model.py)",
                "Mean |trainer logp - rollout logp| per token; flat near 0.011 on a healthy run (vime #64).",
            ),
        ),
        ENTROPY: (
            Name(
                "train/entropy_loss",
                "slime/backends/megatron_utils/loss.py (logged under train/ by "
                "slime/backends/megatron_utils/model.py)",
                "Despite the name, the policy's mean entropy (the entropy bonus term).",
            ),
        ),
        CLIP_RATIO: (
            Name(
                "rollout/truncated_ratio",
                "slime/observability/rollout_metrics.py",
                "Share of samples whose status is TRUNCATED.",
            ),
            Name(
                "multi_turn/raw_response_length/response_length_clip_ratio",
                "slime/observability/train_metric_utils.py",
                "Share of responses at least rollout_max_response_len long (read 0 always before PR #203).",
            ),
        ),
    },
)

OPEN_INSTRUCT = Trainer(
    "open-instruct",
    "allenai/open-instruct",
    {
        MISMATCH: (
            Name(
                "debug/vllm_vs_local_logprob_diff_mean",
                "open_instruct/grpo_utils.py",
                "Mean |local logp - vLLM logp| per token.",
            ),
        ),
        ENTROPY: (
            Name(
                "policy/entropy_avg",
                "open_instruct/grpo_utils.py (also TRL's PPOv2 and RLOO before 0.12)",
            ),
        ),
    },
)

ROLL = Trainer(
    "ROLL",
    "alibaba/ROLL",
    {ENTROPY: (Name("critic/entropy/mean", "roll/utils/metrics/metrics_manager.py"),)},
)

DI_ENGINE = Trainer(
    "DI-engine",
    "opendilab/DI-engine",
    {
        ENTROPY: (
            Name(
                "{learner}/entropy_loss_avg",
                "ding/policy/ppo.py (averaged per iteration by the learner)",
                "For continuous actions this is differential entropy and can be negative.",
            ),
        ),
    },
)

TRAINERS: tuple[Trainer, ...] = (TRL, VERL, NEMO_RL, PRIME_RL, SLIME, OPEN_INSTRUCT, ROLL, DI_ENGINE)


@dataclass(frozen=True)
class Alias:
    """One logged name of a concept, with the trainer that logs it (a row of the tables above)."""

    concept: Concept
    trainer: Trainer
    name: Name
    prefix: str = ""

    @property
    def tag(self) -> str:
        return self.prefix + self.name.name


@lru_cache(maxsize=1)
def all_aliases() -> tuple[Alias, ...]:
    """Every (trainer, concept, name, prefix), in table order; a name two trainers share appears once."""
    out: dict[str, Alias] = {}
    for trainer in TRAINERS:
        for key, names in trainer.names.items():
            for name in names:
                for prefix in trainer.prefixes:
                    alias = Alias(CONCEPTS[key], trainer, name, prefix)
                    seen = out.get(alias.tag)
                    if seen is None:
                        out[alias.tag] = alias
                    elif seen.concept.key != key:
                        raise ValueError(f"{alias.tag!r} names two concepts: {seen.concept.key}, {key}")
    return tuple(out.values())


def aliases(concept: str) -> tuple[Alias, ...]:
    """The names of one concept, every trainer's."""
    if concept not in CONCEPTS:
        raise KeyError(f"unknown concept {concept!r}; known: {', '.join(CONCEPTS)}")
    return tuple(a for a in all_aliases() if a.concept.key == concept)


def patterns(concept: str) -> tuple[str, ...]:
    """Regexes (full-match) of a concept's names, for a rule's ``RunSeries.find``."""
    return tuple(pattern_regex(a.tag).pattern for a in aliases(concept))


def alias_of(tag: str, concept: str | None = None) -> Alias | None:
    """The alias a logged tag is (optionally: of one concept), or None."""
    for alias in all_aliases() if concept is None else aliases(concept):
        if pattern_regex(alias.tag).match(tag):
            return alias
    return None
