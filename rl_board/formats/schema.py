"""The rollout log format as the parsers and the cache see it: names and Arrow types.

Names are constants so code never spells string keys; which fields exist, of
which kind, comes from the field catalogue (``fields.py``), so a new log
field is one catalogue entry and the parse schema follows.
"""

from __future__ import annotations

import pyarrow as pa

from rl_board.formats import fields as F

STEP = "step"
PROMPT = "prompt"
RESPONSE = "response"
REWARD = "reward"
RESPONSE_TOKENS = "response_tokens"
LOGPROBS = "logprobs"
REF_LOGPROBS = "ref_logprobs"
VALUES = "values"
TOKEN_REWARDS = "token_rewards"
REF_RESPONSE = "ref_response"
REF_REWARD = "ref_reward"
GROUND_TRUTH = "ground_truth"
MESSAGES = "messages"
FINISH_REASON = "finish_reason"
VALID_REWARD = "valid_reward"
REF_VALID_REWARD = "ref_valid_reward"

TEXT_FIELDS = F.source_names(F.TEXT)
SCALAR_FIELDS = F.source_names(F.NUMBER)
FLOAT_LIST_FIELDS = F.source_names(F.FLOATS)
STRING_LIST_FIELDS = F.source_names(F.TOKENS)
REQUIRED_FIELDS = (STEP, PROMPT, RESPONSE, REWARD)

# Types as the JSON parser reads them (wide floats, exact ints).
PARSE_SCHEMA = pa.schema(
    [pa.field(STEP, pa.int64())]
    + [pa.field(name, pa.string()) for name in TEXT_FIELDS]
    + [pa.field(name, pa.float64()) for name in SCALAR_FIELDS]
    + [pa.field(RESPONSE_TOKENS, pa.list_(pa.string()))]
    + [pa.field(name, pa.list_(pa.float64())) for name in FLOAT_LIST_FIELDS]
)
KNOWN_FIELDS = frozenset(PARSE_SCHEMA.names)

# Token arrays are kept as float32 in the cache: log-probs carry ~7 significant
# digits there, which is more than any chart or table shows, at half the bytes.
TOKEN_FLOAT = pa.float32()

# Columns the loader adds to every sample (prefixed "_" = bookkeeping).
FILE = "_file"
LINE = "_line"

# Per-sample columns derived at ingest (see derive.py).
N_TOKENS = "n_tokens"
N_LOGPROBS = "n_logprobs"
LENGTH_MISMATCH = "length_mismatch"
RESPONSE_CHARS = "response_chars"
REF_RESPONSE_CHARS = "ref_response_chars"
LOG_RATIO_MEAN = "log_ratio_mean"
LOG_RATIO_SUM = "log_ratio_sum"
KL_K2_MEAN = "kl_k2_mean"
KL_K2_SUM = "kl_k2_sum"
KL_MEAN = "kl_mean"  # k3, the default KL (see rollouts/kl.py)
KL_SUM = "kl_sum"
REWARD_GAP = "reward_gap"
VALID_REWARD_GAP = "valid_reward_gap"
NONFINITE_TOKENS = "nonfinite_tokens"

# A sample as a trajectory (``rollouts/trajectories.py``).
TURNS = "turns"
TOOL_CALLS = "n_tool_calls"
TOOL_ERRORS = "n_tool_errors"
TOOLS = "tools"
FINAL_ANSWER = "final_answer"
TRAJECTORY_FIELDS = (TURNS, TOOL_CALLS, TOOL_ERRORS, TOOLS, FINAL_ANSWER)
# Failure signals of an answer (``rollouts/signals.py``).
REPETITION = "repetition"
SCRIPTS = "scripts"
SIGNAL_FIELDS = (REPETITION, SCRIPTS)
# Tool calls a log counts without showing them as turns (open-instruct): JSON text,
# ``[{"name", "error"}, ...]``.
TOOL_CALL_LOG = "tool_call_log"
# Whether a rollout counted in training, and why not (``formats.kept``).
KEPT, DROPPED_REASON = "kept", "dropped_reason"

DERIVED_SAMPLE_FIELDS = (
    N_TOKENS,
    N_LOGPROBS,
    LENGTH_MISMATCH,
    RESPONSE_CHARS,
    REF_RESPONSE_CHARS,
    LOG_RATIO_MEAN,
    LOG_RATIO_SUM,
    KL_K2_MEAN,
    KL_K2_SUM,
    KL_MEAN,
    KL_SUM,
    REWARD_GAP,
    VALID_REWARD_GAP,
    NONFINITE_TOKENS,
    *TRAJECTORY_FIELDS,
    *SIGNAL_FIELDS,
)

# Per-token arrays derived at ingest, kept beside the logged ones: the log-ratio taken in float64
# before the token arrays are narrowed to TOKEN_FLOAT (a small log-ratio keeps its relative precision
# in float32; the difference of two narrowed log-probs does not).
TOKEN_LOG_RATIO = "token_log_ratio"
DERIVED_TOKEN_LISTS = (TOKEN_LOG_RATIO,)

# Per-token metrics a token view can colour by, in display order.
TOKEN_METRICS = F.token_metrics()

# Per-step statistics: summary column prefix -> per-sample column it summarises.
STEP_STAT_SOURCES = {f.name: f.of for f in F.at(F.STEP) if f.of}
STEP_STATS = ("mean", "std", "min", "max")

# Per-sample columns that are numbers (sortable, range-filterable).
NUMERIC_SAMPLE_FIELDS = SCALAR_FIELDS + DERIVED_SAMPLE_FIELDS
