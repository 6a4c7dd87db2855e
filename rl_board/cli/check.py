"""`rl-board check PATH`: the health rules on every metric and rollout run under a path.

Exit 1 when a finding has severity ``error`` (so a job or CI can gate on it), 2 on a usage error, else 0.
The errors by default: NaN/Inf metrics or tokens, GRPO learning nothing (``learns_nothing``), an early
entropy collapse (``early_entropy_collapse``) and collapsed rollout-correction weights
(``importance_weights_off``); a training job that runs ``rl-board check`` on its own logs every few steps
can stop itself on them. ``--set rule.severity=error`` makes any other rule stop it too. ``--json`` gives
each finding's ``group`` (what to do about it) besides its rule, steps, message and link.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rl_board.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    field_arguments,
    fields_of,
    json_default,
    path_arguments,
    problem_text,
    terminal_lines,
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `check PATH [--json] [--set rule.param=value ...]`."""
    parser = subparsers.add_parser(
        "check", help="run health checks on the metrics and rollout runs under PATH"
    )
    path_arguments(parser)
    field_arguments(parser)
    parser.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="RULE.PARAM=VALUE",
        help="override a rule threshold, severity or enabled flag (repeatable)",
    )
    parser.set_defaults(func=run)
    return parser


def run(ns: argparse.Namespace) -> int:
    """Scalar rules on metric runs, rollout rules on rollout runs (``rl_board.check``)."""
    from rl_board.public import check

    report = check(ns.path, cache_dir=ns.cache_dir, fields=fields_of(ns), settings=ns.settings)
    if ns.json:
        print(json.dumps(report.to_dict(), default=json_default))
    else:
        print(_findings_table(report.findings, report.problems))
    return EXIT_FINDINGS if report.errors else EXIT_OK


def _findings_table(findings: list[dict[str, Any]], problems: list[dict[str, Any]]) -> str:
    """A readable list of findings, most severe first, then problems."""
    from rl_board.api import SEVERITIES

    if not findings:
        lines = ["no findings"]
    else:
        order = sorted(findings, key=lambda f: (-SEVERITIES.index(f["severity"]), f["run"], f["rule"]))
        lines = [
            f"{f['severity'].upper():<7} {f['rule']:<24} {f['run']}: {f['message']} (steps "
            f"{_steps_text(f['steps'])})"
            for f in order
        ]
    lines.extend(f"problem: {problem_text(p)}" for p in problems)
    return terminal_lines(lines)


def _steps_text(steps: list[int], limit: int = 6) -> str:
    """A short rendering of a step list."""
    head = ", ".join(str(s) for s in steps[:limit])
    return head + (f", ... ({len(steps)} in all)" if len(steps) > limit else "")
