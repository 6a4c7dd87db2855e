"""Log the tracker test run with the real wandb library, offline, as a trainer would.

Run as ``python wandb_writer.py OUT_DIR [--mode offline] [--variant plain|trl|both|tiny]`` with a
temporary HOME and ``WANDB_MODE=offline`` set by the caller (tests/trackers/test_wandb.py). Variants:

- ``plain``: ``run.log(row, step=step)`` once per step, as verl's and ROLL's tracker wrappers call it.
- ``trl``: what transformers' WandbCallback and TRL's GRPOTrainer send: ``train/global_step`` declared
  as every metric's step (``define_metric("*", step_metric=..., step_sync=True)``), rows logged without
  ``step=``, profiling timers logged between training steps (so ``_step`` runs ahead of the trainer
  step), and a ``completions`` wandb.Table at two steps, the last one logged twice.
- ``tiny``: the small run shipped in tests/data/wandb/ for the tests that run without wandb: nested
  dicts, a bool, a string, NaN and +-inf, a histogram, a table, a glob step metric, a late config
  update and a summary value set by hand (``TINY_*`` below say what it logs).

Only offline is covered: an online run needs the W&B server (this machine reaches PyPI only), and no
wandb setting writes an online-shaped ``run-*`` folder without one.

It prints one JSON line per run: its variant, run folder and the logging window (wall-clock seconds).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script: `tests` importable

from tests.helpers import tracker_truth

PROJECT = "rl-board-tracker-test"
TRL_STEP = "train/global_step"
PROFILING = (
    "profiling/Time taken: GRPOTrainer._prepare_inputs",
    "profiling/Time taken: GRPOTrainer._calculate_rewards",
)
COMPLETION_COLUMNS = ["step", "prompt", "completion", "reward", "advantage"]
TABLE_STEPS = (25, 50)
"""Trainer steps the TRL variant logs its completions table at; the last one twice (as TRL does)."""


TINY_STEPS = range(1, 9)
TINY_CONFIG = {"lr": 0.001, "model": {"name": "tiny", "layers": 2}, "tags": ["a", "b"]}
TINY_EVAL_STEP = "eval/step"
"""The tiny run's step metric for ``eval/*`` (logged every 4th step as step // 4)."""
TINY_HISTOGRAM = ([1, 2, 3], [0.0, 1.0, 2.0, 3.0])
"""(counts, bin edges) of the histogram the tiny run logs at step 4."""
TINY_TABLE = (["prompt", "completion"], [["p1", "c1"], ["p2", "c2"]])
"""(columns, rows) of the table the tiny run logs at step 6."""


def tiny_row(step: int) -> dict[str, object]:
    """What the tiny run logs at ``step`` (without its histogram and table)."""
    row: dict[str, object] = {
        "loss": 1.0 / step,
        "acc": step / 10,
        "nested": {"a": step * 0.5, "b": {"c": step}},
        "flag": step % 2 == 0,
        "note": f"s{step}",
    }
    if step == 3:
        row["loss"] = math.nan
    if step in (5, 6):
        row["acc"] = math.inf if step == 5 else -math.inf
    if step % 4 == 0:
        row[TINY_EVAL_STEP] = step // 4
        row["eval/score"] = 0.5 + step / 100
    return row


