"""Does rl-board read what TRL wrote as TRL means it? Runs the real GRPOTrainer variants of the real-trainer
tier on CPU and prints, per variant and step, TRL's own logged numbers beside rl-board's.

    .venv/bin/python benchmarks/trainer_agreement.py [OUT] [--code PATH]

Needs the `real` extra (torch, trl). ``--code`` reads with another checkout's rl_board (e.g. one from before a
fix), so two versions can be compared on the same trainer output. Columns: rows TRL wrote and rows read,
then per step: TRL's ``reward`` and rl-board's mean reward, and TRL's ``frac_reward_zero_std`` and
rl-board's zero-variance share.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
READ = """
import json, sys
from pathlib import Path
from rl_board.rollouts.store import RolloutStore
out = {}
for name in sys.argv[2:]:
    try:
        store = RolloutStore.open(
            Path(sys.argv[1]) / name / "completions", cache_dir=Path(sys.argv[1]) / ".cache" / name
        )
    except Exception as exc:  # an old version may fail outright: that is a number too
        out[name] = {"error": str(exc)}
        continue
    summary = store.step_summary()
    stats = store.group_stats()
    zero = dict(zip(stats["step"], stats["zero_variance_share"])) if len(stats) else {}
    out[name] = {"rows": store.num_samples, "bad": len(store.report.bad_lines),
                 "reward": {int(s): float(m)
                            for s, m in zip(summary["step"], summary.get("reward_mean", []))},
                 "zero": {int(s): float(z) for s, z in zero.items()}}
print(json.dumps(out))
"""


def run_trainer(out: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HOME": str(out / ".hf"),
        "PYTHONHASHSEED": "0",
    }
    subprocess.run(
        [sys.executable, "-m", "tests.real.trainers.trl_grpo", str(out)], cwd=REPO, env=env, check=True
    )


def read_back(out: Path, names: list[str], code: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", READ, str(out), *names],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def logged(out: Path, name: str) -> dict[int, dict]:
    history = json.loads((out / name / "log_history.json").read_text())
    return {int(e["step"]): e for e in history if "reward" in e}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", help="where the trainer writes (default: a temporary folder)")
    parser.add_argument("--code", default=str(REPO), help="the checkout whose rl_board reads the output")
    ns = parser.parse_args()
    out = Path(ns.out or tempfile.mkdtemp(prefix="trl-agreement-"))
    if not (out / "manifest.json").exists():
        run_trainer(out)
    names = sorted(json.loads((out / "manifest.json").read_text())["runs"])
    read = read_back(out, names, Path(ns.code))
    print(f"rl_board from {ns.code}; trainer output in {out}")
    for name in names:
        got = read[name]
        wrote = sum(1 for _ in (out / name / "completions").glob("*.parquet"))
        if "error" in got:
            print(f"\n{name}: rl-board failed: {got['error']}")
            continue
        print(f"\n{name}: {wrote} tables; rl-board read {got['rows']} rows, {got['bad']} bad lines")
        print(f"  {'step':>4}  {'TRL reward':>10}  {'rl-board':>9}  {'TRL zero-std':>12}  {'rl-board':>9}")
        for step, entry in sorted(logged(out, name).items()):
            ours = got["reward"].get(str(step), got["reward"].get(step))
            zero = got["zero"].get(str(step), got["zero"].get(step))
            fmt = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
            print(
                f"  {step:>4}  {fmt(entry.get('reward')):>10}  {fmt(ours):>9}  "
                f"{fmt(entry.get('frac_reward_zero_std')):>12}  {fmt(zero):>9}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
