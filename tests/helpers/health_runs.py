"""Generated runs for the health rules on the trainers' own diagnostics: planted failures and clean twins.

A `HealthRun` is one run's scalar curves under one trainer's real metric names (each name's source file is
in ``rl_board/metrics/aliases.py``). A planted run carries one failure over a window of steps ``[start,
end]`` (the steps over which it unfolds) and names the rule that must catch it by ``deadline``, the end of
the window's first quarter. Its clean twin has the same seed's noise (correlated from step to step, with
rare spikes that return) without the failure: no rule may fire on it.

`write_crosscheck_runs` writes rollouts with the trainer's logged numbers beside them, where the trainer's
counter is wrong (verl's clip ratio under a binding ``max_model_len`` or measured against the batch's
longest response, TRL's zero-std share under batch scaling), and twins where it is right.

Shared by ``benchmarks/health.py`` (which prints the facts) and ``tests/unit/test_health_field.py`` (which
holds them); nothing here imports rl_board.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

STEPS = 300
MID = 150  # where a mid-run failure starts


@dataclass(frozen=True)
class HealthRun:
    """One run's curves (tag -> a value per step, steps 1..n) and what is planted in it."""

    name: str
    trainer: str
    failure: str  # what is planted; "" for a clean twin
    rule: str  # the rule that must catch it; "" for a clean twin (no rule may fire)
    start: int
    end: int
    curves: dict[str, np.ndarray]
    twin: str = ""  # a clean twin: the planted run it mirrors

    @property
    def clean(self) -> bool:
        return not self.rule

    @property
    def deadline(self) -> int:
        """The last step of the window's first quarter: the rule must have fired by then."""
        return self.start + (self.end - self.start) // 4

    @property
    def steps(self) -> np.ndarray:
        return np.arange(1, len(next(iter(self.curves.values()))) + 1)

    def frame(self) -> pd.DataFrame:
        """A long scalar table (run, source, tag, step, value, wall_time), as the metric readers return."""
        steps = self.steps
        parts = [
            pd.DataFrame(
                {
                    "run": self.name,
                    "source": "jsonl",
                    "tag": tag,
                    "step": steps,
                    "value": values.astype(float),
                }
            )
            for tag, values in self.curves.items()
        ]
        out = pd.concat(parts, ignore_index=True)
        out["wall_time"] = 1000.0 + out["step"].astype(float)
        return out

    def rows(self) -> list[dict[str, float]]:
        """JSON lines as a trainer's metrics.jsonl holds them: {"step": N, name: value, ...}."""
        return [
            {"step": int(s), **{tag: float(values[k]) for tag, values in self.curves.items()}}
            for k, s in enumerate(self.steps)
        ]

    def write_jsonl(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "metrics.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in self.rows()), encoding="utf-8")
        return path

    def write_trainer_state(self, folder: Path) -> Path:
        """The curves as a Hugging Face trainer keeps them (TRL): ``checkpoint-N/trainer_state.json``'s
        ``log_history``, one entry per logging step."""
        path = folder / f"checkpoint-{int(self.steps[-1])}" / "trainer_state.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"global_step": int(self.steps[-1]), "log_history": self.rows()}))
        return path

    def write(self, folder: Path) -> Path:
        """The curves on disk as the trainer writes them: TRL's unprefixed names in trainer_state.json,
        ``train/``-prefixed ones (transformers' callbacks) as TensorBoard events, others as metrics.jsonl."""
        if self.trainer != "TRL":
            return self.write_jsonl(folder)
        if any(tag.startswith("train/") for tag in self.curves):
            return self.write_tensorboard(folder)
        return self.write_trainer_state(folder)

    def write_tensorboard(self, folder: Path) -> Path:
        """The same curves as a TensorBoard event file (what transformers' callbacks write)."""
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        writer = EventFileWriter(str(folder))
        for k, step in enumerate(self.steps):
            values = [
                summary_pb2.Summary.Value(tag=tag, simple_value=float(curve[k]))
                for tag, curve in self.curves.items()
            ]
            writer.add_event(
                event_pb2.Event(
                    step=int(step), wall_time=1000.0 + k, summary=summary_pb2.Summary(value=values)
                )
            )
        writer.close()
        return next(folder.glob("events.out.tfevents.*"))


def frame(runs: list[HealthRun]) -> pd.DataFrame:
    """Every run's long table, one after the other."""
    return pd.concat([r.frame() for r in runs], ignore_index=True)


# --------------------------------------------------------------------------- noise


def _rng(name: str, seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, sum(ord(c) * (k + 1) for k, c in enumerate(name))])


