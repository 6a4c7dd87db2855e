"""`rl-board check PATH`: the health rules on every metric and rollout run under a path.

Exit 1 when a finding has severity ``error`` (so a job or CI can gate on it), 2 on a usage error, else 0.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_board.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    field_arguments,
    fields_of,
    json_default,
    local_path,
    path_arguments,
    problem_dict,
    problem_text,
    terminal_lines,
    terminal_safe,
)
from rl_board.errors import NotFoundError

if TYPE_CHECKING:
    from rl_board.health.checks import Finding
    from rl_board.metrics.table import Problem


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `check PATH [--json] [--set rule.param=value ...]`."""
    parser = subparsers.add_parser("check", help="run health checks on the metrics and rollout runs under PATH")
    path_arguments(parser)
    field_arguments(parser)
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="RULE.PARAM=VALUE",
                        help="override a rule threshold, severity or enabled flag (repeatable)")  # fmt: skip
    parser.set_defaults(func=run)
    return parser


def run(ns: argparse.Namespace) -> int:
    """Scalar rules on metric runs, rollout rules on rollout runs."""
    ns.path = local_path(ns.path, ns.cache_dir)  # a URL: its copy in the cache
    from rl_board.config import metrics_cache_dir
    from rl_board.health.checks import check_rollout_runs, check_scalars, load_settings, parse_set_option
    from rl_board.metrics.reader import load_metrics
    from rl_board.metrics.reader import metric_catalogue as catalogue

    bundle = load_metrics(ns.path, cache_dir=metrics_cache_dir(ns.cache_dir))
    settings, setting_problems = load_settings(Path(ns.path))
    for text in ns.settings:
        parse_set_option(settings, text)
    fields = fields_of(ns)
    found = catalogue(Path(ns.path), fields=fields)
    if not bundle.runs and not found.rollout_folders():
        quiet = "".join(f"; {found.name(Path(p.file))}: {p.reason}" for p in bundle.skipped[:5])
        raise NotFoundError(terminal_safe(f"nothing to check: {found.nothing_readable()}{quiet}"))
    findings = check_scalars(bundle.scalars, histograms=bundle.histograms, settings=settings)
    rollout_problems: list[Problem] = []
    if Path(ns.path).is_dir():
        rollout_findings, rollout_problems = check_rollout_runs(
            ns.path, cache_dir=ns.cache_dir, settings=settings, fields=fields
        )
        findings.extend(rollout_findings)
    all_problems = [*setting_problems, *bundle.problems, *rollout_problems]
    problems = [problem_dict(p, bundle.root) for p in all_problems]
    if ns.json:
        print(
            json.dumps(
                {"findings": [f.to_dict() for f in findings], "problems": problems}, default=json_default
            )
        )
    else:
        print(_findings_table(findings, problems))
    return EXIT_FINDINGS if any(f.severity == "error" for f in findings) else EXIT_OK


def _findings_table(findings: list[Finding], problems: list[dict[str, Any]]) -> str:
    """A readable list of findings, most severe first, then problems."""
    from rl_board.health.checks import SEVERITIES

    if not findings:
        lines = ["no findings"]
    else:
        order = sorted(findings, key=lambda f: (-SEVERITIES.index(f.severity), f.run, f.rule))
        lines = [
            f"{f.severity.upper():<7} {f.rule:<24} {f.run}: {f.message} (steps {_steps_text(f.steps)})"
            for f in order
        ]
    lines.extend(f"problem: {problem_text(p)}" for p in problems)
    return terminal_lines(lines)


def _steps_text(steps: list[int], limit: int = 6) -> str:
    """A short rendering of a step list."""
    head = ", ".join(str(s) for s in steps[:limit])
    return head + (f", ... ({len(steps)} in all)" if len(steps) > limit else "")
