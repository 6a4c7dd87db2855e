"""`rl-board scalars` and `rl-board check`: the metrics commands of the CLI.

`rl_board/cli.py` adds these with `add_scalars_parser(sub)` /
`add_check_parser(sub)` and calls `ns.func(ns)`. Each command is a thin
argument layer over the data layer; user errors (`RLBoardError`) become a
one-line message on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from rl_board.data.health import SEVERITIES, Finding, check_scalars, load_settings, parse_set_option
from rl_board.data.health_rollouts import check_rollout_runs
from rl_board.data.scalars.reader import MetricsBundle, load_metrics
from rl_board.data.scalars.table import Problem
from rl_board.errors import RLBoardError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def add_scalars_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `scalars PATH [--json] [--cache-dir DIR]`."""
    parser = subparsers.add_parser("scalars", help="list metric runs, tags and problems found under PATH")
    _common_arguments(parser)
    parser.set_defaults(func=scalars_command)
    return parser


def add_check_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `check PATH [--json] [--set rule.param=value ...]`."""
    parser = subparsers.add_parser(
        "check", help="run health checks on the metrics and rollout runs under PATH"
    )
    _common_arguments(parser)
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="RULE.PARAM=VALUE",
                        help="override a rule threshold, severity or enabled flag (repeatable)")  # fmt: skip
    parser.set_defaults(func=check_command)
    return parser


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    """PATH, --json and --cache-dir, shared by both commands."""
    parser.add_argument("path", help="a logs folder or a single log / event file")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--cache-dir", default=None, help="keep parsed tables here between calls")


def scalars_command(ns: argparse.Namespace) -> int:
    """List runs and tags; exit 0 whenever PATH was readable (damage is reported, not fatal)."""
    try:
        bundle = load_metrics(ns.path, cache_dir=ns.cache_dir)
    except RLBoardError as err:
        return _usage_error(err)
    report = scalars_report(bundle)
    if ns.json:
        print(json.dumps(report, default=_json_default))
    else:
        print(_scalars_table(report))
    return EXIT_OK


def check_command(ns: argparse.Namespace) -> int:
    """Run the scalar rules on metric runs and the rollout rules on rollout runs under PATH.

    Exit 1 when a finding has error severity, 2 on a usage error, else 0.
    """
    try:
        bundle = load_metrics(ns.path, cache_dir=ns.cache_dir)
        settings, setting_problems = load_settings(Path(ns.path))
        for text in ns.settings:
            parse_set_option(settings, text)
    except RLBoardError as err:
        return _usage_error(err)
    findings = check_scalars(bundle.scalars, histograms=bundle.histograms, settings=settings)
    rollout_problems: list[Problem] = []
    if Path(ns.path).is_dir():
        rollout_findings, rollout_problems = check_rollout_runs(
            ns.path, cache_dir=ns.cache_dir, settings=settings
        )
        findings.extend(rollout_findings)
    all_problems = [*setting_problems, *bundle.problems, *rollout_problems]
    problems = [_problem_dict(p, bundle.root) for p in all_problems]
    if ns.json:
        print(
            json.dumps(
                {"findings": [f.to_dict() for f in findings], "problems": problems}, default=_json_default
            )
        )
    else:
        print(_findings_table(findings, problems))
    return EXIT_FINDINGS if any(f.severity == "error" for f in findings) else EXIT_OK


def scalars_report(bundle: MetricsBundle) -> dict[str, Any]:
    """The `scalars --json` object: per run its kind, tag summaries, histogram tags and problems."""
    stats = (
        bundle.scalars.groupby(["run", "tag"], sort=True)["step"].agg(["size", "min", "max"])
        if len(bundle.scalars)
        else None
    )
    runs = []
    for info in bundle.runs:
        tags: dict[str, dict[str, int]] = {}
        if stats is not None and info.run in stats.index.get_level_values(0):
            for tag, row in stats.loc[info.run].iterrows():
                tags[str(tag)] = {
                    "points": int(row["size"]),
                    "first_step": int(row["min"]),
                    "last_step": int(row["max"]),
                }
        hist = bundle.histograms
        runs.append({
            "run": info.run,
            "kind": info.kind,
            "tags": tags,
            "histograms": sorted(set(hist.loc[hist["run"] == info.run, "tag"])),
            "problems": [_problem_dict(p, bundle.root) for p in info.problems],
        })  # fmt: skip
    return {"runs": runs}


def _problem_dict(problem: Problem, root: Path) -> dict[str, Any]:
    """A problem with its file shown relative to the root when it lies inside it."""
    out = problem.to_dict()
    with contextlib.suppress(ValueError):  # outside the root: keep the absolute path
        out["file"] = Path(problem.file).resolve().relative_to(root).as_posix()
    return out


def _scalars_table(report: dict[str, Any]) -> str:
    """A readable listing: one block per run, one line per tag."""
    if not report["runs"]:
        return "no metric runs found"
    lines: list[str] = []
    for run in report["runs"]:
        lines.append(
            f"{run['run']}  [{run['kind']}]  {len(run['tags'])} tags, {len(run['histograms'])} histograms"
        )
        width = max((len(t) for t in run["tags"]), default=0)
        for tag, s in run["tags"].items():
            lines.append(
                f"  {tag:<{width}}  {s['points']:>7} points  steps {s['first_step']}..{s['last_step']}"
            )
        lines.extend(f"  histogram {h}" for h in run["histograms"])
        lines.extend(f"  problem: {_problem_text(p)}" for p in run["problems"])
    return "\n".join(lines)


def _findings_table(findings: list[Finding], problems: list[dict[str, Any]]) -> str:
    """A readable list of findings, most severe first, then problems."""
    if not findings:
        lines = ["no findings"]
    else:
        order = sorted(findings, key=lambda f: (-SEVERITIES.index(f.severity), f.run, f.rule))
        lines = [
            f"{f.severity.upper():<7} {f.rule:<24} {f.run}: {f.message} (steps {_steps_text(f.steps)})"
            for f in order
        ]
    lines.extend(f"problem: {_problem_text(p)}" for p in problems)
    return "\n".join(lines)


def _steps_text(steps: list[int], limit: int = 6) -> str:
    """A short rendering of a step list."""
    head = ", ".join(str(s) for s in steps[:limit])
    return head + (f", ... ({len(steps)} in all)" if len(steps) > limit else "")


def _problem_text(problem: dict[str, Any]) -> str:
    """`file:line: reason`."""
    where = problem["file"] + (f":{problem['line']}" if problem.get("line") else "")
    return f"{where}: {problem['reason']}"


def _usage_error(err: RLBoardError) -> int:
    """One line on stderr, exit code 2."""
    print(f"rl-board: error: {err}", file=sys.stderr)
    return EXIT_USAGE


def _json_default(value: Any) -> Any:
    """Make numpy scalars and paths JSON-friendly."""
    if hasattr(value, "item"):
        return value.item()
    return str(value)
