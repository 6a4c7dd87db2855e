"""`rl-board runs ROOT`: every run under a root with its format, and every file not read, with why."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_board.cli.common import field_arguments, fields_of, local_path, terminal_lines, terminal_safe
from rl_board.errors import NotFoundError

if TYPE_CHECKING:
    from rl_board.api import Catalogue, LoadReport


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "runs", help="list the runs under ROOT (format, files, samples) and every skipped file"
    )
    p.add_argument("root", metavar="ROOT")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--cache-dir", default=None, help="cache folder (runs are opened through it to count samples)"
    )
    field_arguments(p)
    p.set_defaults(func=run)


def run(ns: argparse.Namespace) -> int:
    ns.root = local_path(ns.root, ns.cache_dir)  # a URL: its copy in the cache
    from rl_board.api import catalogue

    root = Path(ns.root).expanduser()
    if not root.exists():
        raise NotFoundError(terminal_safe(f"path not found: {root}"))
    fields = fields_of(ns)
    found = catalogue(root, skip=(Path(ns.cache_dir),) if ns.cache_dir else (), fields=fields)
    data = runs_dict(found, ns.cache_dir, fields)
    print(json.dumps(data) if ns.json else _text(data))
    return 0


def runs_dict(
    found: Catalogue, cache_dir: str | None, fields: dict[str, str] | None = None
) -> dict[str, Any]:
    """The documented ``runs --json`` object."""
    from rl_board.api import METRICS_ROLE as METRICS

    runs = []
    for folder in found.rollout_folders():
        report, summary = _opened(folder.path, cache_dir, fields)
        runs.append(
            {
                "run": folder.relative,
                "format": report.format or folder.format,
                "files": folder.files,
                "samples": summary["samples"],
                "steps": len(summary["steps"]),
            }
        )
    metrics = [{"path": found.name(s.path), "kind": s.format} for s in found.of_role(METRICS)]
    skipped = [{"path": found.name(s.path), "reason": s.reason} for s in found.skipped]
    return {"root": str(found.root), "runs": runs, "metrics": metrics, "skipped": skipped}


def _opened(path: Path, cache_dir: str | None, fields: dict[str, str] | None) -> tuple[LoadReport, dict]:
    """A run's load report and summary: from its cache when it is unchanged, else opened through it."""
    from rl_board.api import summary_kept

    kept = summary_kept(path, cache_dir=cache_dir, fields=fields)
    if kept is not None:
        return kept.report, kept.summary
    from rl_board.api import RolloutStore

    store = RolloutStore.open(path, cache_dir=cache_dir, fields=fields)
    return store.report, store.run_summary()


def _text(data: dict[str, Any]) -> str:
    lines = [
        f"{r['run']}  [{r['format']}]  {r['files']} file(s), {r['samples']} samples, {r['steps']} steps"
        for r in data["runs"]
    ] or ["no rollout runs"]
    lines += [f"metrics: {m['path']}  [{m['kind']}]" for m in data["metrics"]]
    lines += [f"skipped: {s['path']}: {s['reason']}" for s in data["skipped"]]
    return terminal_lines(lines)
