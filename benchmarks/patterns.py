"""Failure patterns: how well each signal separates planted answers, which rules fire on clean and planted
runs, and what the signals cost a cold load. Prints figures beside targets; asserts nothing.

    .venv/bin/python benchmarks/patterns.py [--seeds 3] [--size-mb 200]

Clean runs: the bundled samples (rollout_samples/) but the demo PPO run, whose reward hacking is planted, and
generated runs with nothing planted. Planted runs: one
failure each (a reward-hacking template spreading, loops, mixed scripts, answers cut at the length cap), its
rate growing over the steps (``rl_board/rollouts/planted.py``). A rule that fires on a clean run is a bug.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rl_board.health.checks import RolloutRun, check_rollouts  # noqa: E402
from rl_board.rollouts import planted, signals  # noqa: E402
from rl_board.rollouts.store import RolloutStore  # noqa: E402

RULES = {"template": "template_spreading", "loops": "loops", "mixed": "mixed_scripts", "cut": "cut_at_length"}
PATTERN_RULES = set(RULES.values())
# Bundled runs that are not clean: `rl-board demo` plants a repeated "Great question!" reward hack in ppo_math
PLANTED_DEMO = {"ppo_math": "the demo's planted reward hacking: a repeated 'Great question!' answer"}


def fired(store: RolloutStore, name: str) -> set[str]:
    return {f.rule for f in check_rollouts(RolloutRun.from_store(name, store))} & PATTERN_RULES


def separation(store: RolloutStore, truth: planted.Planted, kind: str) -> tuple[float, float]:
    """(precision, recall) of the signal for ``kind`` against what was planted."""
    frame = store.samples(columns=["repetition", "scripts"] + (["template"] if kind == "template" else []))
    keys = list(zip(frame["step"], frame["sample"], strict=True))
    if kind == "template":
        flagged = frame["template"] > 0
    elif kind == "loops":
        flagged = frame["repetition"] >= 0.5
    else:
        flagged = frame["scripts"].fillna("").str.contains("+", regex=False)
    want = {"template": truth.template, "loops": truth.loop, "mixed": truth.mixed}[kind]
    got = {k for k, f in zip(keys, flagged, strict=True) if f}
    hit = len(got & want)
    return (hit / len(got) if got else 1.0), (hit / len(want) if want else 1.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--size-mb", type=int, default=200, help="size of the token-level run for the cost figure"
    )
    ns = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="patterns-"))
    print("False alarms on clean runs (target: none)")
    bundled = sorted(p for p in (REPO / "rollout_samples").iterdir() if p.is_dir())
    for run in (p for p in bundled if p.name not in PLANTED_DEMO):
        store = RolloutStore.open(run, cache_dir=tmp / "cache")
        print(
            f"  bundled {run.name:<12} rules fired: {sorted(fired(store, run.name)) or 'none'}; "
            f"families: {len(store.pattern_families())}"
        )
    for seed in range(ns.seeds):
        planted.write(tmp / f"clean{seed}", seed=seed)
        store = RolloutStore.open(tmp / f"clean{seed}", cache_dir=tmp / "cache")
        print(
            f"  generated clean seed {seed}: rules fired: {sorted(fired(store, 'clean')) or 'none'}; "
            f"families: {len(store.pattern_families())}, {store.signal_counts()}"
        )
    print(
        "\nPlanted runs: separation of the planted answers (target: precision and recall near 1)"
        " and rules fired"
    )
    for run in (p for p in bundled if p.name in PLANTED_DEMO):  # the demo's own planted hacking
        store = RolloutStore.open(run, cache_dir=tmp / "cache")
        print(
            f"  bundled {run.name} ({PLANTED_DEMO[run.name]}): rules fired: "
            f"{sorted(fired(store, run.name)) or 'none'}; families: {len(store.pattern_families())}"
        )
    plans = {
        "template": {"template": 0.5},
        "loops": {"loops": 0.4},
        "mixed": {"mixed": 0.4},
        "cut": {"cut": 0.5},
    }
    for kind, rates in plans.items():
        for seed in range(ns.seeds):
            run = tmp / f"{kind}{seed}"
            truth = planted.write(run, seed=seed, **rates)
            store = RolloutStore.open(run, cache_dir=tmp / "cache")
            rules = fired(store, kind)
            sep = (
                ""
                if kind == "cut"
                else "precision {:.3f} recall {:.3f}; ".format(*separation(store, truth, kind))
            )
            print(
                f"  {kind:<8} seed {seed}: {sep}rules fired: {sorted(rules)} "
                f"({'hit' if RULES[kind] in rules else 'MISSED'})"
            )
    print(
        "\nCost of the signals at ingest (a token-level demo run, CPU seconds of the in-process parse,"
        " median of 3)"
    )
    cost(tmp, ns.size_mb)
    return 0


def cost(tmp: Path, size_mb: int) -> None:
    from rl_board.formats import Reading
    from rl_board.rollouts.demo import DemoSpec, write_run
    from rl_board.rollouts.read import ingest

    steps = max(1, size_mb // 15)
    write_run(tmp / "tokens", DemoSpec(steps=steps, samples=256, ranks=1, tokens=600, seed=1))
    path = next((tmp / "tokens").glob("*.jsonl"))
    blocks = ingest.plan_blocks(path, 0, path.stat().st_size)
    (tmp / "seg").mkdir(exist_ok=True)
    real = signals.columns

    def timed() -> float:
        t = time.process_time()
        for s, e in blocks:
            ingest.ingest_block(str(path), s, e, str(tmp / "seg"), Reading("rl-board"))
        return time.process_time() - t

    with_signals, without = [], []
    for _ in range(3):
        signals.columns = real
        with_signals.append(timed())
        signals.columns = lambda table: {}
        without.append(timed())
    signals.columns = real
    a, b = statistics.median(with_signals), statistics.median(without)
    print(
        f"  {path.stat().st_size / 1e6:.0f} MB: {a:.2f} s with the signals, {b:.2f} s without: "
        f"+{(a - b) / b:.1%} "
        "(target: a 1 GB cold load within 15% of before; run benchmarks/load.py for the wall-clock figure)"
    )


if __name__ == "__main__":
    sys.exit(main())
