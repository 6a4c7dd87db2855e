"""What a trainer writes beside its rollout dumps, looked at for the formats that read it.

A format says what it needs beside its files (``Format.companions``: TRL's
``checkpoint-*/trainer_state.json`` names its reward functions, prime-rl's
``effective/`` its trained-on episodes); this layer answers its questions from
the disk through a ``Probe`` that never looks outside the folders a server
serves (a served root of ``out/completions`` never reads ``out/checkpoint-*``;
the command line, which serves nothing, looks beside the run wherever it is).
What is found becomes part of a file's ``Reading`` (its ``options``), so a
change (a first checkpoint, the trained-on episodes of a step written) makes
the file read again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rl_board import formats
from rl_board.formats.base import Probe
from rl_board.formats.trl import TRAINER_STATE, trainer_state
from rl_board.sources.roots import inside

__all__ = ["TRAINER_STATE", "ConfinedProbe", "newest_trainer_state", "options_for"]


class ConfinedProbe(Probe):
    """A format's questions about a folder's neighbours, answered from the disk inside ``allowed`` only (None:
    anywhere); a link that leads out is as if absent."""

    def __init__(self, allowed: list[Path] | None) -> None:
        self.allowed = allowed

    def _may(self, path: Path) -> bool:
        return self.allowed is None or inside(path, self.allowed)

    def exists(self, path: Path) -> bool:
        return self._may(path) and path.exists()

    def is_dir(self, path: Path) -> bool:
        return self._may(path) and path.is_dir()

    def names(self, folder: Path) -> list[str]:
        if not self._may(folder):
            return []
        try:
            return [e.name for e in os.scandir(folder)]
        except OSError:
            return []

    def version(self, path: Path) -> tuple[int, int] | None:
        if not self._may(path):
            return None
        try:
            st = path.stat()
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns) if path.is_file() else None

    def read(self, path: Path) -> bytes | None:
        if not self._may(path):
            return None
        try:
            return path.read_bytes()
        except OSError:
            return None


def options_for(folder: Path, fmt: str, allowed: list[Path] | None) -> dict[str, Any]:
    """The options of the files of format ``fmt`` in ``folder`` (its ``companions``), looking only inside
    ``allowed`` (if given)."""
    found = formats.by_name(fmt).companions
    return dict(found(folder, ConfinedProbe(allowed))) if found is not None else {}


def newest_trainer_state(base: Path, allowed: list[Path] | None) -> Path | None:
    """``checkpoint-N/trainer_state.json`` of the highest N under ``base``, when it lies inside
    ``allowed``."""
    return trainer_state(base, ConfinedProbe(allowed))
