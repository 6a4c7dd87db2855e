"""Which files of a run folder are rollout files, and whether they changed."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from rl_board.sources.catalogue import ROLLOUT, classify
from rl_board.sources.sniff import JSON_LINES_SUFFIXES


def list_rollout_files(run_dir: Path) -> list[Path]:
    """The run's ``*.jsonl`` files that are regular files, in natural order."""
    return [p for p, problem in scan_run(run_dir) if not problem]


def scan_run(run_dir: Path, allowed: list[Path] | None = None) -> list[tuple[Path, str]]:
    """Every rollout file of a run (``*.jsonl``, as the catalogue classifies it) with why it cannot be read.

    A folder, a broken or looping link, or (with ``allowed``) a link that
    leads outside the served folders is named in the report, never read.
    """
    out = []
    for path in sorted(run_dir.iterdir(), key=_natural_key):
        if path.suffix.lower() not in JSON_LINES_SUFFIXES:
            continue
        problem = _unusable(path, allowed)
        if problem or classify(path).role == ROLLOUT:  # metric logs beside rollouts are the Metrics page's
            out.append((path, problem))
    return out


def _unusable(path: Path, allowed: list[Path] | None) -> str:
    try:
        if path.is_dir():
            return "is a folder, not a file"
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return "is a broken or looping symbolic link"
    if not real.is_file():
        return "is not a regular file"
    if allowed is not None and not any(real == r or real.is_relative_to(r) for r in allowed):
        return "links outside the served folders; not read"
    return ""


def _natural_key(path: Path) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]


def stat_signature(run_dir: Path) -> str:
    """Names, sizes and mtimes of the run's files: cheap change detection."""
    parts = []
    try:
        for path in list_rollout_files(run_dir):
            try:
                st = path.stat()
            except OSError:
                continue
            parts.append(f"{path.name}:{st.st_size}:{st.st_mtime_ns}")
    except OSError:
        return ""
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]
