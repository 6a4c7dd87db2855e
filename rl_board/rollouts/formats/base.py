"""What a trainer's dump format is, as rl-board reads it.

A format recognises a record (one JSON line, the one object of a column-list
file, or one Parquet row) by its keys and turns it into canonical samples:
dicts with rl-board's field names (``step``, ``prompt``, ``response``,
``reward``, ``ground_truth``, ...; see ``rollouts/fields.py``) plus every other
key kept as an extra column. ``step`` may be left out: the file name gives it
(``12.jsonl``, ``step_12``, ``_step12``). An adapter never raises on odd
values; the careful line path checks and names them afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rl_board.sources import fieldmap

Record = dict[str, Any]
_STEP_IN_NAME = (re.compile(r"(?:^|[_\-.])step[_\-=]?(\d+)", re.I), re.compile(r"^(\d+)$"))


@dataclass(frozen=True)
class Format:
    """One dump format: how to recognise it and how to read its records."""

    name: str  # short id, e.g. "verl" (summary --json "format")
    label: str  # in words, e.g. "verl rollout dump"
    identify: Callable[[Record], bool]
    to_samples: Callable[[Record], list[Record]]
    field_map: tuple[tuple[str, str], ...] = ()  # (key in the dump, rl-board field), for the load report
    columns: bool = False  # one record holds column lists (ROLL): the whole file is one record
    notes: str = ""
    kept: tuple[str, ...] = field(default=())  # keys known to be kept as extra columns (for the report)
    # Flat formats only: the key renames that make a record an rl-board sample (the fast table path), and
    # what to add to a renamed table (e.g. a group column); None = records go through ``to_samples``.
    renames: dict[str, str] | None = None
    table_post: Callable[[Any], Any] | None = None
    # Why a file of this format is not read into its folder's run (a copy of another file, a step still being
    # written, validation beside training samples): the reason, or "" to read it.
    set_aside: Callable[[Path], str] | None = None

    def aside(self, path: Path) -> str:
        return self.set_aside(path) if self.set_aside is not None else ""

    def describe(self) -> str:
        """'verl rollout dump: input → prompt, output → response, ...'"""
        pairs = ", ".join(f"{src} → {dst.replace('_', ' ')}" for src, dst in self.field_map if src != dst)
        return f"{self.label}: {pairs}" if pairs else self.label


def step_from_name(path: Path) -> int | None:
    """A step number in a file's or its folders' names: ``12.jsonl``, ``step_12``, ``train_data_step12``."""
    for part in (path.stem, *(p.name for p in list(path.parents)[:3])):  # the nearest folders only
        for pattern in _STEP_IN_NAME:
            found = pattern.search(part)
            if found:
                return int(found.group(1))
    return None


def renamed(record: Record, mapping: dict[str, str]) -> Record:
    """A record with keys renamed (source -> canonical); other keys are kept.

    A key that already bears a mapped name (verl validation logs both
    ``score`` and ``reward``) is kept as ``<name>_logged`` so nothing is lost.
    """
    return fieldmap.apply(record, {canonical: source for source, canonical in mapping.items()})


def first(value: Any) -> Any:
    """Unwrap a leading batch dimension of 1 (NeMo-RL writes ``"rewards": [1.0]``)."""
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value


def number(value: Any) -> float | None:
    """A float from a number, a bool, a one-element list or a numeric string; None otherwise."""
    value = first(value)
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None
