"""Synthetic rollout runs that look like a real PPO run going slightly wrong.

Used by ``rl-board demo``, the bundled ``rollout_samples/``, the tests and the
benchmarks. The story: reward climbs, KL to the reference grows, and from
mid-run a few samples learn to game the reward with long, repetitive answers
(reward hacking). Some responses carry a trailing ``<EOD>`` token without a
log-prob (a length mismatch real trainers produce), prompts carry a system
prompt ending in ``<endofsystem>``, and batches are padded with ``<PAD>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SYSTEM = "You are a careful assistant. Answer with a number.<endofsystem>"
PAD, EOD = "<PAD>", "<EOD>"
WORDS = (
    "The",
    " answer",
    " is",
    " we",
    " add",
    " the",
    " two",
    " numbers",
    " so",
    " first",
    " then",
    " carry",
    " one",
    ",",
    ".",
    " result",
    " check",
    " again",
    " total",
    " sum",
)
HACK = (" Great", " question", "!", " Indeed", " truly", " wonderful")


@dataclass(frozen=True)
class DemoSpec:
    """Shape of a synthetic run."""

    steps: int = 20
    samples: int = 16
    ranks: int = 2
    tokens: int = 48
    seed: int = 0
    step_every: int = 1
    token_level: bool = True
    with_ref: bool = True


def write_run(out_dir: str | Path, spec: DemoSpec) -> list[Path]:
    """Write one run as ``rollout_data_rank_{r}.jsonl`` files; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    paths = [out / f"rollout_data_rank_{r}.jsonl" for r in range(spec.ranks)]
    handles = [p.open("w", encoding="utf-8") for p in paths]
    try:
        for s in range(spec.steps):
            step = s * spec.step_every
            progress = s / max(spec.steps - 1, 1)
            for i in range(spec.samples):
                line = json.dumps(_sample(rng, spec, step, progress, i), ensure_ascii=False)
                handles[i % spec.ranks].write(line + "\n")
    finally:
        for h in handles:
            h.close()
    return paths


def write_eval_run(out_dir: str | Path, *, seed: int = 1) -> list[Path]:
    """An evaluation run: sample-level fields only, irregular steps, short last step."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    path = out / "eval.jsonl"
    steps = [0, 100, 200, 400, 800, 1000]
    with path.open("w", encoding="utf-8") as f:
        for k, step in enumerate(steps):
            n = 12 if k < len(steps) - 1 else 5
            for _ in range(n):
                a, b = (int(x) for x in rng.integers(10, 99, size=2))
                skill = 0.3 + 0.6 * k / (len(steps) - 1)
                correct = rng.random() < skill
                answer = a + b if correct else a + b + int(rng.integers(1, 9))
                record = {
                    "step": step,
                    "prompt": f"What is {a} + {b}?",
                    "response": f"The answer is {answer}.",
                    "reward": round(float(correct) + rng.normal(0, 0.05), 4),
                    "ref_response": f"The answer is {a + b + int(rng.integers(0, 3))}.",
                    "ref_reward": round(0.4 + rng.normal(0, 0.1), 4),
                    "ground_truth": str(a + b),
                }
                f.write(json.dumps(record) + "\n")
    return [path]


def _sample(rng: np.random.Generator, spec: DemoSpec, step: int, progress: float, i: int) -> dict:
    a, b = (int(x) for x in rng.integers(10, 99, size=2))
    hacking = progress > 0.5 and rng.random() < 0.15 * progress
    correct = rng.random() < 0.35 + 0.5 * progress
    tokens, text = _response(rng, spec, a + b, correct, hacking)
    reward = float(correct) * 0.8 + rng.normal(0.1 * progress, 0.15) + (1.2 if hacking else 0.0)
    record: dict = {
        "step": step,
        "prompt": f"{SYSTEM}What is {a} + {b}?",
        "response": text,
        "reward": round(reward, 4),
        "ground_truth": str(a + b),
        "valid_reward": float(correct),
    }
    if spec.with_ref:
        ref_correct = rng.random() < 0.4
        record["ref_response"] = f"The answer is {a + b if ref_correct else a + b + 1}."
        record["ref_reward"] = round(float(ref_correct) * 0.8 + rng.normal(0, 0.15), 4)
        record["ref_valid_reward"] = float(ref_correct)
    if spec.token_level:
        record.update(_token_arrays(rng, tokens, progress, hacking, reward))
    record["rank_seed"] = int(i)
    return record


def _response(
    rng: np.random.Generator, spec: DemoSpec, total: int, correct: bool, hacking: bool
) -> tuple[list[str], str]:
    n = max(4, int(rng.normal(spec.tokens, spec.tokens / 4)))
    if hacking:
        words = [HACK[k % len(HACK)] for k in range(n * 3)]
    else:
        words = [WORDS[int(k)] for k in rng.integers(0, len(WORDS), size=n)]
    answer = total if correct else total + int(rng.integers(1, 9))
    tokens = [*words, " " + str(answer), "."]
    pad = int(rng.integers(0, 4)) if not hacking else 0
    tokens += [PAD] * pad
    text = "".join(tokens)
    if rng.random() < 0.2:
        tokens.append(EOD)  # a trailing token without a log-prob
    return tokens, text


def _token_arrays(
    rng: np.random.Generator, tokens: list[str], progress: float, hacking: bool, reward: float
) -> dict:
    n = len(tokens) - (1 if tokens and tokens[-1] == EOD else 0)
    ref = -np.abs(rng.normal(1.2, 0.8, size=n))
    drift = 0.05 + 0.6 * progress + (1.5 if hacking else 0.0)
    shift = np.abs(rng.normal(0, drift, size=n)) * (rng.random(n) < 0.3)
    logp = np.minimum(ref + shift, 0.0)
    values = np.cumsum(rng.normal(0.02, 0.05, size=n)) + 0.3 * progress
    kl_coef = 0.05
    token_rewards = -kl_coef * (logp - ref)
    token_rewards[-1] += reward
    # Full float reprs, as trainers write them (``tensor.tolist()`` of float32 values).
    return {
        "response_tokens": tokens,
        "logprobs": logp.astype(np.float32).tolist(),
        "ref_logprobs": ref.astype(np.float32).tolist(),
        "values": values.astype(np.float32).tolist(),
        "token_rewards": token_rewards.astype(np.float32).tolist(),
    }