def environment(home: Path) -> dict[str, str]:
    """The child's environment: a temporary HOME and wandb offline, with none of the user's WANDB_
    settings."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("WANDB_")}
    env.update(
        HOME=str(home),
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        WANDB_DISABLE_GIT="true",
        WANDB_DISABLE_CODE="true",
        WANDB_ERROR_REPORTING="false",
        WANDB_CONFIG_DIR=str(home / ".config"),
        WANDB_CACHE_DIR=str(home / ".cache"),
        WANDB_DATA_DIR=str(home / ".data"),
    )
    return env


def _settings() -> Any:
    """No git, code, console capture or system metrics: nothing the test needs, and nothing slow."""
    import wandb

    return wandb.Settings(
        mode="offline",
        disable_git=True,
        save_code=False,
        console="off",
        x_disable_stats=True,
        x_disable_meta=True,
    )


def completions(step: int) -> list[list[object]]:
    """The completions table TRL would log at ``step`` (two prompts, two completions each)."""
    rows = []
    for i in range(4):
        reward = round(0.25 * i + 0.01 * step, 6)
        rows.append([step, f"prompt {i // 2} at step {step}", f"completion {i}", reward, reward - 0.5])
    return rows


def log_plain(out_dir: Path) -> dict[str, object]:
    """One ``run.log(row, step=step)`` per trainer step."""
    import wandb

    start = time.time()
    run = wandb.init(
        project=PROJECT,
        dir=str(out_dir),
        config=tracker_truth.CONFIG,
        mode="offline",
        name="plain",
        settings=_settings(),
    )
    for step, row in tracker_truth.logged_rows():
        run.log(row, step=step)
    folder = Path(run.dir).parent
    run.finish()
    return {"variant": "plain", "folder": str(folder), "start": start, "end": time.time()}


def log_trl(out_dir: Path) -> dict[str, object]:
    """As transformers' WandbCallback and TRL's GRPOTrainer log: no ``step=``, a declared step metric."""
    import wandb

    start = time.time()
    run = wandb.init(
        project=PROJECT,
        dir=str(out_dir),
        config=tracker_truth.CONFIG,
        mode="offline",
        name="trl",
        settings=_settings(),
    )
    run.define_metric(TRL_STEP)
    run.define_metric("*", step_metric=TRL_STEP, step_sync=True)
    for step, row in tracker_truth.logged_rows():
        for i, name in enumerate(PROFILING):
            run.log({name: 0.001 * step + i})  # TRL's profiling_context: its own log call, no step
        run.log({**row, TRL_STEP: step})
        if step in TABLE_STEPS:
            table = wandb.Table(columns=COMPLETION_COLUMNS, data=completions(step))
            run.log({"completions": table})
            if step == TABLE_STEPS[-1]:
                run.log({"completions": wandb.Table(columns=COMPLETION_COLUMNS, data=completions(step))})
    folder = Path(run.dir).parent
    run.finish()
    return {"variant": "trl", "folder": str(folder), "start": start, "end": time.time()}


def log_tiny(out_dir: Path) -> dict[str, object]:
    """The small run shipped in tests/data/wandb/."""
    import wandb

    start = time.time()
    run = wandb.init(
        project=PROJECT,
        dir=str(out_dir),
        config=TINY_CONFIG,
        mode="offline",
        name="tiny",
        settings=_settings(),
    )
    run.define_metric(TINY_EVAL_STEP)
    run.define_metric("eval/*", step_metric=TINY_EVAL_STEP)
    for step in TINY_STEPS:
        row = tiny_row(step)
        if step == 4:
            row["hist"] = wandb.Histogram(np_histogram=TINY_HISTOGRAM)
        if step == 6:
            row["samples"] = wandb.Table(columns=TINY_TABLE[0], data=TINY_TABLE[1])
        run.log(row, step=step)
    run.config.update({"late": True})
    run.summary["best"] = 0.9
    folder = Path(run.dir).parent
    run.finish()
    return {"variant": "tiny", "folder": str(folder), "start": start, "end": time.time()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument(
        "--mode",
        choices=["offline"],
        default="offline",
        help="only offline: an online run needs the W&B server",
    )
    parser.add_argument("--variant", choices=["plain", "trl", "both", "tiny"], default="both")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    writers = {"plain": [log_plain], "trl": [log_trl], "both": [log_plain, log_trl], "tiny": [log_tiny]}
    writers = writers[args.variant]
    for write in writers:
        print(json.dumps(write(args.out_dir)), flush=True)


if __name__ == "__main__":
    main()
