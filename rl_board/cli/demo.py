"""`rl-board demo OUT_DIR`: synthetic runs (PPO with planted reward hacking, an eval run, a GRPO run; an agent
run of tool-calling trajectories on request)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="write synthetic runs (a PPO run and an eval run)")
    p.add_argument("out_dir", metavar="OUT_DIR")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--samples", type=int, default=24, help="samples per step")
    p.add_argument("--ranks", type=int, default=2, help="files (data-parallel ranks)")
    p.add_argument("--tokens", type=int, default=48, help="mean response length in tokens")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--group-size", type=int, default=8, help="GRPO run: answers per prompt")
    p.add_argument("--long-tokens", type=int, default=1500, help="GRPO run: one answer per step this long")
    p.add_argument(
        "--only",
        choices=["train", "eval", "grpo", "agent"],
        default=None,
        help="write just one of the runs (agent: multi-turn trajectories that call tools, only on request)",
    )
    p.set_defaults(func=run)


def run(ns: argparse.Namespace) -> int:
    from rl_board.api import GrpoSpec, write_grpo_run
    from rl_board.api import demo_runs as demo

    out = Path(ns.out_dir)
    if ns.only in (None, "train"):
        spec = demo.DemoSpec(
            steps=ns.steps, samples=ns.samples, ranks=ns.ranks, tokens=ns.tokens, seed=ns.seed
        )
        for p in demo.write_run(out / "ppo_math", spec):
            print(p)
    if ns.only in (None, "eval"):
        for p in demo.write_eval_run(out / "eval_math", seed=ns.seed + 1):
            print(p)
    if ns.only in (None, "grpo"):
        grpo = GrpoSpec(group_size=ns.group_size, long_tokens=ns.long_tokens, seed=ns.seed + 2)
        for p in write_grpo_run(out / "grpo_math", grpo):
            print(p)
    if ns.only == "agent":
        from rl_board.api import AgentSpec, write_agent_run

        for p in write_agent_run(
            out / "agent_tools",
            AgentSpec(steps=ns.steps, trajectories=ns.samples, ranks=ns.ranks, seed=ns.seed + 3),
        ):
            print(p)
    return 0