def ar_noise(rng: np.random.Generator, n: int, sd: float, phi: float = 0.3) -> np.ndarray:
    """AR(1) noise with stationary standard deviation `sd`: neighbouring batches resemble each other."""
    out = np.empty(n)
    out[0] = rng.normal(0, sd)
    for k in range(1, n):
        out[k] = phi * out[k - 1] + rng.normal(0, sd * math.sqrt(1 - phi * phi))
    return out


def noisy(level: np.ndarray, rng: np.random.Generator, rel: float, spikes: float = 0.0) -> np.ndarray:
    """`level` times log-normal correlated noise of relative size `rel`; a share `spikes` of the points
    jump to 3-6x and come back the next step."""
    n = len(level)
    out = level * np.exp(ar_noise(rng, n, rel))
    if spikes:
        hit = rng.random(n) < spikes
        out[hit] *= rng.uniform(3, 6, hit.sum())
    return out


def ramp(n: int, start: int, end: int) -> np.ndarray:
    """0 before `start`, rising linearly to 1 at `end` (steps are 1..n), 1 after."""
    t = np.arange(1, n + 1)
    return np.clip((t - start) / max(1, end - start), 0.0, 1.0)


def logistic(n: int, centre: float, width: float) -> np.ndarray:
    t = np.arange(1, n + 1)
    return 1.0 / (1.0 + np.exp(-(t - centre) / width))


def _pair(
    name: str,
    trainer: str,
    failure: str,
    rule: str,
    window: tuple[int, int],
    build: Callable[[bool, np.random.Generator], dict[str, np.ndarray]],
    seed: int,
) -> list[HealthRun]:
    """A planted run and its clean twin, built from the same seed (the same noise)."""
    planted = HealthRun(name, trainer, failure, rule, *window, build(True, _rng(name, seed)))
    clean = HealthRun(f"{name}.clean", trainer, "", "", *window, build(False, _rng(name, seed)), twin=name)
    return [planted, clean]


# --------------------------------------------------------------------------- the planted failures

MISMATCH = "logprob_mismatch_trend"
IS_WEIGHTS = "importance_weights_off"
LEARNS_NOTHING = "learns_nothing"
ENTROPY = "early_entropy_collapse"


@dataclass(frozen=True)
class Drift:
    """One mismatch curve: its tag, the value of a perfect match, the clean level above it, where the
    failure takes it by the window's end, its noise, and how it gets there (linear, exp, or a jump)."""

    tag: str
    baseline: float
    level: float
    to: float
    rel: float
    shape: str = "linear"
    spikes: float = 0.0


def _drift(
    drift: Drift, n: int, window: tuple[int, int], planted: bool, rng: np.random.Generator
) -> np.ndarray:
    clean = drift.level * (1 + 0.1 * np.arange(n) / n)  # a healthy run drifts a little too
    if not planted:
        level = clean
    elif drift.shape == "exp":
        level = clean * (drift.to / drift.level) ** ramp(n, *window)
    elif drift.shape == "jump":
        level = clean + (drift.to - drift.level) * ramp(n, window[0], window[0] + 3)
    else:
        level = clean + (drift.to - drift.level) * ramp(n, *window)
    return drift.baseline + noisy(level, rng, drift.rel, drift.spikes)


