"""Server-side page times on GRPO-era runs: long samples, groups, prompts, same prompts.

    python benchmarks/pages.py                 # 8k-token samples, every GRPO page
    python benchmarks/pages.py --tokens 6000

Writes a GRPO demo run whose rambling answer is ``--tokens`` long, then times
with AppTest (which runs the real page script in this process) the first run
of each page and the best of 5 reruns. The issue's target for the sample page
with an 8k-token sample is under 500 ms per rerun. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.load import best_ms  # noqa: E402  (one timing helper for every benchmark)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8000, help="length of the long answer of each step")
    ns = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlb-bench-pages-"))
    try:
        from rl_board.rollouts.demo_grpo import GrpoSpec, write_grpo_run
        from rl_board.rollouts.store import RolloutStore

        run = work / "logs" / "grpo"
        write_grpo_run(run, GrpoSpec(steps=20, prompts=8, group_size=8, tokens=400, long_tokens=ns.tokens))
        os.environ["RL_BOARD_ROOTS"] = str(run.parent)
        os.environ["RL_BOARD_CACHE_DIR"] = str(work / "cache")
        store = RolloutStore.open(run, cache_dir=work / "cache")
        step = store.steps[-1]
        lengths = store.samples(step=step, columns=["n_tokens"])["n_tokens"]
        longest = int(lengths.idxmax())
        size = sum(f.bytes for f in store.report.files) / 1e6
        print(
            f"machine: {platform.machine()}, Python {platform.python_version()}; "
            f"run: {store.num_samples} samples, "
            f"{size:.0f} MB; longest sample {int(lengths.max())} tokens"
        )
        print("| page | first run ms | rerun ms (best of 5) |")
        print("|---|---|---|")
        pages = [
            ("sample, longest answer", "views/sample.py", {"step": str(step), "sample": str(longest)}),
            ("step browser", "views/steps.py", {"step": str(step), "sort": "kl_mean", "desc": "1"}),
            ("groups", "views/groups.py", {"step": str(step)}),
            ("prompts", "views/prompts.py", {}),
            ("same prompts (two steps)", "views/matchup.py", {"vs": "grpo", "sa": "0", "sb": str(step)}),
            ("overview", "views/overview.py", {}),
        ]
        from streamlit.testing.v1 import AppTest

        for name, page, params in pages:
            at = AppTest.from_file(str(REPO / "rl_board" / "ui" / "app.py"), default_timeout=300)
            at.query_params.update({"run": "grpo", **params})
            at.run()
            at.switch_page(page)
            t = time.perf_counter()
            at.run()
            first = (time.perf_counter() - t) * 1000
            if at.exception:
                print(f"| {name} | error: {at.exception[0].value} | |")
                continue
            print(f"| {name} | {first:.0f} | {best_ms(at.run):.0f} |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
