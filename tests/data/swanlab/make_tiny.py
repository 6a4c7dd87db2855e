"""Write the tiny SwanLab run the unit tests read (tests/unit/test_swanlab_log.py), with the real library.

Run with swanlab 0.10.3 installed and a temporary HOME: ``python make_tiny.py OUT_DIR``. It logs three
tags over ten steps (a NaN, three zeros, a gap) and one verl-style generations table, then writes
``expected.json`` (the points as logged) beside the run folder. Only the run log, ``files/config.yaml``
and the table's JSON are kept in the repository.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import swanlab

STEPS = range(1, 11)


def row(step: int) -> dict[str, float]:
    out = {
        "train/reward": 0.1 * step + 0.001 * math.sin(step),
        "train/kl": math.nan if step == 4 else 0.002 * step,
        "actor/clip_frac": 0.0 if step <= 3 else 0.01 * step,
    }
    if step in (6, 7):
        del out["train/kl"]  # a gap
    return out


def main() -> int:
    out = Path(sys.argv[1])
    settings = swanlab.Settings(
        interactive=False, probe=swanlab.Settings.Probe(monitor=False, requirements=False)
    )
    run = swanlab.init(
        mode="offline",
        log_dir=str(out),
        project="tiny",
        name="tiny",
        settings=settings,
        config={"algorithm": "grpo", "lr": 1e-6, "rollout": {"n": 8, "temperature": 1.0}},
    )
    for step in STEPS:
        swanlab.log(row(step), step=step)
    table = swanlab.echarts.Table()
    table.add(
        headers=["step", "input", "output", "score"], rows=[[5, "q", "a", 1.0], [5, "q2", "a2", math.nan]]
    )
    swanlab.log({"val/generations": table}, step=5)
    folder = Path(run.dir)
    swanlab.finish()
    points = [
        [tag, step, value if not math.isnan(value) else "NaN"]
        for step in STEPS
        for tag, value in row(step).items()
    ]
    lines = ",\n".join(json.dumps(point) for point in points)
    (out / "expected.json").write_text(f'{{"folder": {json.dumps(folder.name)}, "points": [\n{lines}\n]}}\n')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
