"""Metrics at the scale of a sweep: thousands of TensorBoard runs, each figure beside its target.

    python benchmarks/metrics_scale.py                      # 2,000 runs of 20 tags, 100 steps each
    python benchmarks/metrics_scale.py --runs 500 --repeat 1
    python benchmarks/metrics_scale.py --tree /work/old     # the same figures for another checkout
    python benchmarks/metrics_scale.py --no-browser         # skip the chromium figure

The root is written once into --work (TensorBoard's own EventFileWriter, one
event per step holding every tag: how trainers log) and kept for the next
time. Each figure is taken in a fresh process with ``PYTHONPATH`` set to
--tree, so an older checkout can be measured the same way:

  index      every run's tags (what the run list and ``scalars`` show), cold
             (empty cache) then warm (same cache, nothing changed). A
             checkout without an index reads every run, as its Metrics page
             did.
  scalars    ``rl-board scalars ROOT --json --cache-dir C``, a whole process,
             cold then warm.
  page       ``rl-board serve ROOT`` on an empty cache, chromium on another
             page, then the click on "Metrics" until the run list and the
             first run's first chart are drawn (benchmarks/clicks.py's
             timing: script run finished, page settled). A new server and
             cache each time.

Prints median (range) and the load average at the start of each figure.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGETS = {"index_cold": 15.0, "index_warm": 1.0, "scalars_cold": 15.0, "scalars_warm": 1.0, "page": 3.0}
TAGS = 20

INDEX_PHASE = """
import sys, time
t = time.perf_counter()
try:
    from rl_board.metrics.index import metrics_index
    runs = len(metrics_index(sys.argv[1], cache_dir=sys.argv[2]).runs)
    how = "index"
except ImportError:  # a checkout before the index: its Metrics page read every run
    from rl_board.metrics.reader import load_metrics
    runs = len(load_metrics(sys.argv[1], cache_dir=sys.argv[2]).runs)
    how = "every run read"
print(time.perf_counter() - t, runs, how)
"""


def write_root(root: Path, runs: int, steps: int) -> Path:
    """A sweep: runs/lr_<k>/seed_<n>/events.out.tfevents.* with TAGS scalars per step."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    done = root / ".complete"
    if done.exists() and done.read_text() == f"{runs} {steps}":
        return root
    shutil.rmtree(root, ignore_errors=True)
    tags = [f"train/metric_{k:02d}" for k in range(TAGS)]
    for r in range(runs):
        folder = root / f"sweep/lr_{r % 10}/seed_{r:04d}"
        folder.mkdir(parents=True)
        writer = EventFileWriter(str(folder))
        for step in range(steps):
            values = [
                summary_pb2.Summary.Value(tag=tag, simple_value=float(k + step * 0.01 + r))
                for k, tag in enumerate(tags)
            ]
            writer.add_event(
                event_pb2.Event(step=step, wall_time=1000.0 + step, summary=summary_pb2.Summary(value=values))
            )
        writer.close()
    done.write_text(f"{runs} {steps}")
    return root


def load_average() -> float:
    return os.getloadavg()[0]


def env_for(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def cold_then_warm(name: str, repeat: int, once: Callable[[Path], float]) -> dict[str, list[float]]:
    """``once(cache)`` twice per repetition on a fresh cache folder: cold, then warm; with the load
    average."""
    out: dict[str, list[float]] = {f"{name}_cold": [], f"{name}_warm": [], "load": []}
    for _ in range(repeat):
        cache = Path(tempfile.mkdtemp(prefix="rlb-metrics-bench-"))
        try:
            out["load"].append(load_average())
            for key in (f"{name}_cold", f"{name}_warm"):
                out[key].append(once(cache))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    return out


def index_figures(tree: Path, root: Path, repeat: int) -> tuple[dict[str, list[float]], str]:
    """The index timed inside a fresh process (INDEX_PHASE), and how the checkout got it."""
    how: list[str] = []

    def once(cache: Path) -> float:
        done = subprocess.run(
            [sys.executable, "-c", INDEX_PHASE, str(root), str(cache)],
            env=env_for(tree),
            cwd=tree,
            capture_output=True,
            text=True,
            check=True,
        )
        seconds, _runs, said = done.stdout.split(maxsplit=2)
        how.append(said.strip())
        return float(seconds)

    return cold_then_warm("index", repeat, once), how[0]


def scalars_figures(tree: Path, root: Path, repeat: int) -> dict[str, list[float]]:
    """``rl-board scalars ROOT --json``, the whole process."""

    def once(cache: Path) -> float:
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "rl_board", "scalars", str(root), "--json", "--cache-dir", str(cache)],
            env=env_for(tree),
            cwd=tree,
            stdout=subprocess.DEVNULL,
            check=True,
        )
        return time.perf_counter() - t

    return cold_then_warm("scalars", repeat, once)


def page_figures(tree: Path, root: Path, repeat: int, work: Path) -> dict[str, list[float]]:
    """The click on Metrics, on a server started with an empty cache each time."""
    from playwright.sync_api import sync_playwright

    from benchmarks.clicks import CHROMIUM, CHROMIUM_ARGS, metrics_click

    out: dict[str, list[float]] = {"page": [], "load": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for k in range(repeat):
            out["load"].append(load_average())
            out["page"].append(
                metrics_click(
                    browser, root, work / f"serve-{k}.log", cwd=tree, shot=work / f"metrics-page-{k}.png"
                )
            )  # the server runs this checkout
        browser.close()
    return out


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout to measure (default: this one)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "rlb-metrics-scale")
    parser.add_argument("--no-browser", action="store_true")
    ns = parser.parse_args()
    ns.work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    root = write_root(ns.work / f"root-{ns.runs}x{ns.steps}", ns.runs, ns.steps)
    print(
        f"root: {ns.runs} runs x {TAGS} tags x {ns.steps} steps "
        f"({time.perf_counter() - t:.0f} s to have it); "
        f"tree: {ns.tree}; {os.cpu_count()} cores"
    )
    figures, how = index_figures(ns.tree, root, ns.repeat)
    loads = figures.pop("load")
    scalars = scalars_figures(ns.tree, root, ns.repeat)
    loads += scalars.pop("load")
    figures.update(scalars)
    if not ns.no_browser:
        page = page_figures(ns.tree, root, ns.repeat, ns.work)
        loads += page.pop("load")
        figures.update(page)
    print(f"\n| figure ({how}) | seconds, median (range) of {ns.repeat} | target |")
    print("|---|---|---|")
    names = {
        "index_cold": "whole index, cold",
        "index_warm": "whole index, warm",
        "scalars_cold": "`rl-board scalars ROOT --json`, cold",
        "scalars_warm": "`rl-board scalars ROOT --json`, warm",
        "page": "Metrics page first visit: click to run list and first run's charts",
    }
    for key, values in figures.items():
        goal = TARGETS[key]
        verdict = "met" if values and statistics.median(values) <= goal else "**missed**"
        print(f"| {names[key]} | {spread(values)} | ≤ {goal:g} s: {verdict} |")
    print(f"\nload average at the start of each figure: {', '.join(f'{v:.1f}' for v in loads)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
