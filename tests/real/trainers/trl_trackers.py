"""Run TRL's GRPOTrainer on CPU reporting to the experiment trackers, offline, and keep what TRL logged.

Usage: ``python -m tests.real.trainers.trl_trackers OUT``. One tiny model (``tiny.py``) trains for
``specs.MAX_STEPS`` steps with ``report_to=TRL_TRACKERS`` (transformers' callbacks for W&B, Trackio,
MLflow and SwanLab), ``log_completions=True`` and ``logging_steps=1``, each tracker writing only its
local store under ``OUT``:

- W&B: ``WANDB_MODE=offline``, ``OUT/wandb/offline-run-…/`` (``run-<id>.wandb``, ``files/media/table``);
- Trackio: ``TRACKIO_DIR=OUT/trackio``, ``OUT/trackio/<project>.db``, no Space (``HF_HUB_OFFLINE=1``);
- MLflow: ``MLFLOW_TRACKING_URI=sqlite:///OUT/mlflow.db``;
- SwanLab: ``OUT/swanlog/run-…/run-<id>.swanlab``, offline; the run is started before training
  (``_start_swanlab``: transformers' callback cannot start one with swanlab 0.10.3).

TRL's own truth stays beside them: ``OUT/run/`` is the trainer's ``output_dir`` with its completions
Parquet (``completions/completions_{step:05d}.parquet``, written by TRL whenever ``log_completions``
is on) and ``checkpoint-{MAX_STEPS}/trainer_state.json`` (its ``log_history``: every metric TRL logged,
by step); ``OUT/run/log_history.json`` also has the end-of-training summary. ``OUT/manifest.json``
names the versions, the reward functions and the seconds taken.

The process runs in ``OUT`` (``chdir``) with ``HOME`` in a folder beside it, so nothing a tracker
writes by default (``./mlruns``, ``~/.cache/wandb``, ``~/.swanlab``) lands in the repository or the
user's home. The conftest sets ``WANDB_MODE=disabled`` for the other trainers; ``tracker_env``
overrides it here.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tests.real.trainers import specs, tiny

TRL_TRACKERS = ("wandb", "trackio", "mlflow", "swanlab")
# None rows, log_extra columns, and a function silent for a whole step
TRL_REWARD_FUNCS = ("judge_reward", "counted_vowel_reward", "gated_reward")
TRL_SILENT_STEP = 2  # gated_reward scores nothing at this step: TRL logs its mean and std as None
TRL_PROJECT = "rl_board_real"
TRL_RUN_NAME = "grpo_trackers"
RUN_DIR = "run"  # the trainer's output_dir inside OUT


def tracker_env(out: Path) -> dict[str, str]:
    """Every tracker offline, writing under ``out``, with a HOME of its own beside ``out``.

    Returned (and applied by the callers before any tracker is imported: trackio reads ``TRACKIO_DIR``
    at import time) so the settings are stated in one place for both tracker runners.
    """
    home = out.parent / f"{out.name}-home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "WANDB_MODE": "offline",  # the conftest's "disabled" would write nothing
        "WANDB_DIR": str(out),
        "WANDB_PROJECT": TRL_PROJECT,
        "WANDB_SILENT": "true",
        "WANDB_CONSOLE": "off",
        "WANDB_DISABLE_GIT": "true",
        "WANDB_DISABLE_CODE": "true",
        "WANDB_ERROR_REPORTING": "false",
        "WANDB__DISABLE_STATS": "true",
        "WANDB_CONFIG_DIR": str(home / ".config" / "wandb"),
        "WANDB_CACHE_DIR": str(home / ".cache" / "wandb"),
        "WANDB_DATA_DIR": str(home / ".local" / "wandb"),
        "TRACKIO_DIR": str(out / "trackio"),
        "TRACKIO_STORAGE_MODE": "sqlite",
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "GRADIO_ANALYTICS_ENABLED": "False",
        "DO_NOT_TRACK": "1",
        "MLFLOW_TRACKING_URI": f"sqlite:///{out / 'mlflow.db'}",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "MLFLOW_EXPERIMENT_NAME": TRL_PROJECT,
        "SWANLAB_MODE": "offline",
        "SWANLAB_LOG_DIR": str(out / "swanlog"),
        "DISABLE_MLFLOW_INTEGRATION": "FALSE",
    }


TRACKER_MODULES = ("wandb", "trackio", "mlflow", "swanlab")


def need_trackers() -> None:
    """Fail at once, saying what to install, when a tracker library is missing (nothing here skips)."""
    import importlib

    missing = []
    for name in TRACKER_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as err:
            missing.append(f"{name} ({err})")
    if missing:
        raise SystemExit(
            f"tracker libraries missing: {', '.join(missing)}; install the `trackers` extra "
            '(pip install -e ".[real,trackers]")'
        )


def go_offline(out: Path) -> None:
    """Apply ``tracker_env`` to this process and work in ``out`` (trackers write relative paths there)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in [n for n in os.environ if n.startswith(("WANDB_", "SWANLAB_", "MLFLOW_", "TRACKIO_"))]:
        del os.environ[name]
    os.environ.update(tracker_env(out))
    os.chdir(out)


