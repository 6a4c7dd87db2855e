"""Train-vs-inference mismatch: the inference engine's log-probs against the trainer's, per token and sample.

When the engine that sampled the answers (vLLM, SGLang) and the trainer
disagree on a token's log-prob, the importance ratio PPO/GRPO computes is
off and training can silently diverge. A sample's mismatch is the mean and
max over its tokens of a per-token KL estimate.

Orientation: the tokens were drawn from the *engine* μ, so (as for the KL to
the reference, where they are drawn from the policy) the unbiased,
non-negative k3 estimate is of KL(μ‖π_train): ``kl.k3`` of the log-ratio
sampler − other = engine logp − trainer logp, i.e. exp(r) − 1 − r with
r = trainer logp − engine logp. This is the formula this module has always
used: it is right for engine samples (it would be wrong only if the samples
came from the trainer), so it is kept, now through ``kl.py``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rl_board.formats import schema as S
from rl_board.lazy import pc
from rl_board.rollouts import kl

TRAIN_LOGPROBS = "train_logprobs"
MEAN, MAX = "mismatch_mean", "mismatch_max"


def k3(engine: np.ndarray, trainer: np.ndarray) -> np.ndarray:
    """Per-token k3 KL(engine‖trainer) on tokens the engine sampled: exp(r) − 1 − r, r = trainer − engine."""
    return kl.k3(kl.log_ratio(engine, trainer))


def per_sample(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Mean and max k3 mismatch of every row (NaN where the two arrays are missing or differ in length)."""
    n = table.num_rows
    mean, top = np.full(n, np.nan), np.full(n, np.nan)
    if TRAIN_LOGPROBS not in table.column_names or S.LOGPROBS not in table.column_names:
        return mean, top
    engine, trainer = table.column(S.LOGPROBS), table.column(TRAIN_LOGPROBS)
    if not pa.types.is_list(trainer.type) and not pa.types.is_large_list(trainer.type):
        return mean, top
    same = pc.fill_null(pc.equal(pc.list_value_length(engine), pc.list_value_length(trainer)), False)
    rows = np.flatnonzero(same.to_numpy(zero_copy_only=False))
    if not len(rows):
        return mean, top
    picked_e, picked_t = engine.take(rows), trainer.take(rows)
    e = pc.list_flatten(picked_e).to_numpy(zero_copy_only=False).astype(np.float64)
    t = pc.list_flatten(picked_t).to_numpy(zero_copy_only=False).astype(np.float64)
    parent = pc.list_parent_indices(picked_e).to_numpy(zero_copy_only=False)
    values = k3(e, t)
    ok = np.isfinite(values)
    sums = np.bincount(parent[ok], weights=values[ok], minlength=len(rows))
    counts = np.bincount(parent[ok], minlength=len(rows))
    maxes = np.full(len(rows), -np.inf)
    np.maximum.at(maxes, parent[ok], values[ok])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean[rows] = np.where(counts > 0, sums / counts, np.nan)
    top[rows] = np.where(counts > 0, maxes, np.nan)
    return mean, top
