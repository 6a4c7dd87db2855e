"""`rl-board patterns RUN`: the run's families of near-identical answers (reward-hacking templates), loops and
mixed-script answers, for scripts."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rl_board.cli.common import fields_of, json_value, run_arguments, terminal_safe

JSON_KEYS = ("template", "samples", "first_step", "reward_mean", "example")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "patterns", help="families of near-identical answers (templates), loops, mixed scripts"
    )
    run_arguments(p)
    p.set_defaults(func=run)


def run(ns: argparse.Namespace) -> int:
    from rl_board.api import RolloutStore

    store = RolloutStore.open(ns.run_dir, cache_dir=ns.cache_dir, fields=fields_of(ns))
    families = store.pattern_families()
    signals = store.signal_counts()
    rows = [
        {
            k: json_value(row[k])
            for k in (*JSON_KEYS, "share", "last_step", "reward_rest", "example_step", "example_sample")
        }
        for row in families.to_dict("records")
    ]
    if ns.json:
        print(json.dumps({"run": store.source, "patterns": rows, **signals}, allow_nan=False))
        return 0
    print(
        terminal_safe(
            f"{len(rows)} template families; {signals['loops']} loops; "
            f"{signals['mixed_scripts']} mixed-script answers"
        )
    )
    for row in rows:
        example = str(row["example"])[:80].encode("unicode_escape").decode()
        print(
            terminal_safe(
                f"{row['template']:>4}  {row['samples']:>6} samples  from step {row['first_step']:<5} "
                f"reward {row['reward_mean']:.3f}  {example}"
            )
        )
    return 0


__all__ = ["add_parser", "run"]
