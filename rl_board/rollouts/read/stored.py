"""Runs kept inside a store file (``sources.members``), read through the metric kind that claimed it.

A Trackio project database holds each run's tables and traces; only its metric kind knows that store's
layout, so the rows of such a run are asked of the kind (``members.keeper``), by the name its claim left
in the file's ``Reading`` options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rl_board.formats import Reading
from rl_board.sources import members


def is_stored(reading: Reading | None) -> bool:
    """Whether a rollout file is a run inside a store (read whole, by its kind)."""
    return reading is not None and members.is_member(reading.options)


def rows(store: Path, reading: Reading, allowed: list[Path] | None = None) -> list[dict[str, Any]]:
    """The run's samples as its kind reads them out of the store; OSError when no such kind is known here."""
    kind = members.keeper(str(reading.options[members.MEMBER_OF]))
    if kind is None:
        raise OSError(f"no reader for {reading.options[members.MEMBER_OF]} stores in this process")
    return kind.rollout_rows(store, str(reading.options[members.MEMBER]), allowed)
