"""The field catalogue: every rollout field and derived column, once.

A field is known at one *level*: per token (a token view colours by it), per
sample (a column of the batch table) or per step (a curve of the overview,
built from a per-sample column). The same short name can live at two levels
("kl" is a token's k3 KL and the step curve of per-sample KL means), so a
field is looked up by level and name.

Labels, help, units, colours, whether a column can be sorted or range-filtered
and whether its colour scale is centred on zero live here and nowhere else:
tables, filters, charts, chips, metric cards and the CLI ask this module. A
new field is one entry in ``FIELDS``; a new *log* field also gets its parse
type from ``kind`` (see ``schema.py``, which derives its tuples from here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

TOKEN, SAMPLE, STEP = "token", "sample", "step"
# kinds: text (str), number (float), count (int), tokens (list[str]), floats (list[float]), other
TEXT, NUMBER, COUNT, TOKENS, FLOATS, IDS = "text", "number", "count", "tokens", "floats", "ids"


@dataclass(frozen=True)
class Field:
    """One field at one level, with everything a view needs to show it."""

    name: str
    level: str
    kind: str
    label: str
    help: str = ""
    unit: str = ""
    short: str = ""
    color: str = ""
    source: bool = False  # written by the trainer (else derived by rl-board)
    filter_key: str = ""  # the URL name of its range filter ("" = not range-filterable)
    diverging: bool = False  # colour scale centred on 0
    score: bool = False  # shown as a card in the sample view
    of: str = ""  # step level: the per-sample column it summarises
    optional: bool = False  # token level: only some logs have it (not part of every token table)

    @property
    def sortable(self) -> bool:
        return self.level == SAMPLE and self.kind in (TEXT, NUMBER, COUNT)

    @property
    def filterable(self) -> bool:
        return bool(self.filter_key)

    @property
    def title(self) -> str:
        """The label as a heading ("ref reward" -> "Ref reward")."""
        return self.label[:1].upper() + self.label[1:]

    @property
    def brief(self) -> str:
        return self.short or self.label


def _f(name: str, level: str, kind: str, label: str, **more: Any) -> Field:  # more: Field's other fields
    return Field(name, level, kind, label, **more)


BLUE, GREY, GREEN, AMBER, RED, PURPLE, SKY = (
    "#1f6feb",
    "#8b949e",
    "#2da44e",
    "#bf8700",
    "#cf222e",
    "#8250df",
    "#0969da",
)

FIELDS: tuple[Field, ...] = (
    # -- per sample, written by the trainer ------------------------------------------------
    _f("step", SAMPLE, COUNT, "step", source=True, help="Training step the sample was generated at."),
    _f("prompt", SAMPLE, TEXT, "prompt", source=True, help="The prompt given to the policy."),
    _f("response", SAMPLE, TEXT, "response", source=True, help="The policy's answer."),
    _f(
        "ref_response",
        SAMPLE,
        TEXT,
        "ref response",
        source=True,
        help="The reference model's answer to the same prompt.",
    ),
    _f("ground_truth", SAMPLE, TEXT, "ground truth", source=True, help="The expected answer."),
    _f(
        "messages",
        SAMPLE,
        TEXT,
        "conversation",
        source=True,
        help="The sample as chat messages (JSON): the prompt's turns, then the answer's.",
    ),
    _f(
        "finish_reason",
        SAMPLE,
        TEXT,
        "finish reason",
        source=True,
        help="Why the trajectory ended: stop, length, turn_limit, tool_budget, timeout, error or unknown.",
    ),
    _f(
        "reward",
        SAMPLE,
        NUMBER,
        "reward",
        source=True,
        color=BLUE,
        filter_key="reward",
        score=True,
        help="Sequence-level reward of the response.",
    ),
    _f(
        "ref_reward",
        SAMPLE,
        NUMBER,
        "ref reward",
        source=True,
        color=GREY,
        score=True,
        help="Reward of the reference model's response.",
    ),
    _f(
        "valid_reward",
        SAMPLE,
        NUMBER,
        "valid reward",
        source=True,
        color=GREEN,
        score=True,
        help="An extra reward (e.g. rule-based) of the response.",
    ),
    _f(
        "ref_valid_reward",
        SAMPLE,
        NUMBER,
        "ref valid reward",
        source=True,
        color=AMBER,
        score=True,
        help="The extra reward of the reference response.",
    ),
    _f(
        "response_tokens",
        SAMPLE,
        TOKENS,
        "response tokens",
        source=True,
        help="The response as token strings.",
    ),
    _f("logprobs", SAMPLE, FLOATS, "log-probs", source=True, help="Per-token log-prob under the policy."),
    _f(
        "ref_logprobs",
        SAMPLE,
        FLOATS,
        "ref log-probs",
        source=True,
        help="Per-token log-prob under the reference model.",
    ),
    _f("values", SAMPLE, FLOATS, "critic values", source=True, help="Critic value per token."),
    _f(
        "token_rewards",
        SAMPLE,
        FLOATS,
        "token rewards",
        source=True,
        help="Per-token reward used in training (KL penalty plus reward).",
    ),
    # read from trainers that log token ids (NeMo-RL, prime-rl); kept as the log's own columns
    _f(
        "response_token_ids",
        SAMPLE,
        IDS,
        "response token ids",
        help="The response as token ids; a tokenizer (serve --tokenizer) turns them into text.",
    ),
    _f(
        "train_logprobs",
        SAMPLE,
        FLOATS,
        "trainer log-probs",
        help="Per-token log-prob as the trainer computed it (the run's log-probs come from the inference "
        "engine).",
    ),
    # read from trainers that say which rollouts they trained on (prime-rl, NeMo-RL) or log advantages
    _f(
        "kept",
        SAMPLE,
        COUNT,
        "kept",
        help="True when the rollout counted in training; False when the trainer left it out (not in "
        "prime-rl's effective/, masked from the loss, failed) or its group's advantages were all zero.",
    ),
    _f(
        "dropped_reason",
        SAMPLE,
        TEXT,
        "dropped because",
        help="Why a rollout did not count in training (kept is False).",
    ),
    _f(
        "tool_call_log",
        SAMPLE,
        TEXT,
        "tool calls logged",
        help="The tool calls a trainer counted without logging them as turns (open-instruct): JSON, one "
        "{name, error} per call; counted in tool calls, tool errors and tools used.",
    ),
    # -- per sample, derived ---------------------------------------------------------------
    _f("sample", SAMPLE, COUNT, "sample #", help="Index of the sample within its step."),
    _f("file", SAMPLE, TEXT, "file", help="The log file the sample was read from."),
    _f("line", SAMPLE, COUNT, "line", help="Line of the sample in its file."),
    _f(
        "n_tokens",
        SAMPLE,
        COUNT,
        "length (tokens)",
        unit="tokens",
        filter_key="length",
        score=True,
        short="tokens",
        help="Response length in tokens.",
    ),
    _f("n_logprobs", SAMPLE, COUNT, "log-probs logged", help="How many per-token log-probs the line holds."),
    _f(
        "length_mismatch",
        SAMPLE,
        COUNT,
        "length mismatch",
        help="True when the response tokens and the log-probs differ in length.",
    ),
    _f(
        "response_chars",
        SAMPLE,
        COUNT,
        "length (chars)",
        unit="characters",
        filter_key="length",
        short="characters",
        help="Response length in characters.",
    ),
    _f(
        "ref_response_chars",
        SAMPLE,
        COUNT,
        "ref length (chars)",
        unit="characters",
        short="ref characters",
        help="Reference response length in characters.",
    ),
    _f(
        "log_ratio_mean",
        SAMPLE,
        NUMBER,
        "log-ratio (k1 KL, mean)",
        diverging=True,
        score=True,
        help="Mean over tokens of r = logp − ref_logp: the k1 KL estimate (unbiased; can be negative).",
    ),
    _f(
        "log_ratio_sum",
        SAMPLE,
        NUMBER,
        "log-ratio (k1 KL, sum)",
        diverging=True,
        score=True,
        help="Sum over tokens of r = logp − ref_logp (k1).",
    ),
    _f(
        "kl_k2_mean",
        SAMPLE,
        NUMBER,
        "KL (k2, mean)",
        score=True,
        help="Mean over tokens of the k2 KL estimate ½·r² with r = logp − ref_logp: never negative, low "
        'variance, biased upward once the KL is not small (verl\'s kl_penalty "mse").',
    ),
    _f("kl_k2_sum", SAMPLE, NUMBER, "KL (k2, sum)", score=True, help="Sum over tokens of the k2 KL ½·r²."),
    _f(
        "kl_mean",
        SAMPLE,
        NUMBER,
        "KL (k3, mean)",
        filter_key="kl",
        score=True,
        help="Mean over tokens of the k3 KL estimate exp(−r) − 1 + r with r = logp − ref_logp: unbiased for "
        "KL(policy‖reference) on tokens the policy sampled, never negative (verl's low_var_kl, TRL GRPO's "
        "kl).",
    ),
    _f(
        "kl_sum",
        SAMPLE,
        NUMBER,
        "KL (k3, sum)",
        score=True,
        help="Sum over tokens of the k3 KL exp(−r) − 1 + r: the sequence's KL to the reference.",
    ),
    _f(
        "token_log_ratio",
        SAMPLE,
        FLOATS,
        "log-ratio per token",
        help="r = logp − ref_logp per token, taken in float64 before the token arrays are stored as float32 "
        "(so a token's KL agrees with the sample's mean and sum); the input of the kl_k1/kl_k2/kl_k3 SQL "
        "macros.",
    ),
    _f(
        "reward_gap",
        SAMPLE,
        NUMBER,
        "reward gap",
        color=BLUE,
        diverging=True,
        score=True,
        help="reward − ref reward: positive beats the reference.",
    ),
    _f(
        "valid_reward_gap",
        SAMPLE,
        NUMBER,
        "valid reward gap",
        diverging=True,
        help="valid reward − ref valid reward.",
    ),
    _f(
        "mismatch_mean",
        SAMPLE,
        NUMBER,
        "train–inference mismatch (mean)",
        help="Mean over tokens of the k3 mismatch between the trainer's and the engine's log-probs.",
    ),
    _f(
        "mismatch_max",
        SAMPLE,
        NUMBER,
        "train–inference mismatch (max)",
        help="The largest per-token mismatch of the sample.",
    ),
    _f(
        "turns",
        SAMPLE,
        COUNT,
        "turns",
        filter_key="turns",
        help="Messages in the trajectory: the prompt's, the answers', tool results and observations (2 for a "
        "prompt and one answer).",
    ),
    _f(
        "n_tool_calls",
        SAMPLE,
        COUNT,
        "tool calls",
        filter_key="tool_calls",
        help="Tool calls the model made.",
    ),
    _f(
        "n_tool_errors",
        SAMPLE,
        COUNT,
        "tool errors",
        filter_key="tool_errors",
        help="Tool results that say the call failed.",
    ),
    _f("tools", SAMPLE, TEXT, "tools used", help="The tools the trajectory called, comma-separated."),
    _f(
        "final_answer",
        SAMPLE,
        COUNT,
        "final answer",
        help="True when the trajectory ends with an answer (an assistant turn with text and no open call).",
    ),
    _f(
        "repetition",
        SAMPLE,
        NUMBER,
        "repetition",
        filter_key="repetition",
        help="How much the answer repeats itself: the share of the word 3-grams of its last 128 words that "
        "repeat an earlier one there (0 for prose and for answers under 16 words, near 1 for a loop run to "
        "the length cap).",
    ),
    _f(
        "scripts",
        SAMPLE,
        TEXT,
        "scripts",
        help="The writing systems the answer uses (Latin, Han, Cyrillic...), digits and punctuation left "
        "out; two or more (Latin+Han) is language mixing.",
    ),
    _f(
        "template",
        SAMPLE,
        COUNT,
        "template family",
        help="The family of near-identical answers the answer belongs to in this run (T1 is the largest; "
        "empty: none): a template the policy repeats, often to please the reward. Worked out over the whole "
        "run when first asked for (the Patterns page, the template filter).",
    ),
    _f(
        "nonfinite_tokens",
        SAMPLE,
        COUNT,
        "non-finite token values",
        help="How many NaN or infinite values the token arrays hold.",
    ),
    # -- per token ---------------------------------------------------------------------------
    _f("token_reward", TOKEN, NUMBER, "token reward", diverging=True, help="Per-token reward."),
    _f(
        "log_ratio",
        TOKEN,
        NUMBER,
        "log-ratio (k1)",
        short="log-ratio",
        diverging=True,
        help="r = logp − ref_logp of the token: the k1 KL estimate.",
    ),
    _f(
        "kl",
        TOKEN,
        NUMBER,
        "KL (k3)",
        help="exp(−r) − 1 + r with r the token's log-ratio: the k3 KL estimate (unbiased, never negative).",
    ),
    _f("kl_k2", TOKEN, NUMBER, "KL (k2)", help="½·r² with r the token's log-ratio: the k2 KL estimate."),
    _f("value", TOKEN, NUMBER, "critic value", short="value", diverging=True, help="The critic's value."),
    _f("logp", TOKEN, NUMBER, "log-prob", short="logp", help="Log-prob of the token under the policy."),
    _f("ref_logp", TOKEN, NUMBER, "ref log-prob", short="ref logp", help="Log-prob under the reference."),
    _f("prob", TOKEN, NUMBER, "prob", help="Probability of the token under the policy."),
    _f("ref_prob", TOKEN, NUMBER, "ref prob", help="Probability of the token under the reference."),
    _f(
        "advantage",
        TOKEN,
        NUMBER,
        "advantage",
        optional=True,
        diverging=True,
        help="The advantage the trainer gave the token (GRPO: the sample's, on every response token).",
    ),
    _f(
        "entropy",
        TOKEN,
        NUMBER,
        "entropy",
        optional=True,
        help="Entropy of the policy's next-token distribution at the token, as the trainer logged it.",
    ),
    _f(
        "loss_mask",
        TOKEN,
        NUMBER,
        "trained on (loss mask)",
        short="loss mask",
        optional=True,
        help="1 where the trainer's loss counts the token, 0 where it does not (e.g. tool output in an "
        "answer).",
    ),
    _f(
        "train_logp",
        TOKEN,
        NUMBER,
        "trainer log-prob",
        short="trainer logp",
        optional=True,
        help="Log-prob of the token as the trainer computed it (the run's log-probs come from the engine).",
    ),
    _f(
        "mismatch",
        TOKEN,
        NUMBER,
        "train–inference mismatch (k3)",
        short="mismatch",
        optional=True,
        help="k3 KL(engine‖trainer) of the token: exp(r) − 1 − r with r = trainer logp − engine logp "
        "(the engine sampled it); 0 when they agree.",
    ),
    # -- per step (summaries of a per-sample column: {name}_{mean,std,min,max,count}) ---------------
    _f(
        "reward",
        STEP,
        NUMBER,
        "reward",
        of="reward",
        color=BLUE,
        short="mean reward",
        help="Mean reward of the step's samples.",
    ),
    _f(
        "ref_reward",
        STEP,
        NUMBER,
        "ref reward",
        of="ref_reward",
        color=GREY,
        short="mean ref reward",
        help="Mean reward of the step's reference responses.",
    ),
    _f(
        "valid_reward",
        STEP,
        NUMBER,
        "valid reward",
        of="valid_reward",
        color=GREEN,
        short="mean valid reward",
        help="Mean extra reward of the step's samples.",
    ),
    _f(
        "ref_valid_reward",
        STEP,
        NUMBER,
        "ref valid reward",
        of="ref_valid_reward",
        color=AMBER,
        short="mean ref valid reward",
        help="Mean extra reward of the reference responses.",
    ),
    _f(
        "kl",
        STEP,
        NUMBER,
        "KL (k3, mean per sample)",
        of="kl_mean",
        color=RED,
        short="mean KL (k3)",
        help="Mean per-sample KL to the reference, k3 estimator exp(−r) − 1 + r (unbiased, never negative).",
    ),
    _f(
        "kl_k2",
        STEP,
        NUMBER,
        "KL (k2, mean per sample)",
        of="kl_k2_mean",
        color=RED,
        short="mean KL (k2)",
        help="Mean per-sample KL to the reference, k2 estimator ½·r² (never negative, biased upward).",
    ),
    _f(
        "log_ratio",
        STEP,
        NUMBER,
        "log-ratio (k1 KL, mean per sample)",
        of="log_ratio_mean",
        color=PURPLE,
        short="mean log-ratio (k1)",
        help="Mean per-sample log-ratio r = logp − ref_logp, the k1 KL estimate (negative means below the "
        "reference).",
    ),
    _f(
        "length",
        STEP,
        NUMBER,
        "response length (tokens)",
        of="n_tokens",
        color=SKY,
        short="tokens",
        unit="tokens",
        help="Average response length in tokens.",
    ),
    _f(
        "length_chars",
        STEP,
        NUMBER,
        "response length (chars)",
        of="response_chars",
        color=SKY,
        short="characters",
        unit="characters",
        help="Average response length in characters.",
    ),
    _f(
        "mismatch",
        STEP,
        NUMBER,
        "train–inference mismatch (mean per sample)",
        of="mismatch_mean",
        color=PURPLE,
        short="mismatch",
        help="Mean per-sample k3 mismatch between the trainer's and the engine's log-probs.",
    ),
    _f(
        "mismatch_max",
        STEP,
        NUMBER,
        "train–inference mismatch (max per sample)",
        of="mismatch_max",
        color=RED,
        short="mismatch max",
        help="Mean per-sample maximum token mismatch.",
    ),
    _f(
        "solved_share",
        STEP,
        NUMBER,
        "solved share (mean over groups)",
        short="solved",
        color=GREEN,
        help="Per group, the share of samples at the solved threshold; averaged over the step's groups.",
    ),
    _f(
        "zero_variance",
        STEP,
        NUMBER,
        "zero-variance groups (share)",
        short="zero variance",
        color=RED,
        help="The share of the step's groups whose samples all got the same reward.",
    ),
    _f(
        "ref_length_chars",
        STEP,
        NUMBER,
        "ref response length (chars)",
        of="ref_response_chars",
        color=GREY,
        short="ref characters",
        unit="characters",
        help="Average reference-response length in characters.",
    ),
)

_BY_KEY = {(f.level, f.name): f for f in FIELDS}
# Log fields with a fixed parse type; any other key (token ids among them) is kept as the log wrote it.
PARSED = frozenset(
    {
        "prompt",
        "response",
        "ref_response",
        "ground_truth",
        "messages",
        "finish_reason",
        "reward",
        "ref_reward",
        "valid_reward",
        "ref_valid_reward",
        "response_tokens",
        "logprobs",
        "ref_logprobs",
        "values",
        "token_rewards",
    }
)

# The batch table's known columns, in display order (then the run's own extra fields); the KL pair is
# the chosen estimator's (``table_columns``).
TABLE_COLUMNS = (
    "prompt",
    "response",
    "reward",
    "ground_truth",
    "valid_reward",
    "log_ratio_mean",
    "log_ratio_sum",
    "kl_mean",
    "kl_sum",
    "n_tokens",
    "response_chars",
    "repetition",
    "scripts",
    "template",
    "ref_response",
    "ref_reward",
    "ref_valid_reward",
    "reward_gap",
    "valid_reward_gap",
)
# Cards above a step's batch: step-level fields, each with how its change is coloured (st.metric's
# delta_color).
DeltaColour = Literal["normal", "inverse", "off"]
STEP_CARDS: tuple[tuple[str, DeltaColour], ...] = (
    ("reward", "normal"),
    ("ref_reward", "normal"),
    ("length", "off"),
    ("length_chars", "off"),
    ("ref_length_chars", "off"),
    ("kl", "inverse"),
)


# -- KL estimators: which columns show "KL" for each (the math is in rollouts/kl.py) -----------------------


@dataclass(frozen=True)
class KLEstimator:
    """One estimator of KL(policy‖reference) and the column it fills at each level."""

    name: str  # k1, k2, k3: also its value in the URL (kl_estimator=k2)
    formula: str  # of r = logp − ref_logp
    help: str
    token: str  # per-token metric
    mean: str  # per-sample mean over tokens
    sum: str  # per-sample sum over tokens
    step: str  # per-step curve (mean of the per-sample means)

    @property
    def label(self) -> str:
        return f"{self.name} · {self.formula}"


KL_ESTIMATORS = (
    KLEstimator(
        "k3",
        "exp(−r) − 1 + r",
        "Unbiased and never negative; what verl's low_var_kl and TRL's GRPO log. The default.",
        "kl",
        "kl_mean",
        "kl_sum",
        "kl",
    ),
    KLEstimator(
        "k2",
        "½·r²",
        "Never negative, low variance, biased upward once the KL is not small (verl's mse).",
        "kl_k2",
        "kl_k2_mean",
        "kl_k2_sum",
        "kl_k2",
    ),
    KLEstimator(
        "k1",
        "r (the log-ratio)",
        "Unbiased but noisy; a single sample can be negative (verl's kl).",
        "log_ratio",
        "log_ratio_mean",
        "log_ratio_sum",
        "log_ratio",
    ),
)
DEFAULT_KL_ESTIMATOR = "k3"
_KL_BY_NAME = {e.name: e for e in KL_ESTIMATORS}
_KL_ROLES = ("token", "mean", "sum", "step")
# Columns that stand for "KL" (k3's and k2's; k1's are the log-ratio, always shown as such) -> their role.
_KL_SLOTS = {getattr(e, role): role for e in KL_ESTIMATORS if e.name != "k1" for role in _KL_ROLES}


def kl_estimator(name: str | None = None) -> KLEstimator:
    """The estimator called ``name`` (k1, k2, k3; None = the default); ValueError naming the allowed ones."""
    found = _KL_BY_NAME.get(name or DEFAULT_KL_ESTIMATOR)
    if found is None:
        raise ValueError(f"unknown KL estimator {name!r}: use one of {', '.join(_KL_BY_NAME)}")
    return found


def as_kl(name: str, estimator: KLEstimator | str | None) -> str:
    """``name`` as the chosen estimator shows it: a KL column becomes that estimator's column of the same
    kind (``kl_mean`` -> ``kl_k2_mean`` for k2); other names, the log-ratio among them, stay. The estimator
    travels as the object it is (a name, or None for the default, is looked up)."""
    role = _KL_SLOTS.get(name)
    chosen = estimator if isinstance(estimator, KLEstimator) else kl_estimator(estimator)
    return getattr(chosen, role) if role else name


def table_columns(estimator: KLEstimator | str | None = None) -> tuple[str, ...]:
    """The batch table's known columns with the chosen estimator's KL mean and sum."""
    return tuple(dict.fromkeys(as_kl(name, estimator) for name in TABLE_COLUMNS))


def step_cards(estimator: KLEstimator | str | None = None) -> tuple[tuple[str, DeltaColour], ...]:
    """``STEP_CARDS`` with the chosen estimator's KL."""
    return tuple((as_kl(name, estimator), colour) for name, colour in STEP_CARDS)


