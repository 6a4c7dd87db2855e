"""Find metric runs under a path and say what kind each one is.

- a DI-engine / LightZero experiment folder is one run (its `log/serial`
  event files belong to it, and nothing below it is a run of its own);
- any other folder holding event files directly is a TensorBoard run;
- a text log (`.log`, `.txt`, `.out`, `.err`, `.jsonl`, `.ndjson`) is a
  candidate stdout/JSONL run; the reader decides whether it holds metrics.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from rl_board.data.scalars.dilogs import is_di_engine_folder
from rl_board.data.scalars.tensorboard import is_event_file

TEXT_SUFFIXES = frozenset({".log", ".txt", ".out", ".err", ".jsonl", ".ndjson"})
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})


@dataclass(frozen=True)
class RunSource:
    """Where one run's data lives. kind is "tensorboard", "di-engine" or "text" (decided on reading)."""

    run: str
    kind: str
    path: Path
    files: tuple[Path, ...] = field(default_factory=tuple)


def discover(root: Path, *, skip: tuple[Path, ...] = ()) -> list[RunSource]:
    """All candidate runs under `root` (a folder or a single file), sorted by name.

    `skip` lists folders to leave out (e.g. a cache folder inside the root).
    """
    root = root.resolve()
    if root.is_file():
        return _single_file(root)
    found: list[RunSource] = []
    skipped = {p.resolve() for p in skip}
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if _walkable(here / d, skipped))
        name = _relative(here, root)
        if is_di_engine_folder(here):
            found.append(RunSource(name, "di-engine", here, tuple(_di_engine_event_files(here))))
            dirs[:] = []
            continue
        paths = [here / f for f in sorted(files)]
        events = tuple(p for p in paths if is_event_file(p))
        if events:
            found.append(RunSource(name, "tensorboard", here, events))
        found.extend(
            RunSource(_relative(p, root), "text", p, (p,))
            for p in paths
            if p.suffix.lower() in TEXT_SUFFIXES and p.is_file()
        )
    return sorted(found, key=lambda s: s.run)


def _single_file(path: Path) -> list[RunSource]:
    """A root that is one file: an event file or a text log."""
    if is_event_file(path):
        return [RunSource(path.name, "tensorboard", path.parent, (path,))]
    return [RunSource(path.name, "text", path, (path,))]


def _walkable(folder: Path, skipped: set[Path]) -> bool:
    """Hidden folders, package caches and the caller's skip list are not searched."""
    return (
        not folder.name.startswith(".") and folder.name not in SKIP_DIRS and folder.resolve() not in skipped
    )


def _di_engine_event_files(folder: Path) -> list[Path]:
    """Event files anywhere under the experiment's log/ folder (normally log/serial)."""
    log = folder / "log"
    return sorted(p for p in log.rglob("*") if is_event_file(p)) if log.is_dir() else []


def _relative(path: Path, root: Path) -> str:
    """A run name: the POSIX path relative to the root ("." for the root itself)."""
    rel = path.relative_to(root).as_posix()
    return rel or "."
