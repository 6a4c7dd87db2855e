"""A synthetic GRPO run: groups of answers per prompt, long reasoning, reward parts, two log-prob sources.

The story a researcher should find in it: accuracy climbs, more and more
groups become all-correct or all-wrong (zero variance: no learning signal), a
few answers grow very long, and from the middle of the run the inference
engine's log-probs drift away from the trainer's (``train_logprobs``) — the
mismatch that breaks importance ratios. Beside the samples a ``metrics.jsonl``
carries the trainer's scalar metrics, so the Metrics and Health pages have
something to show.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

THINK = (
    " Let",
    " me",
    " think",
    " about",
    " this",
    ".",
    " First",
    ",",
    " we",
    " have",
    " the",
    " numbers",
    " and",
    " we",
    " need",
    " their",
    " sum",
    ".",
    " Wait",
    ",",
    " check",
    " the",
    " carry",
    " again",
    " so",
    " the",
    " total",
    " is",
    " clear",
    ".",
)


@dataclass(frozen=True)
class GrpoSpec:
    """Shape of a synthetic GRPO run."""

    steps: int = 10
    prompts: int = 4
    group_size: int = 8
    tokens: int = 100
    long_tokens: int = 1500  # one answer per step rambles on this long
    seed: int = 0


def write_grpo_run(out_dir: str | Path, spec: GrpoSpec) -> list[Path]:
    """``rollout_data_rank_0.jsonl`` (samples) and ``metrics.jsonl`` (scalars) in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    samples, metrics = out / "rollout_data_rank_0.jsonl", out / "metrics.jsonl"
    # A small dataset seen again and again (epochs): each prompt comes back every few steps.
    pool = [
        (int(a), int(b), float(d))
        for a, b, d in zip(
            rng.integers(100, 999, size=spec.prompts * 3),
            rng.integers(100, 999, size=spec.prompts * 3),
            rng.uniform(-0.3, 0.3, size=spec.prompts * 3),
            strict=True,
        )
    ]
    with samples.open("w", encoding="utf-8") as f, metrics.open("w", encoding="utf-8") as m:
        for step in range(spec.steps):
            progress = step / max(spec.steps - 1, 1)
            batch = [pool[(step * spec.prompts + p) % len(pool)] for p in range(spec.prompts)]
            rows = _step_rows(rng, spec, step, progress, batch)
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            m.write(json.dumps(_metrics(rng, step, progress, rows)) + "\n")
    return [samples, metrics]


def _step_rows(
    rng: np.random.Generator, spec: GrpoSpec, step: int, progress: float, batch: list[tuple[int, int, float]]
) -> list[dict]:
    rows = []
    long_one = (int(rng.integers(0, spec.prompts)), int(rng.integers(0, spec.group_size)))
    for p, (a, b, ease) in enumerate(batch):
        skill = min(
            0.97, max(0.0, 0.2 + 0.7 * progress + ease + rng.normal(0, 0.1))
        )  # easy prompts: flat groups
        group = [
            _answer(rng, spec, step, progress, a, b, skill, (p, k) == long_one)
            for k in range(spec.group_size)
        ]
        rewards = np.array([g["reward"] for g in group])
        spread = rewards.std()
        for k, g in enumerate(group):
            g["advantage"] = round(float((rewards[k] - rewards.mean()) / spread) if spread > 0 else 0.0, 4)
            g.update(step=step, group=f"s{step}-p{p}", prompt=f"What is {a} + {b}? Think step by step.")
            rows.append(g)
    return rows


def _answer(
    rng: np.random.Generator,
    spec: GrpoSpec,
    step: int,
    progress: float,
    a: int,
    b: int,
    skill: float,
    rambles: bool,
) -> dict:
    correct = bool(rng.random() < skill)
    formatted = bool(rng.random() < 0.6 + 0.35 * progress)
    answer = a + b if correct else a + b + int(rng.integers(1, 50))
    n = spec.long_tokens if rambles else max(8, int(rng.normal(spec.tokens, spec.tokens / 3)))
    think = [THINK[int(k)] for k in rng.integers(0, len(THINK), size=n)]
    tokens = ["<think>", *think, "</think>", " The", " answer", " is", f" {answer}", "."]
    accuracy, form = float(correct), 0.2 * float(formatted)
    return {
        "response": "".join(tokens) if formatted else "".join(tokens[1:]).replace("</think>", ""),
        "reward": round(accuracy + form, 4),
        "accuracy_reward": accuracy,
        "format_reward": form,
        "ground_truth": str(a + b),
        **_token_arrays(rng, tokens, progress),
    }


def _token_arrays(rng: np.random.Generator, tokens: list[str], progress: float) -> dict:
    n = len(tokens)
    logp = -np.abs(rng.gamma(0.6, 0.5, size=n))
    drift = 0.002 + (
        0.4 * (progress - 0.5) if progress > 0.5 else 0.0
    )  # the engine drifts in the second half
    train = logp + rng.normal(0, drift, size=n) * (rng.random(n) < 0.2)
    ref = logp - np.abs(rng.normal(0, 0.05 + 0.3 * progress, size=n)) * (rng.random(n) < 0.3)
    return {
        "response_tokens": tokens,
        "logprobs": logp.astype(np.float32).tolist(),
        "train_logprobs": np.minimum(train, 0.0).astype(np.float32).tolist(),
        "ref_logprobs": ref.astype(np.float32).tolist(),
    }


def _metrics(rng: np.random.Generator, step: int, progress: float, rows: list[dict]) -> dict:
    rewards = np.array([r["reward"] for r in rows])
    lengths = np.array([len(r["response_tokens"]) for r in rows])
    return {
        "step": step,
        "train/reward": round(float(rewards.mean()), 5),
        "train/reward_std": round(float(rewards.std()), 5),
        "train/loss": round(float(0.4 * (1 - progress) + rng.normal(0, 0.02)), 5),
        "train/kl": round(float(0.002 + 0.02 * progress + abs(rng.normal(0, 0.002))), 6),
        "train/entropy": round(float(1.2 - 0.9 * progress + rng.normal(0, 0.03)), 5),
        "train/grad_norm": round(float(0.8 + rng.gamma(2.0, 0.2)), 5),
        "train/clip_ratio": round(float(0.02 + 0.05 * progress + abs(rng.normal(0, 0.01))), 5),
        "train/completion_length": round(float(lengths.mean()), 2),
        "train/learning_rate": 5e-7,
    }
