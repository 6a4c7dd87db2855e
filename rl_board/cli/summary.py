"""`rl-board summary RUN_DIR`: load a run through the cache and describe it (``--json`` for scripts)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_board.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    fields_of,
    run_arguments,
    terminal_lines,
    terminal_safe,
)
from rl_board.errors import NotFoundError
from rl_board.formats import fields as F

if TYPE_CHECKING:
    from rl_board.api import KeptSummary, LoadReport, RolloutStore


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "summary", help="load a run (a folder or one file, through the cache) and summarise it"
    )
    run_arguments(p)
    p.set_defaults(func=run)


def run(ns: argparse.Namespace) -> int:
    from rl_board.api import summary_kept

    fields = fields_of(ns)
    kept = summary_kept(ns.run_dir, cache_dir=ns.cache_dir, fields=fields)  # an unchanged run: from its cache
    if kept is not None:
        source, report, data = kept.source, kept.report, kept_dict(kept)
    else:
        from rl_board.api import RolloutStore

        store = RolloutStore.open(ns.run_dir, cache_dir=ns.cache_dir, fields=fields)
        if not store.report.files:
            raise NotFoundError(terminal_safe(_nothing_here(Path(ns.run_dir), fields)))
        source, report, data = store.source, store.report, summary_dict(store)
    if report.notice:  # the cache folder could not be written: one line on stderr, the output is whole
        print(f"rl-board: note: {terminal_safe(report.notice)}", file=sys.stderr)
    if ns.json:
        print(json.dumps(data, allow_nan=False, default=str))
    else:
        print(_summary_text(data))
    if not data["samples"] and report.bad_lines:  # every line refused: the run cannot be shown
        first = report.bad_lines[0]
        print(
            f"rl-board: no sample of {terminal_safe(source)} could be read; the first refusal: "
            f"{terminal_safe(f'{first.file}:{first.line}: {first.reason}')}",
            file=sys.stderr,
        )
        return EXIT_FINDINGS
    return EXIT_OK


def summary_dict(store: RolloutStore) -> dict:
    """The documented ``summary --json`` object (NaN becomes null)."""
    summary = store.run_summary()
    return summary_json(
        store.report,
        summary,
        source=store.source,
        run_dir=store.run_dir,
        cache=store.cache_root,
        remote=store.remote.as_dict() if store.remote else None,  # what this look fetched from the store
    )


def kept_dict(kept: KeptSummary) -> dict:
    """``summary_dict`` of an unchanged run, answered from the summary kept in its cache."""
    return summary_json(
        kept.report, kept.summary, source=kept.source, run_dir=kept.run_dir, cache=kept.cache_root
    )


def summary_json(
    report: LoadReport,
    summary: dict[str, Any],
    *,
    source: str,
    run_dir: Path,
    cache: Path,
    remote: dict[str, Any] | None = None,
) -> dict:
    """The documented object from a load report and the run's summary (``RolloutStore.run_summary``)."""
    return {
        "run": source,
        "format": report.format,
        "field_map": report.field_map,
        "read_as": report.read_as,
        "files": [
            {
                "name": f.name,
                "format": f.format,
                "lines": f.lines,
                "bytes": f.bytes,
                "samples": f.samples,
                "bad": f.bad,
                "error": f.error or None,
            }
            for f in report.files
        ],
        "samples": summary["samples"],
        "steps": summary["steps"],
        "samples_per_step": summary["samples_per_step"],
        "fields": summary["fields"],
        "bad_lines": [{"file": b.file, "line": b.line, "reason": b.reason} for b in report.bad_lines],
        "bad_line_count": report.bad_line_count,
        "length_mismatches": report.length_mismatches,
        "step_stats": summary["step_stats"],
        "load_seconds": round(report.seconds, 4),
        "from_cache": report.from_cache,
        "notice": report.notice or None,
        "remote": remote,
        "skipped": skipped_beside(run_dir, report, cache),
    }


def skipped_beside(run_dir: Path, report: LoadReport, cache: Path) -> list[dict[str, str]]:
    """Files in the run's folder that are not read, with why (a compressed log, a pickle...): a run that
    looks short says here what was left out."""
    if not run_dir.is_dir():  # one file, or a dataset read in its bucket
        return []
    read = {f.name for f in report.files}
    try:
        with os.scandir(run_dir) as entries:
            only_read = all(e.name in read and e.is_file(follow_symlinks=False) for e in entries)
    except OSError:
        only_read = False
    if only_read:  # every entry is a file the run was read from: nothing left out, no metric reader imported
        return []
    from rl_board.api import catalogue

    found = catalogue(run_dir, skip=(cache,))
    return [{"path": found.name(s.path), "reason": s.reason} for s in found.skipped]


def _summary_text(data: dict) -> str:
    lines = [
        f"run      {data['run']}",
        f"files    {len(data['files'])}  samples {data['samples']}  steps {len(data['steps'])}"
        f"  bad lines {data['bad_line_count']}",
        f"format   {data['read_as'] or data['format']}",
        f"loaded   {data['load_seconds']:.3f}s ({'cache' if data['from_cache'] else 'parsed logs'})",
        "",
        f"{'step':>8} {'samples':>8} {F.known(F.STEP, 'reward').brief:>12} {'± std':>8} "
        f"{F.known(F.STEP, 'kl').brief:>13}",
    ]
    for row in data["step_stats"]:
        kl = row.get("kl_mean")
        lines.append(
            f"{row['step']:>8} {row['samples']:>8} {_num(row['reward_mean']):>12} "
            f"{_num(row['reward_std']):>8} {_num(kl):>13}"
        )
    lines += [f"bad: {b['file']}:{b['line']}: {b['reason']}" for b in data["bad_lines"][:20]]
    lines += [f"skipped: {s['path']}: {s['reason']}" for s in data["skipped"]]
    return terminal_lines(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _nothing_here(path: Path, fields: dict[str, str]) -> str:
    """Why a path holds no rollout file: what is below it instead."""
    from rl_board.api import catalogue

    found = catalogue(path, fields=fields)
    runs = [f.relative for f in found.rollout_folders()]
    if runs:
        return (
            f"{path} holds no rollout files itself; runs below it: {', '.join(runs[:8])}"
            " (see `rl-board runs`)"
        )
    return found.nothing_readable()
