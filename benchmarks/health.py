"""Health rules on the trainers' own diagnostics (issue 33): when each rule first fires on a planted failure,
against the planted start and the first-quarter deadline, and what fires on the clean twins. Prints figures;
asserts nothing (tests/unit/test_health_field.py holds the same facts).

    .venv/bin/python benchmarks/health.py [--seeds 1] [--steps 300]

The runs come from tests/helpers/health_runs.py: each trainer's real metric names (the file each comes from
is in rl_board/metrics/aliases.py), written as the trainer writes them (TRL: trainer_state.json, or
TensorBoard events for transformers' ``train/`` names; the others: metrics.jsonl) and read back through
rl-board's metric readers. A planted run carries one failure over a window [start, end]; the rule must fire
by start + (end - start) / 4. A clean twin has the same seed's noise without the failure: any finding on it
is a false alarm. Cross-check runs are rollouts with the trainer's own (wrong, or right) numbers beside them.
With ``--seeds N`` the table is for seed 0 and a summary counts, over N seeds, the planted runs caught in
time, late or missed, and the false alarms.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rl_board.health.checks import RolloutRun, check_rollouts, check_scalars  # noqa: E402
from rl_board.metrics.reader import load_metrics  # noqa: E402
from rl_board.rollouts.store import RolloutStore  # noqa: E402
from tests.helpers.health_runs import HealthRun, health_runs, write_crosscheck_runs  # noqa: E402


def scalar_firings(runs: list[HealthRun], folder: Path) -> tuple[dict[str, dict[str, int]], float]:
    """Write the runs as their trainers do, read them back, check them: run -> rule -> first step."""
    for run in runs:
        run.write(folder / run.name)
    started = time.perf_counter()
    bundle = load_metrics(folder, cache_dir=folder / ".cache")
    by_folder = {info.run: Path(info.path) for info in bundle.runs}
    names = {}
    for metric_run, path in by_folder.items():
        rel = path.relative_to(folder).parts
        names[metric_run] = f"{rel[0]}/{rel[1]}"  # the HealthRun's name is its first two folders
    out: dict[str, dict[str, int]] = {run.name: {} for run in runs}
    for f in check_scalars(bundle.scalars, histograms=bundle.histograms):
        fired = out.setdefault(names.get(f.run, f.run), {})
        fired[f.rule] = min(fired.get(f.rule, f.steps[0]), f.steps[0])
    return out, time.perf_counter() - started


def verdict(step: int | None, start: int, deadline: int) -> str:
    if step is None:
        return "MISSED"
    if step < start:
        return "EARLY (before the failure)"
    return "in time" if step <= deadline else "LATE"


def print_table(runs: list[HealthRun], fired: dict[str, dict[str, int]]) -> None:
    print(f"{'planted run':34} {'trainer':13} {'rule':24} {'start':>5} {'deadline':>8} {'fired':>5}  verdict")
    for run in (r for r in runs if not r.clean):
        step = fired[run.name].get(run.rule)
        others = {k: v for k, v in fired[run.name].items() if k != run.rule}
        also = f"  (also: {', '.join(f'{k}@{v}' for k, v in sorted(others.items()))})" if others else ""
        shown = "-" if step is None else str(step)
        print(
            f"{run.name:34} {run.trainer:13} {run.rule:24} {run.start:>5} {run.deadline:>8} {shown:>5}  "
            f"{verdict(step, run.start, run.deadline)}{also}"
        )
    print()
    clean = [r for r in runs if r.clean]
    alarms = {r.name: fired[r.name] for r in clean if fired[r.name]}
    print(f"clean twins: {len(clean)}, false alarms: {sum(len(v) for v in alarms.values())}")
    for name, rules in alarms.items():
        print(f"  {name}: {', '.join(f'{k}@{v}' for k, v in sorted(rules.items()))}")


def print_crosschecks(root: Path) -> None:
    print("\ncross-checks (rollouts + the trainer's logged number beside them)")
    print(f"{'run':22} {'planted':38} {'start':>5} {'deadline':>8} {'fired':>5}  verdict / findings")
    for run in write_crosscheck_runs(root / "cross"):
        store = RolloutStore.open(run.folder, cache_dir=root / "cross-cache")
        findings = check_rollouts(RolloutRun.from_store(run.name, store))
        first = {f.rule: f.steps[0] for f in findings}
        if run.clean:
            found = ", ".join(f"{k}@{v}" for k, v in sorted(first.items())) or "none"
            print(f"{run.name:22} {'(clean twin)':38} {'':>5} {'':>8} {'':>5}  findings: {found}")
            continue
        step = first.get(run.rule)
        shown = "-" if step is None else str(step)
        others = {k: v for k, v in first.items() if k != run.rule}
        also = f"  (also: {', '.join(f'{k}@{v}' for k, v in sorted(others.items()))})" if others else ""
        print(
            f"{run.name:22} {run.failure:38} {run.start:>5} {run.deadline:>8} {shown:>5}  "
            f"{verdict(step, run.start, run.deadline)}{also}"
        )
        cause = next((f.message for f in findings if f.rule == run.rule), "")
        if "Likely cause: " in cause:
            print(f"{'':22} cause: {cause.split('Likely cause: ', 1)[1][:150]}...")


def summary(seeds: int, steps: int, root: Path) -> None:
    caught = late = missed = alarms = planted = clean = 0
    per_rule: dict[str, list[int]] = {}
    for seed in range(seeds):
        runs = health_runs(seed, steps)
        fired, _ = scalar_firings(runs, root / f"seed{seed}")
        for run in runs:
            if run.clean:
                clean += 1
                alarms += len(fired[run.name])
                continue
            planted += 1
            step = fired[run.name].get(run.rule)
            if step is None:
                missed += 1
            elif step > run.deadline or step < run.start:
                late += 1
            else:
                caught += 1
                per_rule.setdefault(run.rule, []).append(step - run.start)
    print(
        f"\nover {seeds} seeds: {planted} planted runs: {caught} in time, {late} late, {missed} missed; ",
        end="",
    )
    print(f"{clean} clean twins: {alarms} false alarm(s)")
    for rule, delays in sorted(per_rule.items()):
        middle = sorted(delays)[len(delays) // 2]
        print(f"  {rule:24} steps from planted start to first firing: median {middle}, max {max(delays)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runs = health_runs(0, args.steps)
        fired, seconds = scalar_firings(runs, root / "seed0-table")
        print(f"{len(runs)} runs of {args.steps} steps, read and checked in {seconds:.2f}s (seed 0)\n")
        print_table(runs, fired)
        print_crosschecks(root)
        if args.seeds > 1:
            summary(args.seeds, args.steps, root)


if __name__ == "__main__":
    main()
