"""`rl-board groups RUN`: the GRPO groups (samples of one prompt in one step) of a run, for scripts."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rl_board.cli.common import fields_of, json_value, run_arguments

JSON_KEYS = (
    "step",
    "group",
    "prompt",
    "samples",
    "reward_mean",
    "reward_std",
    "solved",
    "zero_variance",
    "best_sample",
    "worst_sample",
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "groups",
        help="per step, the samples of each prompt: reward spread, solved share, zero-variance groups",
    )
    run_arguments(p)
    p.add_argument("--step", type=int, default=None, help="one step (default: every step)")
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="a sample is solved when its reward reaches this (default: the run's highest reward)",
    )
    p.set_defaults(func=run)


def run(ns: argparse.Namespace) -> int:
    from rl_board.api import RolloutStore

    store = RolloutStore.open(ns.run_dir, cache_dir=ns.cache_dir, fields=fields_of(ns))
    table = store.groups(step=ns.step, threshold=ns.threshold)
    rows = [{k: json_value(row[k]) for k in JSON_KEYS} for row in table.to_dict("records")]
    if ns.json:
        print(json.dumps({"groups": rows}, allow_nan=False))
    else:
        print(_text(table))
    return 0


def _text(table: Any) -> str:
    if table.empty:
        return "no groups (no sample has a reward)"
    lines = [f"{'step':>6} {'samples':>7} {'reward':>8} {'± std':>7} {'solved':>7}  zero-var  group"]
    for row in table.to_dict("records"):
        name = str(row["group"]).encode("unicode_escape").decode()[:40]  # no terminal control characters
        lines.append(
            f"{row['step']:>6} {row['samples']:>7} {row['reward_mean']:>8.3f} {row['reward_std']:>7.3f} "
            f"{row['solved']:>7.0%}  {'yes' if row['zero_variance'] else '':8}  {name}"
        )
    return "\n".join(lines)


__all__ = ["add_parser", "run"]
