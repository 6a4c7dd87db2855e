"""Rollout runs that live inside a store file: a tracker's database holding several runs' tables.

A rollout run is a folder (or one file) everywhere in rl-board: its name in
URLs, the key of its cache, its labels. A Trackio project database holds the
runs of a whole project in one SQLite file, and each run's tables and traces
are its samples. Such a run is addressed as a path *below* the store file,
``<store>/<member>`` (``wandb-free/project.db/grpo-1``): it names the run as
a folder would, yet no such path exists on disk. ``split`` finds the store a
member path lies in; the metric kind that claimed the store reads its rows
(``metrics.kind.MetricKind.rollout_rows``), named in the file's ``Reading``
options (``MEMBER_OF``, ``MEMBER``).

The metric kinds live above the rollout layer, which finds and reads these
runs; so the kinds that keep runs register here (``metrics.kinds`` does, when
it is imported: every door that opens a run has it imported when the rollout
layer first asks, ``register_later``), and the rollout layer asks
``keepers()``. A run inside a store is one file of its run, read in the
process that found it, never in a worker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, unquote

from rl_board.sources.claims import MetricClaims

MEMBER_OF = "member_of"
"""A member's ``Reading`` option: the name of the metric kind whose store holds it."""
MEMBER = "member"
"""A member's ``Reading`` option: the run inside the store (the kind's ``part``)."""
SIDE_SUFFIXES = ("-wal", "-journal")
"""Files a SQLite writer keeps beside its database: what they hold is committed too."""


def member_path(store: Path, name: str) -> Path:
    """The path a member run is addressed by: its name (quoted where it would not be one path part)."""
    return store / quote(name, safe=" ()+,-.=@_~")


def split(path: Path) -> tuple[Path, str] | None:
    """(store file, member name) when ``path`` names a run inside a store file; None otherwise."""
    parent = path.parent
    if parent == path or path.exists() or not parent.is_file():
        return None
    return parent, unquote(path.name)


def is_member(options: Mapping[str, Any] | None) -> bool:
    """Whether a file's reading options say it is a run inside a store."""
    return options is not None and bool(options.get(MEMBER_OF)) and MEMBER in options


def state(store: Path) -> tuple[int, int]:
    """(bytes, newest mtime in ns) of a store and its side files: a committed write to either changes it.

    A database in WAL mode takes new rows into its ``-wal`` file and leaves the main file as it was until a
    checkpoint, so the main file's size and mtime alone would miss a run still writing. OSError when the
    store itself cannot be stat-ed.
    """
    st = store.stat()
    size, newest = st.st_size, st.st_mtime_ns
    for suffix in SIDE_SUFFIXES:
        try:
            side = Path(f"{store}{suffix}").stat()
        except OSError:
            continue
        size, newest = size + side.st_size, max(newest, side.st_mtime_ns)
    return size, newest


class Keeper(MetricClaims, Protocol):
    """A metric kind whose store keeps runs' samples inside it (``metrics.kind.MetricKind``)."""

    def rollout_rows(self, store: Path, part: str, allowed_roots: list[Path] | None) -> list[dict[str, Any]]:
        """One run's samples, read out of the store."""
        ...


_KEEPERS: dict[str, Keeper] = {}
_LATER: list[Callable[[], object]] = []
_LOADING = threading.RLock()


def register(kind: Keeper) -> None:
    """Make a kind's runs inside its stores found and read as rollout runs."""
    _KEEPERS[kind.name] = kind


def register_later(load: Callable[[], object]) -> None:
    """Register the kinds by calling ``load`` (which imports them) when one is first asked for: opening a
    run that lies in no store then imports no metric reader."""
    _LATER.append(load)


def keepers() -> list[Keeper]:
    """The registered kinds, in registration order (none until ``metrics.kinds`` is imported or was
    registered to be)."""
    _load()
    return list(_KEEPERS.values())


def keeper(name: str) -> Keeper | None:
    _load()
    return _KEEPERS.get(name)


def _load() -> None:
    if not _LATER:
        return
    with _LOADING:  # another thread asking meanwhile waits for the kinds rather than finding none
        while _LATER:
            _LATER[0]()
            _LATER.pop(0)
