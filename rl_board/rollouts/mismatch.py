"""Train-vs-inference mismatch: the inference engine's log-probs against the trainer's, per token and sample.

When the engine that sampled the answers (vLLM, SGLang) and the trainer
disagree on a token's log-prob, the importance ratio PPO/GRPO computes is
off and training can silently diverge. With r = trainer logp − engine logp
per token, the per-token mismatch is k3 = exp(r) − 1 − r (never negative,
0 when they agree). A sample's mismatch is its mean and max over tokens.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rl_board.formats import schema as S

TRAIN_LOGPROBS = "train_logprobs"
MEAN, MAX = "mismatch_mean", "mismatch_max"


def k3(engine: np.ndarray, trainer: np.ndarray) -> np.ndarray:
    r = trainer - engine
    with np.errstate(over="ignore", invalid="ignore"):
        return np.expm1(r) - r


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
