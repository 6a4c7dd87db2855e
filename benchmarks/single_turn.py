"""Single-turn cold loads, this checkout against another revision, side by side.

    python benchmarks/single_turn.py                      # against HEAD, 1GB runs, 3 rounds
    python benchmarks/single_turn.py --base e2604fd --size 300MB --repeat 5
    python benchmarks/single_turn.py --only verl --repeat 5

Every sample is a trajectory, single-turn ones too: their turns are counted
at ingest from the columns (``chat_text.prompt_turns``). This measures what
that costs where it could: two single-turn runs of about ``--size`` each,

- ``demo``: rl-board's own demo run (plain prompts, token arrays: most bytes
  are numbers), the run ``benchmarks/load.py`` times;
- ``verl``: verl's GRPO dump as its agent loop writes a direct answer
  (``input``/``output``, the chat template's role lines kept after
  ``skip_special_tokens``: a system and a user turn per prompt), text only, so
  every byte is text the turns are told from.

The other revision is unpacked with ``git archive`` into a temp folder. Each
load runs in a fresh process with an empty cache, the two checkouts
alternating within a round (the files already in the page cache); the table
gives medians and the median of per-round ratios. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import MB, make_run, parse_size, wait_idle

ROOT = Path(__file__).resolve().parents[1]
SYSTEM = "You are a careful math tutor. Think step by step and put the final answer after ####."
LOAD = (
    "import json, sys, time\nfrom rl_board.rollouts.store import RolloutStore\nt = time.perf_counter()\n"
    "s = RolloutStore.open(sys.argv[1], cache_dir=sys.argv[2])\n"
    "print(json.dumps({'seconds': time.perf_counter() - t, 'samples': s.num_samples}))"
)


def verl_run(size: int, work: Path) -> Path:
    """verl's ``{step}.jsonl``: 64 prompts x 8 answers per step, ~1.5 KB answers, role-line prompts."""
    run = work / f"verl_{size // MB}MB"
    if run.exists() and sum(p.stat().st_size for p in run.glob("*.jsonl")) >= size * 0.9:
        return run
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    rng = random.Random(0)
    words = [
        "so",
        "the",
        "sum",
        "carries",
        "one",
        "and",
        "then",
        "we",
        "add",
        "the",
        "tens",
        "digit",
        "which",
        "gives",
    ]
    written, step = 0, 1
    while written < size:
        lines = []
        for p in range(64):
            a, b = rng.randint(100, 999), rng.randint(100, 999)
            prompt = f"system\n{SYSTEM}\nuser\nWhat is {a} + {b}?\nassistant\n"
            for _ in range(8):
                body = " ".join(rng.choice(words) for _ in range(rng.randint(150, 350)))
                answer = f"{body}\n#### {a + b + rng.choice([0, 0, 1])}"
                lines.append(
                    json.dumps(
                        {
                            "input": prompt,
                            "output": answer,
                            "gts": str(a + b),
                            "score": float(rng.random() < 0.5),
                            "step": step,
                            "request_id": f"{step}-{p}",
                        }
                    )
                )
        data = "\n".join(lines) + "\n"
        (run / f"{step}.jsonl").write_text(data)
        written += len(data)
        step += 1
    return run


def unpack(rev: str, work: Path) -> Path:
    """The package of ``rev`` in a folder of its own (``git archive``)."""
    out = work / f"base_{rev}"
    if (out / "rl_board").is_dir():
        return out
    out.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "rl_board"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out


def cold(code: Path, run: Path, cache: Path, wait: float) -> float:
    shutil.rmtree(cache, ignore_errors=True)
    wait_idle(wait)
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run(
        [sys.executable, "-c", LOAD, str(run), str(cache)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=str(code),
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", default="HEAD", help="the revision to compare with (default HEAD)")
    parser.add_argument("--size", type=parse_size, default=1024 * MB, help="each run's size (default 1GB)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--wait-idle", type=float, default=30.0, metavar="S", help="wait for idle CPUs (s)")
    parser.add_argument("--only", choices=["demo", "verl"], help="time one of the two runs")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "rlb-single-turn-bench")
    ns = parser.parse_args()
    ns.work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    makers = {"demo": make_run, "verl": verl_run}
    runs = {name: make(ns.size, ns.work) for name, make in makers.items() if ns.only in (None, name)}
    print(f"runs written in {time.perf_counter() - t:.0f} s under {ns.work}")
    sides = {ns.base: unpack(ns.base, ns.work), "this checkout": ROOT}
    print(f"{'run':<6} {'MB':>6} " + " ".join(f"{name[:14]:>15}" for name in sides) + f" {'ratio':>7}")
    for name, run in runs.items():
        size = sum(p.stat().st_size for p in run.rglob("*.jsonl")) / MB
        times: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(ns.repeat):
            for side, code in sides.items():
                times[side].append(cold(code, run, ns.work / "cache", ns.wait_idle))
        base, here = (times[s] for s in sides)
        ratio = statistics.median(h / b for b, h in zip(base, here, strict=True))
        cells = " ".join(f"{statistics.median(v):>13.2f} s" for v in times.values())
        print(
            f"{name:<6} {size:>6.0f} {cells} {ratio:>6.3f}x   (ranges: "
            + "; ".join(f"{min(v):.2f}-{max(v):.2f}" for v in times.values())
            + ")"
        )


if __name__ == "__main__":
    main()
