"""What a correct reader must find in real trainer output, worked out from the files and the run's spec.

Nothing here imports rl-board: expectations come from the trainer's own files (read with pyarrow /
json), the reward function names and weights the run was given (``trainers/specs.py``) and the
trainer's own logged metrics.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

REL = 1e-5  # TRL and verl average in float32


def trl_steps(run: Path) -> dict[int, pd.DataFrame]:
    """``completions/completions_{step:05d}.parquet`` of one TRL output dir, by step (file order kept)."""
    out: dict[int, pd.DataFrame] = {}
    for path in sorted((run / "completions").glob("completions_*.parquet")):
        frame = pq.read_table(path).to_pandas()
        steps = set(frame["step"].tolist())
        assert len(steps) == 1, f"{path.name}: steps {steps}"
        step = steps.pop()
        assert path.name == f"completions_{step:05d}.parquet"
        out[int(step)] = frame.reset_index(drop=True)
    return out


def text_of(value: Any) -> str:
    """A TRL prompt / completion as text: the string, or the contents of its messages joined by newlines."""
    if isinstance(value, str):
        return value
    return "\n".join(str(m["content"]) for m in value)


def contents(value: Any) -> list[str]:
    """The message contents of a conversational prompt / completion (a plain string is one content)."""
    if isinstance(value, str):
        return [value]
    return [str(m["content"]) for m in value]


def weighted_reward(frame: pd.DataFrame, weights: dict[str, float]) -> np.ndarray:
    """TRL's reward per row: sum of weight x function value over the functions that scored it; NaN if none
    did."""
    values = frame[list(weights)].to_numpy(dtype=np.float64)
    w = np.array(list(weights.values()), dtype=np.float64)
    scored = ~np.isnan(values)
    total = np.where(scored, values * w, 0.0).sum(axis=1)
    return np.where(scored.any(axis=1), total, np.nan)


def nanmean(values: Any) -> float:
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if arr.size else math.nan


def zero_std_share(rewards: np.ndarray, group: int) -> float:
    """TRL's ``frac_reward_zero_std``: share of samples whose group's rewards (NaN left out) have zero std.

    A group with fewer than two scored samples has no std (NaN in TRL), so it does not count as zero.
    """
    flags = []
    for chunk in rewards.reshape(-1, group):
        kept = chunk[~np.isnan(chunk)]
        flags += [len(kept) >= 2 and float(np.ptp(kept)) == 0.0] * group
    return float(np.mean(flags))


def trl_log(run: Path) -> dict[int, dict[str, Any]]:
    """TRL's own per-step training logs (``trainer.state.log_history``), by step; the end-of-train summary
    left out."""
    history = json.loads((run / "log_history.json").read_text(encoding="utf-8"))
    return {int(h["step"]): h for h in history if "reward" in h}


def close(a: float | None, b: float | None, rel: float = REL) -> bool:
    """Equal within ``rel`` (NaN / None equal each other)."""
    a = math.nan if a is None else float(a)
    b = math.nan if b is None else float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-7)


def jsonl(path: Path) -> list[dict[str, Any]]:
    """JSON lines as Python's json reads them (bare NaN included)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_json_file(path: Path) -> Any:
    """A JSON document (a runner's side file such as ``batch_uids.json``)."""
    return json.loads(path.read_text(encoding="utf-8"))
