"""Served roots: the only folders the dashboard may read.

The server is started with one or more roots (``rl-board serve ROOT ...``,
passed to the app in ``$RL_BOARD_ROOTS``). Any path a user types or puts in a
URL is resolved (``~``, ``..`` and symlinks included) and refused unless it
lies inside one of them, before anything under it is read.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rl_board.errors import PathRefusedError


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
    if _under(real, roots):
        return real
    allowed = ", ".join(str(r) for r in roots)
    raise PathRefusedError(f"{text} is outside the folders this server serves ({allowed})")


def relative_to_roots(path: Path, roots: list[Path]) -> str:
    """How to name ``path`` in a URL: relative to the root that holds it."""
    real = path.resolve()
    for root in roots:
        if _under(real, [root]):
            return real.relative_to(root).as_posix()
    raise PathRefusedError(f"{path} is outside the served folders")


OUTSIDE = "links outside the served folders; not read"
"""The reason every reader gives for a file it refuses (a Problem's text)."""


def inside(path: str | Path, roots: Iterable[Path]) -> bool:
    """Whether ``path``, symlinks and ``..`` resolved, lies in one of ``roots``.

    The one check every reader of files under a root makes before opening,
    listing or stat-ing anything: a link planted under a served root must not
    lead the dashboard to a file outside it. A looping link is outside.
    """
    try:
        real = Path(path).resolve()
        return _under(real, [Path(root).resolve() for root in roots])
    except (OSError, RuntimeError):  # a looping link
        return False


def _under(real: Path, roots: Iterable[Path]) -> bool:
    return any(real == root or real.is_relative_to(root) for root in roots)
