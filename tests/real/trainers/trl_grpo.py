"""Run TRL's GRPOTrainer on CPU for each variant of ``specs.TRL_VARIANTS`` and keep what it wrote.

Usage: ``python -m tests.real.trainers.trl_grpo OUT [VARIANT ...]``. Each variant trains a fresh tiny
model (``tiny.py``) for ``MAX_STEPS`` steps into ``OUT/<variant>/`` with ``log_completions=True``, so
TRL itself writes ``completions/completions_{step:05d}.parquet``; checkpoints hold
``trainer_state.json``. After training the runner saves ``trainer.state.log_history`` (TRL's own
per-step metrics) as ``log_history.json``. One process runs every variant so torch is imported once.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from tests.real.trainers import specs, tiny


def _text(completion: Any) -> str:
    """A completion's text: the string itself, or the content of its assistant message (conversational)."""
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content") or "" for m in completion)


def _kinds(kwargs: dict[str, Any], n: int) -> list[str]:
    return list(kwargs.get("kind") or ["open"] * n)


# Reward functions: deterministic in the completion's text, with ties (coarse values) and constant
# rewards for "fixed" prompts so some groups have zero variance.
def length_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    kinds = _kinds(kwargs, len(completions))
    return [
        0.5 if k == "fixed" else min(len(_text(c)), 60) // 15 / 4
        for c, k in zip(completions, kinds, strict=True)
    ]


def _vowel_share(text: str) -> float:
    letters = [ch for ch in text.lower() if ch.isalpha()]
    return round(sum(ch in "aeiou" for ch in letters) / len(letters), 1) if letters else 0.0


def vowel_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    kinds = _kinds(kwargs, len(completions))
    return [1.0 if k == "fixed" else _vowel_share(_text(c)) for c, k in zip(completions, kinds, strict=True)]


def counted_vowel_reward(completions: list[Any], log_extra: Any = None, **kwargs: Any) -> list[float]:
    """vowel_reward that also logs two columns through TRL's ``log_extra``: a number and a string."""
    texts = [_text(c) for c in completions]
    if log_extra is not None:
        log_extra("char_count", [len(t) for t in texts])
        log_extra("first_word", [(t.split() or [""])[0] for t in texts])
    return vowel_reward(completions, **kwargs)


def judge_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    out: list[float | None] = []
    for c, k in zip(completions, _kinds(kwargs, len(completions)), strict=True):
        n = len(_text(c))
        out.append(None if k == "silent" or n % 3 == 0 else 1.0 if k == "fixed" else float(n % 2))
    return out


def format_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    out: list[float | None] = []
    for c, k in zip(completions, _kinds(kwargs, len(completions)), strict=True):
        text = _text(c)
        out.append(
            None if k == "silent" or len(text) % 4 == 0 else 0.0 if k == "fixed" else 0.5 * (" " in text)
        )
    return out


REWARD_FUNCS = {
    f.__name__: f for f in (length_reward, vowel_reward, counted_vowel_reward, judge_reward, format_reward)
}


def dataset(conversational: bool) -> Any:
    from datasets import Dataset

    if conversational:
        prompts: list[Any] = [
            [{"role": "system", "content": specs.SYSTEM}, {"role": "user", "content": p}]
            for p, _ in specs.PROMPTS
        ]
    else:
        prompts = [p for p, _ in specs.PROMPTS]
    return Dataset.from_dict({"prompt": prompts, "kind": [k for _, k in specs.PROMPTS]})


def run(variant: specs.TrlVariant, out: Path) -> dict[str, Any]:
    """Train one variant into ``out``; returns facts about the run for the manifest."""
    import trl
    from trl import GRPOConfig, GRPOTrainer

    from rl_board.integrations.trl import RLBoardCallback

    started = time.perf_counter()
    tok = tiny.tokenizer()
    lm = tiny.model(tok, specs.SEED)
    config = GRPOConfig(
        **specs.grpo_arguments(),
        output_dir=str(out),
        save_steps=specs.SAVE_STEPS,
        report_to=["tensorboard"] if variant.tensorboard else "none",
        reward_weights=list(variant.reward_weights) if variant.reward_weights else None,
    )
    trainer = GRPOTrainer(
        model=lm,
        reward_funcs=[REWARD_FUNCS[name] for name in variant.reward_funcs],
        args=config,
        train_dataset=dataset(variant.conversational),
        processing_class=tok,
    )
    callback = RLBoardCallback(out / specs.CALLBACK_DIR).attach(trainer) if variant.callback else None
    trainer.train()
    (out / specs.LOG_HISTORY).write_text(
        json.dumps(trainer.state.log_history, indent=1) + "\n", encoding="utf-8"
    )
    if variant.reward_weights:
        (out / specs.RL_BOARD_TOML).write_text(specs.rl_board_toml(variant.weights()), encoding="utf-8")
    facts: dict[str, Any] = {
        "variant": variant.name,
        "trl": trl.__version__,
        "reward_func_names": list(trainer.reward_func_names),
        "reward_weights": [float(w) for w in trainer.reward_weights.tolist()],
        "seconds": round(time.perf_counter() - started, 2),
    }
    if callback is not None:
        facts["callback_samples"] = callback.samples_written
        facts["callback_problems"] = callback.problems
    return facts


def main(argv: list[str]) -> int:
    import torch
    import transformers

    torch.set_num_threads(1)
    root = Path(argv[0])
    names = argv[1:] or list(specs.TRL_VARIANTS)
    manifest: dict[str, Any] = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "runs": {},
    }
    for name in names:
        manifest["runs"][name] = run(specs.TRL_VARIANTS[name], root / name)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