MISMATCH_RUNS = (
    # name, trainer, window, curves
    (
        "nemo-rl/mismatch-drift",
        "NeMo-RL",
        (MID, STEPS),
        (
            Drift("train/token_mult_prob_error", 1.0, 0.015, 0.09, 0.15, spikes=0.01),
            Drift("train/gen_kl_error", 0.0, 3e-4, 3e-3, 0.2, "exp"),
        ),
    ),
    (
        "nemo-rl/refit-jump",
        "NeMo-RL",
        (MID, STEPS),
        (Drift("train/token_mult_prob_error", 1.0, 0.015, 0.08, 0.15, "jump", spikes=0.01),),
    ),
    (
        "prime-rl/mismatch-growth",
        "prime-rl",
        (MID, STEPS),
        (Drift("mismatch_kl/all/mean", 0.0, 8e-4, 8e-3, 0.15, "exp", spikes=0.01),),
    ),
    (
        "slime/logprob-diff-drift",
        "slime",
        (MID, STEPS),
        (Drift("train/train_rollout_logprob_abs_diff", 0.0, 0.011, 0.036, 0.06),),
    ),
    (
        "open-instruct/logprob-diff-crash",
        "open-instruct",
        (MID, 250),
        (Drift("debug/vllm_vs_local_logprob_diff_mean", 0.0, 0.02, 0.1, 0.1),),
    ),
    (
        "verl/k3-kl-drift",
        "verl",
        (MID, STEPS),
        (Drift("rollout_corr/k3_kl", 0.0, 5e-4, 5e-3, 0.2, "exp", spikes=0.01),),
    ),
)


def mismatch_runs(seed: int = 0, n: int = STEPS) -> list[HealthRun]:
    """The train-inference mismatch rising (each trainer's name for it), and flat twins."""
    out = []
    for name, trainer, window, drifts in MISMATCH_RUNS:
        length = min(n, window[1])  # open-instruct's run crashes at the window's end

        def build(
            planted: bool, rng: np.random.Generator, d=drifts, w=window, m=length
        ) -> dict[str, np.ndarray]:
            return {drift.tag: _drift(drift, m, w, planted, rng) for drift in d}

        out += _pair(name, trainer, "mismatch trend", MISMATCH, window, build, seed)
    return out


def importance_weight_runs(seed: int = 0, n: int = STEPS) -> list[HealthRun]:
    """verl's rollout-correction weights collapsing (abruptly, or the ESS decaying over 30 steps)."""

    def collapse(planted: bool, rng: np.random.Generator) -> dict[str, np.ndarray]:
        d = ramp(n, MID, MID + 8) if planted else np.zeros(n)
        return {
            "rollout_corr/rollout_is_mean": (1.0 - 0.6 * d) * np.exp(ar_noise(rng, n, 0.02)),
            "rollout_corr/rollout_is_eff_sample_size": np.clip(
                0.92 - 0.8 * d + ar_noise(rng, n, 0.015), 0, 1
            ),
            "rollout_corr/rollout_is_std": (0.25 + 1.3 * d) * np.exp(ar_noise(rng, n, 0.08)),
            "rollout_corr/kl": 0.002 + 0.25 * d + ar_noise(rng, n, 0.002),
            "rollout_corr/chi2_token": (0.08 + 3.0 * d) * np.exp(ar_noise(rng, n, 0.15)),
            "critic/score/mean": 0.3 + 0.3 * ramp(n, 1, n) + ar_noise(rng, n, 0.02),
        }

    def ess_decay(planted: bool, rng: np.random.Generator) -> dict[str, np.ndarray]:
        d = ramp(n, MID, MID + 30) if planted else np.zeros(n)
        return {
            "rollout_corr/rollout_is_eff_sample_size": np.clip(0.9 - 0.8 * d + ar_noise(rng, n, 0.015), 0, 1),
            "rollout_corr/rollout_is_std": (0.25 + 0.6 * d) * np.exp(ar_noise(rng, n, 0.08)),
            "rollout_corr/rollout_is_mean": np.exp(ar_noise(rng, n, 0.02)),
        }

    return _pair(
        "verl/is-weights-collapse", "verl", "IS-weight collapse", IS_WEIGHTS, (MID, n), collapse, seed
    ) + (_pair("verl/is-ess-decay", "verl", "IS-weight collapse", IS_WEIGHTS, (MID, n), ess_decay, seed))


