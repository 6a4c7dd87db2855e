"""Log ``tracker_truth``'s run with the real trackio library, offline, into ``OUT/<project>.db``.

Usage: ``python -m tests.helpers.trackio_writer OUT VARIANT``, in a child process whose environment
comes from ``environment(OUT, HOME)`` (trackio reads ``TRACKIO_DIR`` when it is imported). Variants:

- ``truth``: ``trackio.log(row, step=step)`` once per step, as verl and ROLL's wrapper-less callers do,
  plus one ``trackio.Trace`` at steps 10 and 20 (verl's trace backend, ROLL's ``log_traces``).
- ``trl``: shaped as TRL 1.16 + transformers' ``TrackioCallback`` send it: every step a profiling timer
  logged with ``step=<trainer global_step before the step>`` (``trl/extras/profiling.py``), then the
  metrics without ``step=`` but with ``train/global_step`` (``TrackioCallback.on_log``), then TRL's
  completions table without ``step=`` (``GRPOTrainer.log``); trackio numbers the metric rows 1, 3, 5, ...
  itself. The last table is logged twice, as TRL's closing ``log`` call does.
- ``roll``: ROLL's ``TrackioTracker.log``: the step as a metric named ``step``, no ``step=``.
- ``big``: ``STEPS`` x ``TAGS`` points for timing readers (``BIG_STEPS``, ``BIG_TAGS``).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

from tests.helpers import tracker_truth

PROJECT = "rl-board-truth"
RUN = "grpo-tiny"
TRL_PROMPTS = ("2+2=", "capital of France?")
BIG_STEPS, BIG_TAGS = 2000, 200


def environment(out: Path, home: Path) -> dict[str, str]:
    """The child's environment: a temporary HOME, trackio's folder, every network path switched off."""
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("TRACKIO_", "HF_", "HUGGING"))
    }
    env.update(
        HOME=str(home),
        TRACKIO_DIR=str(out),
        TRACKIO_STORAGE_MODE="sqlite",
        HF_HUB_OFFLINE="1",
        HF_HOME=str(home / "hf"),
        HF_HUB_DISABLE_TELEMETRY="1",
        GRADIO_ANALYTICS_ENABLED="False",
        DO_NOT_TRACK="1",
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
    )
    return env


def completions_rows(step: int) -> list[dict[str, object]]:
    """The rows of TRL's completions table at ``step`` (its columns: step, prompt, completion, rewards...,
    advantage)."""
    return [
        {
            "step": step,
            "prompt": prompt,
            "completion": f"answer {i} at {step}",
            "length_reward": 0.25 * i,
            "advantage": 0.5 - i,
        }
        for i, prompt in enumerate(TRL_PROMPTS)
    ]


def _truth(trackio) -> None:
    trackio.init(project=PROJECT, name=RUN, config=tracker_truth.CONFIG, auto_log_gpu=False)
    for step, row in tracker_truth.logged_rows():
        trackio.log(row, step=step)
        if step in (10, 20):
            trace = trackio.Trace(
                messages=[
                    {"role": "user", "content": f"q{step}"},
                    {"role": "assistant", "content": f"a{step}"},
                ],
                metadata={"score": step / 10},
            )
            trackio.log({"rollout": trace}, step=step)
    trackio.finish()


def _trl(trackio) -> None:
    trackio.init(project=PROJECT, name="trl-run", config=tracker_truth.CONFIG, auto_log_gpu=False)
    for step, row in tracker_truth.logged_rows():
        trackio.log({"profiling/Time taken: GRPOTrainer._generate": 0.01 * step}, step=step - 1)
        trackio.log({**row, "train/global_step": step})
        trackio.log({"completions": trackio.Table(data=completions_rows(step))})
    trackio.log({"completions": trackio.Table(data=completions_rows(tracker_truth.STEPS[-1]))})
    trackio.finish()


def _roll(trackio) -> None:
    trackio.init(project=PROJECT, name="roll-run", config=tracker_truth.CONFIG, auto_log_gpu=False)
    for step, row in tracker_truth.logged_rows():
        trackio.log({**row, "step": step})
    trackio.finish()


def _big(trackio) -> None:
    trackio.init(project="big", name="big-run", config={"lr": 1e-6}, auto_log_gpu=False)
    tags = [f"group{t % 10}/metric_{t}" for t in range(BIG_TAGS)]
    for step in range(BIG_STEPS):
        trackio.log({tag: math.sin(step + t) for t, tag in enumerate(tags)}, step=step)
    trackio.finish()


VARIANTS = {"truth": _truth, "trl": _trl, "roll": _roll, "big": _big}


def main(argv: list[str]) -> None:
    """Write one variant; the environment must already be ``environment(...)``'s."""
    out, variant = Path(argv[0]), argv[1]
    if Path(os.environ.get("TRACKIO_DIR", "")) != out:
        raise SystemExit("run me with environment(OUT, HOME): TRACKIO_DIR must be OUT")
    import trackio

    VARIANTS[variant](trackio)


if __name__ == "__main__":
    main(sys.argv[1:])
