"""Log the tracker test run with the real swanlab library, offline, as a trainer would.

Run as ``python swanlab_writer.py OUT_DIR [--mode offline|local]`` with a temporary HOME set by the
caller (tests/trackers/test_swanlab.py). ``swanlab.init(mode=..., log_dir=OUT_DIR, config=CONFIG)``,
then ``swanlab.log(row, step=step)`` once per step, as verl's and ROLL's tracker wrappers call it, and
verl's validation generations (``swanlab.echarts.Table`` with ``step, input, output, score``) at
``TABLE_STEPS``, the last one logged twice (swanlab keeps the first; the file is the same).

- ``offline``: ``OUT_DIR/run-<time>-<id>/run-<id>.swanlab`` (and ``files/config.yaml``, ``media/``).
- ``local``: the same run folder, plus the local dashboard's ``OUT_DIR/runs.swanlab`` (SQLite) and
  its JSON lines under ``logs/``; it needs swanboard (``swanlab[dashboard]``, swanboard 0.1.10b2).

No login, no network: swanlab offline and local modes never call the cloud (its version check and
webhook are not run without one), and the hardware monitor is switched off (its ``__swanlab__.``
keys would run on a step counter of their own).

It prints one JSON line: the mode, the run folder, the run id and the logging window (wall-clock seconds).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script: `tests` importable

import swanlab

from tests.helpers import tracker_truth

PROJECT = "rl-board-tracker-test"
TABLE_KEY = "val/generations"
TABLE_COLUMNS = ["step", "input", "output", "score"]
TABLE_STEPS = (25, 50)
"""Steps verl logs its validation generations at here; the last one twice."""


def generations(step: int) -> list[list[object]]:
    """verl's rows at ``step``: ``[step, input, output, score]`` per sample (one score NaN)."""
    return [
        [step, f"question {i}", f"answer {i} at step {step}", float("nan") if i == 2 else 0.5 * i]
        for i in range(3)
    ]


def log_generations(step: int) -> None:
    """As verl's ``ValidationGenerationsLogger.log_generations_to_swanlab`` does."""
    table = swanlab.echarts.Table()
    table.add(headers=TABLE_COLUMNS, rows=generations(step))
    swanlab.log({TABLE_KEY: table}, step=step)


def write(out_dir: Path, mode: str) -> dict[str, object]:
    """One run of ``tracker_truth.logged_rows()`` in ``mode``."""
    if mode == "local":  # without it swanlab only warns, and writes no dashboard database
        importlib.import_module("swanboard")
    settings = swanlab.Settings(interactive=False, probe=swanlab.Settings.Probe(monitor=False))
    start = time.time()
    run = swanlab.init(
        mode=mode,
        log_dir=str(out_dir),
        project=PROJECT,
        name=f"truth-{mode}",
        config=tracker_truth.CONFIG,
        settings=settings,
    )
    for step, row in tracker_truth.logged_rows():
        swanlab.log(row, step=step)
        if step in TABLE_STEPS:
            log_generations(step)
    log_generations(TABLE_STEPS[-1])
    folder, run_id = Path(run.dir), run.id
    swanlab.finish()
    if mode == "local" and not (out_dir / "runs.swanlab").is_file():
        raise SystemExit(f"swanlab wrote no runs.swanlab in {out_dir} (local mode)")
    return {"mode": mode, "folder": str(folder), "id": run_id, "start": start, "end": time.time()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--mode", choices=("offline", "local"), default="offline")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    print(json.dumps(write(args.out_dir, args.mode)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