def learns_nothing_runs(seed: int = 0, n: int = STEPS) -> list[HealthRun]:
    """TRL's GRPO with every completion cut (from the start, or once lengths reach the cap), and twins."""

    def trl(
        at: float | None, prefix: str = ""
    ) -> Callable[[bool, np.random.Generator], dict[str, np.ndarray]]:
        def build(planted: bool, rng: np.random.Generator) -> dict[str, np.ndarray]:
            cut = (np.ones(n) if at is None else logistic(n, at, 3.0)) if planted else np.zeros(n)
            zero = np.clip(0.3 + 0.69 * cut + ar_noise(rng, n, 0.06) * (1 - cut), 0, 1)
            clipped = np.clip(0.04 + 0.96 * cut + np.abs(ar_noise(rng, n, 0.02)) * (1 - cut), 0, 1)
            reward = (0.25 + 0.35 * ramp(n, 1, n)) * (1 - cut) + ar_noise(rng, n, 0.02)
            entropy = 1.2 * (1 - 0.2 * ramp(n, 1, n)) * np.exp(ar_noise(rng, n, 0.04))
            names = {
                "frac_reward_zero_std": zero,
                "completions/clipped_ratio": clipped,
                "reward": reward,
                "entropy": entropy,
            }
            return {prefix + k: v for k, v in names.items()}

        return build

    return (
        _pair(
            "trl/learns-nothing-from-start", "TRL", "learns nothing", LEARNS_NOTHING, (1, n), trl(None), seed
        )
        + _pair(
            "trl/learns-nothing-at-cap", "TRL", "learns nothing", LEARNS_NOTHING, (MID, n), trl(MID + 8), seed
        )
        + _pair(
            "trl/learns-nothing-tensorboard",
            "TRL",
            "learns nothing",
            LEARNS_NOTHING,
            (MID, n),
            trl(MID + 8, "train/"),
            seed,
        )
    )


ENTROPY_RUNS = (  # name, trainer, entropy tag, starting entropy, reward tag ("" for none)
    ("trl/entropy-collapse", "TRL", "entropy", 1.5, "reward"),
    ("prime-rl/entropy-collapse", "prime-rl", "entropy/all/mean", 0.9, ""),
    ("nemo-rl/entropy-collapse", "NeMo-RL", "train/approx_entropy", 0.6, ""),
    ("slime/entropy-collapse", "slime", "train/entropy_loss", 0.45, ""),
    ("verl/entropy-collapse", "verl", "actor/entropy", 0.7, "critic/score/mean"),
    ("open-instruct/entropy-collapse", "open-instruct", "policy/entropy_avg", 1.1, ""),
)
COLLAPSE_WINDOW = (1, 200)  # Cui et al.: most of the entropy is spent in the first ~200 steps


def entropy_runs(seed: int = 0, n: int = STEPS) -> list[HealthRun]:
    """Entropy spending 80% of itself early (time constant 30 steps) while the reward rises fast and
    flattens; twins decline by a quarter over the run while the reward keeps climbing."""
    t = np.arange(n, dtype=float)
    out = []
    for name, trainer, tag, start, reward_tag in ENTROPY_RUNS:

        def build(
            planted: bool, rng: np.random.Generator, h0=start, tag=tag, rt=reward_tag
        ) -> dict[str, np.ndarray]:
            shape = 0.2 + 0.8 * np.exp(-t / 30) if planted else 1 - 0.25 * t / n
            curves = {tag: h0 * shape * np.exp(ar_noise(rng, n, 0.04))}
            if rt:
                gain = 1 - np.exp(-t / 35) if planted else 1 - np.exp(-t / 150)
                curves[rt] = 0.2 + 0.45 * gain + ar_noise(rng, n, 0.02)
            return curves

        out += _pair(name, trainer, "early entropy collapse", ENTROPY, COLLAPSE_WINDOW, build, seed)
    return out


