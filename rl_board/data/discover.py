"""Which folders under a logs root are rollout runs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_DEPTH = 6


@dataclass(frozen=True)
class RunFolder:
    """A folder that directly holds ``*.jsonl`` files."""

    path: Path
    relative: str
    files: int
    bytes: int
    modified: float


def find_rollout_runs(root: Path, *, max_depth: int = MAX_DEPTH) -> list[RunFolder]:
    """Every folder at most ``max_depth`` below ``root`` holding ``*.jsonl`` files.

    Symlinked folders are not followed (they could lead outside the root or
    loop); hidden folders are skipped.
    """
    root = Path(root)
    runs: list[RunFolder] = []
    base_depth = len(root.parts)
    for current, dirs, files in os.walk(root, followlinks=False, onerror=None):
        here = Path(current)
        depth = len(here.parts) - base_depth
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < max_depth else []
        folder = _run_folder(root, here, files)
        if folder is not None:
            runs.append(folder)
    return sorted(runs, key=lambda r: r.relative)


def _run_folder(root: Path, here: Path, names: list[str]) -> RunFolder | None:
    sizes, newest = [], 0.0
    for name in names:
        if not name.endswith(".jsonl"):
            continue
        try:
            st = (here / name).stat()
        except OSError:
            continue
        sizes.append(st.st_size)
        newest = max(newest, st.st_mtime)
    if not sizes:
        return None
    relative = here.relative_to(root).as_posix()
    return RunFolder(here, "." if relative == "." else relative, len(sizes), sum(sizes), newest)