def get(level: str, name: str) -> Field | None:
    """The field `name` at `level`, or None for a name the catalogue does not know (a user's extra field)."""
    return _BY_KEY.get((level, name))


def known(level: str, name: str) -> Field:
    """The field `name` at `level` where the caller names one of the catalogue's own (KeyError if not)."""
    return _BY_KEY[(level, name)]


def sample(name: str) -> Field | None:
    return get(SAMPLE, name)


def token(name: str) -> Field | None:
    return get(TOKEN, name)


def step(name: str) -> Field | None:
    return get(STEP, name)


def at(level: str) -> tuple[Field, ...]:
    """Every field of one level, in catalogue order."""
    return tuple(f for f in FIELDS if f.level == level)


def label(name: str, level: str = SAMPLE) -> str:
    """How to name a column or metric: the catalogue's label, else the name itself (user fields)."""
    found = get(level, name)
    return found.label if found else name


def color(name: str, level: str = STEP, default: str = BLUE) -> str:
    found = get(level, name)
    return found.color if found and found.color else default


def source_names(kind: str) -> tuple[str, ...]:
    """Log fields of one kind, in catalogue order (the parse schema is built from these)."""
    return tuple(
        f.name for f in FIELDS if f.source and f.kind == kind and f.name != "step" and f.name in PARSED
    )


def token_metrics() -> tuple[str, ...]:
    """Per-token metrics every token table has, in display order (optional ones come when a log has them)."""
    return tuple(f.name for f in at(TOKEN) if not f.optional)


def filter_field(
    key: str, present: set[str] | frozenset[str], estimator: KLEstimator | str | None = None
) -> Field | None:
    """The first per-sample column with range filter `key` ("reward", "kl", "length") that the run has;
    the KL filter is on the chosen estimator's per-sample mean."""
    found = next((f for f in at(SAMPLE) if f.filter_key == key and f.name in present), None)
    if found is None:
        return None
    return sample(as_kl(found.name, estimator)) if as_kl(found.name, estimator) in present else found


# Extra columns that are parts of the reward: TRL's reward functions, verl's acc, prime-rl's reward/<name>.
REWARD_PART = re.compile(r"reward|score|acc(uracy)?\b|correct|format|pass", re.I)


def is_reward_component(name: str) -> bool:
    """Whether a column the catalogue does not know looks like a part of the reward (by its name)."""
    return sample(name) is None and bool(REWARD_PART.search(name)) and not name.startswith("_")


FILTER_KEYS = tuple(dict.fromkeys(f.filter_key for f in FIELDS if f.filter_key))
