"""Log a few steps of verl-named metrics and validation generations through verl 0.9.1's own tracking code.

Usage: ``python -m tests.real.trainers.verl_tracking OUT``. ``verl.utils.tracking.Tracking`` is built as
``RayPPOTrainer.fit`` builds it (``default_backend=config.trainer.logger``, the config as a plain dict)
with every backend that writes a local store offline (``VERL_BACKENDS``), and used as ``fit`` uses it:

- step 0 (``val_before_train``): the validation generations, then the validation metrics;
- steps 1..``VERL_TRAIN_STEPS``: the training metrics, one ``Tracking.log(data, step)`` per step; at
  ``VERL_VAL_STEPS`` after 0 the validation runs first (generations logged) and its metrics join the
  step's.

The generations go through the trainer's own ``RayPPOTrainer._maybe_log_val_generations`` (sort by input,
shuffle with seed 42, keep ``log_val_generations``) on an instance made with ``__new__``, into
``ValidationGenerationsLogger.log(config.trainer.logger, samples, step)``. The metric values are made up
here, named as verl names them (``actor/pg_loss``, ``critic/score/mean``, ``val-core/.../mean@4``...):
floats with many digits, numpy floats (verl's ``reduce_metrics`` gives ``np.float64``), ints, zeros, a
tiny learning rate, one NaN (``actor/grad_norm`` at step 2, as a diverging step logs it).

Where each backend writes (``trl_trackers.tracker_env``; the process works in ``OUT``):

- wandb: ``OUT/wandb/offline-run-…/``; swanlab: ``OUT/swanlog/run-…/`` (``SWANLAB_MODE=offline``,
  ``SWANLAB_LOG_DIR``); trackio: ``OUT/trackio/<project>.db``; mlflow: ``OUT/mlflow.db`` with the
  generations as artifacts under ``OUT/mlruns/`` (the default artifact root, relative to the working
  folder); tensorboard: ``OUT/tensorboard/`` (``TENSORBOARD_DIR``); file: ``OUT/file/<project>/
  <experiment>.jsonl`` (``VERL_FILE_LOGGER_ROOT``).

Not run: ``console`` (prints only), ``vemlp_wandb`` (Volcengine's cloud: needs its access keys and
network), ``clearml`` (not installed; its offline mode still needs a ClearML configuration), ``rl_insight``
(not installed; exports to an rl-insight collector, no local store).

The truth (what was handed to ``Tracking.log`` and the logger) is ``OUT/truth.json``: ``points`` as
``[tag, step, value]`` (NaN as the bare JSON token), ``generations`` as ``{step: [[input, output,
score], ...]}`` (the samples after verl's sort / shuffle / cut), the backends, project and experiment.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from tests.real.trainers.trl_trackers import go_offline, need_trackers

VERL_BACKENDS = ("wandb", "swanlab", "trackio", "mlflow", "tensorboard", "file")
VERL_TRACKING_PROJECT = "rl_board_verl"
VERL_TRACKING_EXPERIMENT = "grpo_tracking"
VERL_TRAIN_STEPS = 4
VERL_VAL_STEPS = (0, 3)  # val_before_train, then test_freq=3
VERL_GENERATIONS = 3  # trainer.log_val_generations
VERL_NAN = ("actor/grad_norm", 2)
TRUTH = "truth.json"


def config() -> dict[str, Any]:
    """The slice of verl's config these code paths read (and the trackers store as the run's config)."""
    return {
        "trainer": {
            "project_name": VERL_TRACKING_PROJECT,
            "experiment_name": VERL_TRACKING_EXPERIMENT,
            "logger": list(VERL_BACKENDS),
            "log_val_generations": VERL_GENERATIONS,
            "total_training_steps": VERL_TRAIN_STEPS,
            "test_freq": VERL_VAL_STEPS[1],
            "val_before_train": True,
        },
        "algorithm": {"adv_estimator": "grpo", "kl_ctrl": {"kl_coef": 0.001}},
        "data": {"train_batch_size": 4, "max_response_length": 64},
        "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}}, "rollout": {"n": 4, "name": "vllm"}},
    }


def train_metrics(step: int) -> dict[str, Any]:
    """One training step's metrics, with verl's names and the kinds of values verl hands to the logger."""
    import numpy as np

    grad_norm = math.nan if (("actor/grad_norm", step) == VERL_NAN) else 0.25 + step / 7
    return {
        "actor/pg_loss": (-1) ** step * 0.013 / step,
        "actor/entropy": np.float64(5.4321 - step / 3),
        "actor/grad_norm": grad_norm,
        "actor/lr": 1e-6,
        "actor/pg_clipfrac": 0.0,
        "critic/score/mean": float(np.mean([1.0, -1.0, 1.0, step % 2 * 2 - 1.0])),
        "critic/score/max": 1.0,
        "critic/score/min": -1.0,
        "critic/advantages/mean": 0.0,
        "critic/advantages/max": 1.5 - step / 11,
        "response_length/mean": 23.0 + step / 3,
        "response_length/clip_ratio": [0.0, 0.25, 0.0, 0.125][step - 1],
        "prompt_length/mean": 17.25,
        "perf/total_num_tokens": 2048 * step + 7,
        "perf/throughput": np.float64(1234.5678 * step),
        "timing_s/gen": 0.5 + step * 1e-3,
        "training/global_step": step,
        "training/epoch": 0,
    }


def val_metrics(step: int) -> dict[str, Any]:
    """The validation metrics (``@`` in their names, as verl's ``process_validation_metrics`` makes them)."""
    import numpy as np

    return {
        "val-core/math_dapo/acc/mean@4": np.float64(0.25 + step / 12),
        "val-aux/math_dapo/score/best@4/mean": 0.5 + step / 9,
        "val-aux/math_dapo/score/worst@4/std": 0.0,
        "val-aux/num_turns/mean": 1,
    }


def generations(step: int) -> tuple[list[str], list[str], list[float]]:
    """The validation inputs, outputs and scores ``_validate`` hands to ``_maybe_log_val_generations``."""
    inputs = [f"What is {a} plus {a + 3}?" for a in (7, 2, 11, 5)]
    outputs = [
        f"step {step}: {a} + {a + 3} = {2 * a + 3 + (i % 2)}\nAnswer: {2 * a + 3 + (i % 2)}"
        for i, a in enumerate((7, 2, 11, 5))
    ]
    scores = [1.0 if i % 2 == 0 else -1.0 for i in range(4)]
    return inputs, outputs, scores


def run(out: Path) -> dict[str, Any]:
    """Log everything through verl's code; returns the truth."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer
    from verl.utils.tracking import Tracking, ValidationGenerationsLogger

    cfg = OmegaConf.create(config())
    tracking = Tracking(
        project_name=cfg.trainer.project_name,
        experiment_name=cfg.trainer.experiment_name,
        default_backend=cfg.trainer.logger,
        config=OmegaConf.to_container(cfg, resolve=True),
    )
    trainer = RayPPOTrainer.__new__(RayPPOTrainer)
    trainer.config = cfg
    trainer.validation_generations_logger = ValidationGenerationsLogger(
        project_name=cfg.trainer.project_name, experiment_name=cfg.trainer.experiment_name
    )
    logged: dict[int, list[list[Any]]] = {}
    points: list[list[Any]] = []

    def validate(step: int) -> dict[str, Any]:
        trainer.global_steps = step
        inputs, outputs, scores = generations(step)
        shown: list[Any] = []
        original = trainer.validation_generations_logger.log

        def keep(loggers: Any, samples: list[Any], at: int) -> None:  # what verl hands its logger
            shown.extend(list(s) for s in samples)
            original(loggers, samples, at)

        trainer.validation_generations_logger.log = keep
        trainer._maybe_log_val_generations(inputs=inputs, outputs=outputs, scores=scores)
        trainer.validation_generations_logger.log = original
        logged[step] = shown
        return val_metrics(step)

    def log(data: dict[str, Any], step: int) -> None:
        tracking.log(data=data, step=step)
        points.extend([key, step, float(value)] for key, value in data.items())

    log(validate(0), 0)
    for step in range(1, VERL_TRAIN_STEPS + 1):
        metrics = {}
        if step in VERL_VAL_STEPS:
            metrics.update(validate(step))
        metrics.update(train_metrics(step))
        log(metrics, step)
    tracking.finish()
    return {
        "project": VERL_TRACKING_PROJECT,
        "experiment": VERL_TRACKING_EXPERIMENT,
        "backends": list(VERL_BACKENDS),
        "points": points,
        "generations": {str(step): rows for step, rows in logged.items()},
    }


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    go_offline(out)
    os.environ["TENSORBOARD_DIR"] = str(out / "tensorboard")
    os.environ["VERL_FILE_LOGGER_ROOT"] = str(out / "file")
    started = time.perf_counter()
    need_trackers()

    import swanlab

    # verl calls swanlab.init without settings: switch the hardware monitor off globally (its
    # ``__swanlab__.`` keys would run on a clock of their own and keep a thread sampling the machine).
    swanlab.merge_settings(swanlab.Settings(interactive=False, probe=swanlab.Settings.Probe(monitor=False)))
    import mlflow
    import trackio
    import verl
    import wandb

    truth = run(out)
    truth["versions"] = {m.__name__: m.__version__ for m in (verl, wandb, swanlab, trackio, mlflow)}
    truth["seconds"] = round(time.perf_counter() - started, 2)
    (out / TRUTH).write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