def _start_swanlab(out: Path) -> None:
    """Start the SwanLab run transformers' callback then logs into.

    transformers 5.10.4's ``SwanLabCallback.setup`` asks ``swanlab.get_run() is None`` before calling
    ``swanlab.init``, but swanlab 0.10.3's ``get_run`` raises ``RuntimeError("No active Run...")`` when no run
    is active, so ``report_to=["swanlab"]`` alone fails at ``on_train_begin``. A run started first (as
    SwanLab's guide for custom settings does) is found and used. No hardware monitor: its
    ``__swanlab__.`` keys would run on a clock of their own.
    """
    import swanlab

    settings = swanlab.Settings(interactive=False, probe=swanlab.Settings.Probe(monitor=False))
    swanlab.init(
        mode="offline",
        log_dir=str(out / "swanlog"),
        project=TRL_PROJECT,
        name=TRL_RUN_NAME,
        settings=settings,
    )


def gated_reward(completions: list[Any], trainer_state: Any = None, **kwargs: Any) -> list[float | None]:
    """A reward that is down for one whole step (a judge that timed out): every row None at
    ``TRL_SILENT_STEP``, so TRL's ``rewards/gated_reward/mean`` and ``/std`` are NaN there, which its
    ``log`` turns into None. Otherwise a coarse score of the completion's length."""
    step = trainer_state.global_step + 1 if trainer_state is not None else 0  # the step being trained
    if step == TRL_SILENT_STEP:
        return [None] * len(completions)
    return [float(len(str(c)) % 5) / 4 for c in completions]


def run(out: Path) -> dict[str, Any]:
    """Train into ``out / RUN_DIR`` reporting to every tracker; returns facts for the manifest."""
    import swanlab
    import trl
    from trl import GRPOConfig, GRPOTrainer

    from tests.real.trainers.trl_grpo import REWARD_FUNCS, dataset

    started = time.perf_counter()
    funcs = {**REWARD_FUNCS, "gated_reward": gated_reward}
    _start_swanlab(out)
    tok = tiny.tokenizer()
    lm = tiny.model(tok, specs.SEED)
    config = GRPOConfig(
        **specs.grpo_arguments(),
        output_dir=str(out / RUN_DIR),
        run_name=TRL_RUN_NAME,
        project=TRL_PROJECT,
        trackio_static_space_id=False,
        save_steps=specs.MAX_STEPS,  # one checkpoint, at the end: its trainer_state.json has every step
        save_only_model=True,
        report_to=list(TRL_TRACKERS),
    )
    trainer = GRPOTrainer(
        model=lm,
        reward_funcs=[funcs[name] for name in TRL_REWARD_FUNCS],
        args=config,
        train_dataset=dataset(False),
        processing_class=tok,
    )
    trainer.train()
    swanlab.finish()
    (out / RUN_DIR / specs.LOG_HISTORY).write_text(
        json.dumps(trainer.state.log_history, indent=1) + "\n", encoding="utf-8"
    )
    return {
        "trl": trl.__version__,
        "reward_func_names": list(trainer.reward_func_names),
        "reward_weights": [float(w) for w in trainer.reward_weights.tolist()],
        "seconds": round(time.perf_counter() - started, 2),
    }


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    go_offline(out)
    started = time.perf_counter()
    need_trackers()

    import mlflow
    import swanlab
    import torch
    import trackio
    import transformers
    import wandb

    torch.set_num_threads(1)
    facts = run(out)
    versions = {m.__name__: m.__version__ for m in (torch, transformers, wandb, trackio, mlflow, swanlab)}
    manifest = {
        **versions,
        **facts,
        "trackers": list(TRL_TRACKERS),
        "total_seconds": round(time.perf_counter() - started, 2),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
