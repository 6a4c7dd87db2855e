"""`rl-board scalars PATH`: the metric runs, tags and problems found under a path."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from rl_board.cli.common import EXIT_OK, json_default, path_arguments, problem_text, terminal_lines

if TYPE_CHECKING:
    from rl_board.api import MetricsIndex


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `scalars PATH [--json] [--cache-dir DIR]`."""
    parser = subparsers.add_parser("scalars", help="list metric runs, tags and problems found under PATH")
    path_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def run(ns: argparse.Namespace) -> int:
    """List runs and tags; exit 0 whenever PATH was readable (damage is reported, not fatal)."""
    from rl_board.public import metrics_index

    report = scalars_report(metrics_index(ns.path, cache_dir=ns.cache_dir))
    if ns.json:
        print(json.dumps(report, default=json_default))
    else:
        print(_scalars_table(report))
    return EXIT_OK


def scalars_report(index: MetricsIndex) -> dict[str, Any]:
    """The `scalars --json` object: per run its kind, tag summaries, histogram tags and problems."""
    runs = [
        {
            "run": info.run,
            "kind": info.kind,
            "tags": info.tags,
            "histograms": info.histogram_tags,
            "problems": [p.shown_under(index.root) for p in info.problems],
            **({"step": info.step_source} if info.step_source else {}),
        }
        for info in index.runs
    ]
    return {"runs": runs}


def _scalars_table(report: dict[str, Any]) -> str:
    """A readable listing: one block per run, one line per tag."""
    if not report["runs"]:
        return "no metric runs found"
    lines: list[str] = []
    for run in report["runs"]:
        lines.append(
            f"{run['run']}  [{run['kind']}]  {len(run['tags'])} tags, {len(run['histograms'])} histograms"
        )
        if run.get("step"):
            lines.append(f"  steps: {run['step']}")
        width = max((len(t) for t in run["tags"]), default=0)
        for tag, s in run["tags"].items():
            lines.append(
                f"  {tag:<{width}}  {s['points']:>7} points  steps {s['first_step']}..{s['last_step']}"
            )
        lines.extend(f"  histogram {h}" for h in run["histograms"])
        lines.extend(f"  problem: {problem_text(p)}" for p in run["problems"])
    return terminal_lines(lines)
