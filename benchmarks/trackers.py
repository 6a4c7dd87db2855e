"""Trackers' local stores against TensorBoard: the same run, read cold and warm, side by side in one run.

    python benchmarks/trackers.py                          # 2,000 steps x 200 tags (400k points) per store
    python benchmarks/trackers.py --steps 200 --repeat 1   # a quick look
    python benchmarks/trackers.py --only wandb,tensorboard

Each store is written once into --work by the tracker's own library (offline,
a temporary HOME; it needs the `trackers` extra), and TensorBoard's copy by
TensorBoard's EventFileWriter: one log call per step holding every tag, as
trainers log. Each figure is taken in a fresh process (imports not counted):

  cold   ``load_metrics(store, cache_dir=C)`` on an empty cache C
  warm   the same call again on the same cache (nothing changed)

and printed as a median (range) of --repeat runs, with microseconds per point
and the ratio to TensorBoard's cold read beside the 1.2x target (warm: 0.1 s).
The load average is printed with each row. With --page, the click on
"Metrics" (benchmarks/clicks.py's timing: the script run finished and the
first chart drawn) on a server started on an empty cache, for the TensorBoard
store and each tracker's, beside TensorBoard's (the same click budget).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # benchmarks.clicks, for --page
TARGET_RATIO = 1.2  # cold read time per point, against TensorBoard's
TARGET_WARM = 0.1  # seconds

WRITERS = {
    "wandb": """
import os, sys, wandb
out, steps, tags = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
run = wandb.init(project="bench", dir=out, mode="offline", config={"lr": 1e-6, "steps": steps})
for step in range(steps):
    run.log({f"group_{k % 20:02d}/metric_{k:03d}": k + step * 0.01 for k in range(tags)}, step=step)
run.finish()
""",
    "swanlab": """
import os, sys, swanlab
out, steps, tags = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
swanlab.init(project="bench", logdir=out, mode="offline", config={"lr": 1e-6, "steps": steps})
for step in range(steps):
    swanlab.log({f"group_{k % 20:02d}/metric_{k:03d}": k + step * 0.01 for k in range(tags)}, step=step)
swanlab.finish()
""",
    "trackio": """
import os, sys
out, steps, tags = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.environ["TRACKIO_DIR"] = out
import trackio
trackio.init(project="bench", name="run", config={"lr": 1e-6, "steps": steps})
for step in range(steps):
    trackio.log({f"group_{k % 20:02d}/metric_{k:03d}": k + step * 0.01 for k in range(tags)}, step=step)
trackio.finish()
""",
    "mlflow": """
import os, sys, mlflow
out, steps, tags = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mlflow.set_tracking_uri(f"sqlite:///{out}/mlflow.db")
mlflow.set_experiment("bench")
with mlflow.start_run(run_name="run"):
    mlflow.log_params({"lr": 1e-6, "steps": steps})
    for step in range(steps):
        mlflow.log_metrics(
            {f"group_{k % 20:02d}/metric_{k:03d}": k + step * 0.01 for k in range(tags)}, step=step
        )
""",
    "tensorboard": """
import sys
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
out, steps, tags = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
writer = EventFileWriter(out)
for step in range(steps):
    values = [
        summary_pb2.Summary.Value(tag=f"group_{k % 20:02d}/metric_{k:03d}", simple_value=k + step * 0.01)
        for k in range(tags)
    ]
    writer.add_event(
        event_pb2.Event(step=step, wall_time=1000.0 + step, summary=summary_pb2.Summary(value=values))
    )
writer.close()
""",
}

READ_PHASE = """
import json, sys, time
from rl_board.metrics.reader import load_metrics
t = time.perf_counter()
bundle = load_metrics(sys.argv[1], cache_dir=sys.argv[2])
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "points": len(bundle.scalars), "runs": [r.run for r in bundle.runs],
                  "problems": [p.reason for p in bundle.problems][:3]}))