def health_runs(seed: int = 0, n: int = STEPS) -> list[HealthRun]:
    """Every planted failure and its clean twin."""
    return (
        mismatch_runs(seed, n)
        + importance_weight_runs(seed, n)
        + learns_nothing_runs(seed, n)
        + entropy_runs(seed, n)
    )


# --------------------------------------------------------------------------- rollouts and trainer numbers


@dataclass(frozen=True)
class CrossRun:
    """A rollout run (a folder) with the trainer's own numbers beside it."""

    name: str
    trainer: str
    failure: str  # "" for a clean twin
    rule: str  # "" for a clean twin
    folder: Path
    start: int
    end: int
    notes: dict[str, float] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return not self.rule

    @property
    def deadline(self) -> int:
        return self.start + (self.end - self.start) // 4


CLIP = "trainer_clip_ratio_mismatch"
ZERO_STD = "trainer_zero_std_mismatch"
SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "be", "do", "fu", "ga")


def _text(rng: np.random.Generator, tokens: int) -> list[str]:
    """Words that do not repeat into loops or templates (the pattern rules stay quiet on them)."""
    picks = rng.integers(0, len(SYLLABLES), size=(tokens, 3))
    return ["".join(SYLLABLES[i] for i in row) for row in picks]


def write_verl_clip_runs(root: Path, *, seed: int = 0, steps: int = 40) -> list[CrossRun]:
    """verl-style rollouts (rl-board's own format, with tokens and finish reasons) and a metrics.jsonl
    beside them holding verl's response_length/clip_ratio.

    ``max-model-len``: responses grow longer at mid-run, and then about a third of them stop at the engine's
    context limit (max_model_len 90 minus the prompt) before the 64-token response cap; verl, counting only
    responses that reach the cap, logs 0 (verl #7823). ``batch-max``: a 16-sample debug batch where nothing
    is cut, but verl's V1 measures against the batch's longest response and logs that share (verl #7817).
    ``clean``: the same growth under the 64-token cap, and the true share logged.
    """
    out = []
    cap, window = 64, (steps // 2, steps)
    for variant, samples in (("max-model-len", 64), ("batch-max", 16), ("clean", 64)):
        rng = np.random.default_rng([seed, len(variant)])
        folder = root / f"verl-{variant}"
        folder.mkdir(parents=True, exist_ok=True)
        lines, metrics = [], []
        for step in range(1, steps + 1):
            grow = 26 + 24 * ramp(steps, window[0], window[0] + 4)[step - 1]
            rows = []
            for _ in range(samples):
                prompt_len = int(rng.integers(30, 50))
                want = int(np.clip(rng.normal(grow, 6), 4, 200))
                limit = min(cap, 90 - prompt_len) if variant == "max-model-len" else cap
                if variant == "batch-max":
                    limit = cap * 4  # nothing is cut
                rows.append((prompt_len, min(want, limit), want > limit))
            longest = max(r[1] for r in rows)
            logged = {
                "max-model-len": float(np.mean([r[1] == cap for r in rows])),
                "batch-max": float(np.mean([r[1] == longest for r in rows])),
                "clean": float(np.mean([r[2] for r in rows])),
            }[variant]
            for k, (prompt_len, tokens, cut) in enumerate(rows):
                lines.append(
                    {
                        "step": step,
                        "prompt": f"question {step}-{k}: " + " ".join(_text(rng, prompt_len // 4)),
                        "response": " ".join(_text(rng, max(1, tokens // 2))),
                        "response_tokens": _text(rng, tokens),
                        "reward": float(rng.integers(0, 2)),
                        "finish_reason": "length" if cut else "stop",
                    }
                )
            metrics.append({"step": step, "response_length/clip_ratio": logged, "critic/score/mean": 0.5})
        (folder / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
        (folder / "metrics.jsonl").write_text(
            "".join(json.dumps(m) + "\n" for m in metrics), encoding="utf-8"
        )
        if variant == "clean":
            out.append(CrossRun("verl-clean", "verl", "", "", folder, 1, steps))
        elif variant == "batch-max":  # wrong from the first step: the window is the whole run
            out.append(
                CrossRun("verl-batch-max", "verl", "clip ratio vs batch maximum", CLIP, folder, 1, steps)
            )
        else:
            out.append(
                CrossRun(
                    "verl-max-model-len", "verl", "clip ratio under max_model_len", CLIP, folder, *window
                )
            )
    return out


def write_trl_zero_std_runs(
    root: Path, *, seed: int = 0, steps: int = 40, prompts: int = 32, group: int = 4
) -> list[CrossRun]:
    """TRL GRPO completions (``completions/completions_NNNNN.parquet``) and ``checkpoint-N/
    trainer_state.json``. About a quarter of the prompts are solved every time (all-1 groups); with
    ``scale_rewards="batch"`` TRL takes the reward's std over the whole batch and logs frac_reward_zero_std
    = 0 throughout. The twin (per-group scaling) logs the true share."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = []
    for variant in ("batch-scaling", "clean"):
        rng = np.random.default_rng([seed, 7])
        out_dir = root / f"trl-{variant}"
        folder = out_dir / "completions"
        folder.mkdir(parents=True, exist_ok=True)
        history = []
        for step in range(1, steps + 1):
            columns: dict[str, list] = {"prompt": [], "completion": [], "accuracy_reward": []}
            flat_groups = 0
            for p in range(prompts):
                text = f"Problem {step}.{p}: " + " ".join(_text(rng, 6))
                rewards = [1.0] * group
                if rng.random() >= 0.25:
                    while len(set(rewards)) == 1:
                        rewards = [float(v) for v in rng.integers(0, 2, group)]
                flat_groups += len(set(rewards)) == 1
                for r in rewards:
                    columns["prompt"].append(text)
                    columns["completion"].append(" ".join(_text(rng, int(rng.integers(5, 30)))))
                    columns["accuracy_reward"].append(r)
            table = pa.table(
                {
                    "step": pa.array([step] * len(columns["prompt"]), pa.int64()),
                    "prompt": pa.array(columns["prompt"], pa.string()),
                    "completion": pa.array(columns["completion"], pa.string()),
                    "accuracy_reward": pa.array(columns["accuracy_reward"], pa.float64()),
                }
            )
            pq.write_table(table, folder / f"completions_{step:05d}.parquet")
            mean = float(np.mean(columns["accuracy_reward"]))
            history.append(
                {
                    "step": step,
                    "reward": mean,
                    "rewards/accuracy_reward/mean": mean,
                    "frac_reward_zero_std": 0.0 if variant == "batch-scaling" else flat_groups / prompts,
                }
            )
        state = out_dir / f"checkpoint-{steps}" / "trainer_state.json"
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({"log_history": history}), encoding="utf-8")
        if variant == "clean":
            out.append(CrossRun("trl-clean", "TRL", "", "", folder, 1, steps))
        else:
            failure = "zero-std share under batch scaling"
            out.append(CrossRun("trl-batch-scaling", "TRL", failure, ZERO_STD, folder, 1, steps))
    return out


def write_crosscheck_runs(root: Path, *, seed: int = 0) -> list[CrossRun]:
    """Every cross-check run (planted and clean) under `root`."""
    return write_verl_clip_runs(root, seed=seed) + write_trl_zero_std_runs(root, seed=seed)
