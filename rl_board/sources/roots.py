"""Served roots: the only folders the dashboard may read.

The server is started with one or more roots (``rl-board serve ROOT ...``,
passed to the app in ``$RL_BOARD_ROOTS``). Any path a user types or puts in a
URL is resolved (``~``, ``..`` and symlinks included) and refused unless it
lies inside one of them, before anything under it is read.
"""

from __future__ import annotations

import os
from pathlib import Path

from rl_board.errors import PathRefusedError

ROOTS_ENV = "RL_BOARD_ROOTS"


def served_roots() -> list[Path]:
    """Resolved roots from the environment; ``./rollout_samples`` when unset."""
    raw = os.environ.get(ROOTS_ENV, "")
    parts = [p for p in raw.split(os.pathsep) if p.strip()] or ["rollout_samples"]
    return [Path(p).expanduser().resolve() for p in parts]


def resolve_within(path: str | Path, roots: list[Path]) -> Path:
    """The real path of ``path`` if it lies inside a root, else PathRefusedError.

    A relative path is taken relative to the first root (so URLs can carry
    ``run=exp/a``); ``~`` is expanded first so it cannot slip past the check.
    """
    text = str(path).strip()
    if not text:
        raise PathRefusedError("empty path")
    if "\x00" in text:
        raise PathRefusedError("path contains a NUL byte")
    candidate = Path(text).expanduser()
    if not candidate.is_absolute():
        candidate = roots[0] / candidate if roots else candidate
    real = candidate.resolve()
    for root in roots:
        if real == root or real.is_relative_to(root):
            return real
    allowed = ", ".join(str(r) for r in roots)
    raise PathRefusedError(f"{text} is outside the folders this server serves ({allowed})")


def relative_to_roots(path: Path, roots: list[Path]) -> str:
    """How to name ``path`` in a URL: relative to the root that holds it."""
    real = path.resolve()
    for root in roots:
        if real == root or real.is_relative_to(root):
            return real.relative_to(root).as_posix()
    raise PathRefusedError(f"{path} is outside the served folders")