"""


def write_store(kind: str, folder: Path, steps: int, tags: int) -> Path:
    """The store written by the tracker's own library, once (kept for the next time)."""
    done = folder / ".complete"
    if done.exists() and done.read_text() == f"{steps} {tags}":
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    home = Path(tempfile.mkdtemp(prefix="rlb-tracker-home-"))
    env = {
        **os.environ,
        "HOME": str(home),
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_DISABLE_GIT": "true",
        "SWANLAB_MODE": "offline",
        "MLFLOW_TRACKING_URI": "",
        "HF_HUB_OFFLINE": "1",
        "TRACKIO_DIR": str(folder),
    }
    try:
        subprocess.run(
            [sys.executable, "-c", WRITERS[kind], str(folder), str(steps), str(tags)],
            env=env,
            cwd=folder,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    done.write_text(f"{steps} {tags}")
    return folder


def read_once(store: Path, cache: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", READ_PHASE, str(store), str(cache)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def figures(store: Path, repeat: int) -> dict[str, list]:
    out: dict[str, list] = {"cold": [], "warm": [], "load": [], "points": [], "problems": []}
    for _ in range(repeat):
        cache = Path(tempfile.mkdtemp(prefix="rlb-tracker-cache-"))
        try:
            out["load"].append(os.getloadavg()[0])
            cold = read_once(store, cache)
            warm = read_once(store, cache)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        out["cold"].append(cold["seconds"])
        out["warm"].append(warm["seconds"])
        out["points"].append(cold["points"])
        out["problems"] = cold["problems"]
    return out


def page_figures(store: Path, repeat: int, work: Path) -> list[float]:
    """Seconds from the click on "Metrics" to the run's first chart, a new server and cache each time."""
    from playwright.sync_api import sync_playwright

    from benchmarks.clicks import CHROMIUM, CHROMIUM_ARGS, metrics_click

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        out = [metrics_click(browser, store, work / f"serve-{store.name}-{k}.log") for k in range(repeat)]
        browser.close()
    return out


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--tags", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default=",".join(WRITERS), help="stores, comma-separated")
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "rlb-trackers-bench"))
    parser.add_argument("--page", action="store_true", help="also time the click on Metrics in chromium")
    args = parser.parse_args()
    kinds = ["tensorboard", *[k for k in args.only.split(",") if k != "tensorboard" and k in WRITERS]]
    work = Path(args.work)
    print(
        f"{args.steps} steps x {args.tags} tags = {args.steps * args.tags:,} points per store; "
        f"medians of {args.repeat} (range); {os.cpu_count()} cores"
    )
    print(
        f"{'store':12} {'points':>8} {'cold s':>20} {'us/point':>9} {'vs TB':>6} {'(<=1.2)':>7} "
        f"{'warm s':>20} {'(<0.1)':>6} {'load':>5}"
    )
    base = None
    for kind in kinds:
        store = write_store(kind, work / kind, args.steps, args.tags)
        got = figures(store, args.repeat)
        cold = statistics.median(got["cold"])
        per_point = cold / max(got["points"][0], 1) * 1e6
        base = per_point if kind == "tensorboard" else base
        ratio = per_point / base if base else float("nan")
        warm = statistics.median(got["warm"])
        print(
            f"{kind:12} {got['points'][0]:>8} {spread(got['cold']):>20} {per_point:>9.2f} {ratio:>6.2f} "
            f"{'ok' if ratio <= TARGET_RATIO else 'OVER':>7} {spread(got['warm']):>20} "
            f"{'ok' if warm < TARGET_WARM else 'OVER':>6} {statistics.median(got['load']):>5.2f}"
        )
        if got["problems"]:
            print(f"{'':12} problems: {got['problems']}")
        if args.page:
            clicks = page_figures(store, args.repeat, work)
            print(f"{'':12} click on Metrics to the first chart: {spread(clicks)} s")


if __name__ == "__main__":
    main()
