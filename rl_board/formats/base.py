"""What a trainer's dump format is, as rl-board reads it: the parse contract every format follows.

A format recognises a record (one JSON line, the one object of a column-list
file, or one Parquet row) by its keys. Reading it has three stages, and each
format supplies each stage once, for every parse path alike:

1. ``renames``: the trainer's key -> rl-board's field (``input`` -> ``prompt``).
   The fast table path reads the file under these names; the careful record
   path renames each record's keys. Nested formats (NeMo-RL, prime-rl, ROLL)
   have none: ``nested`` turns one record into its samples instead.
2. The reader then makes every known field its type and name every refusal
   (``rollouts/read``): the same rules on a table and on a record.
3. ``adapt``: the format's own table step on the typed table (a group column
   from verl's ``uid``, TRL's reward from its reward functions). It runs after
   both paths, so what it decides cannot differ between them.

``step`` may be left out: the file name gives it (``12.jsonl``, ``step_12``,
``_step12``). Adapters never raise on odd values; the careful path names them.
A ``Reading`` is how one file is read: its format, field map and the options
the sources layer found for it (TRL's reward functions), decided once per load.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from rl_board.formats import fieldmap
from rl_board.formats.fieldmap import FieldMap

Record = dict[str, Any]


class Probe:
    """What a format may ask about a file's neighbours; the catalogue answers from the file system."""

    def exists(self, path: Path) -> bool:  # a file or a folder
        raise NotImplementedError

    def is_dir(self, path: Path) -> bool:
        raise NotImplementedError

    def names(self, folder: Path) -> list[str]:  # the entries of a folder
        raise NotImplementedError

    def version(self, path: Path) -> tuple[int, int] | None:  # a file's (size, mtime_ns); None: not there
        raise NotImplementedError

    def read(self, path: Path) -> bytes | None:  # a neighbour's bytes; None: absent or not readable
        raise NotImplementedError


Options = Mapping[str, Any]  # JSON-able facts about a file found beside it (see ``Reading``)
_STEP_IN_NAME = (re.compile(r"(?:^|[_\-.])step[_\-=]?(\d+)", re.I), re.compile(r"^(\d+)$"))
# A Hive partition folder as Spark names it: step=-1, step=3.0 (a double step column), and the folder of rows
# whose step was null (no step in the folder name, nor in the names above it).
HIVE_STEP = re.compile(r"^step=(?:(-?\d+)(?:\.0+)?|__HIVE_DEFAULT_PARTITION__)$")


@dataclass
class Adapted:
    """A table after a format's ``adapt``, with notes on some of its rows (row index, note)."""

    table: pa.Table
    notes: list[tuple[int, str]] = field(default_factory=list)


def as_is(table: pa.Table, options: Options) -> Adapted:
    return Adapted(table)


@dataclass(frozen=True)
class Format:
    """One dump format: how to recognise it and how to read its records (see the module docstring)."""

    name: str  # short id, e.g. "verl" (summary --json "format")
    label: str  # in words, e.g. "verl rollout dump"
    identify: Callable[[Record], bool]
    renames: Mapping[str, str] = field(
        default_factory=dict
    )  # flat formats: key in the dump -> rl-board field
    nested: Callable[[Record], list[Record]] | None = None  # nested formats: one record -> its samples
    # ``nested`` of a block's records at once (the same samples, faster), where a format has it
    nested_many: Callable[[list[Record]], list[list[Record]]] | None = None
    # keys holding per-token rows of numbers, which a reader may pack as float64 arrays (``simd_rows``): then
    # ``nested_many`` and ``nested`` both take such an array where a list of numbers was written
    row_keys: frozenset[str] = frozenset()
    adapt: Callable[[pa.Table, Options], Adapted] = as_is
    field_map: tuple[tuple[str, str], ...] = ()  # (key in the dump, rl-board field), for the load report
    columns: bool = False  # one record holds column lists (ROLL): the whole file is one record
    notes: str = ""
    kept: tuple[str, ...] = field(default=())  # keys known to be kept as extra columns (for the report)
    # Why a file of this format is not read into its folder's run (a copy of another file, a step still being
    # written, validation beside training samples): the reason, or "" to read it. It is told of the file's
    # neighbours through ``Probe`` (the catalogue's look at the folder): formats open no file themselves.
    set_aside: Callable[[Path, Probe], str] | None = None
    # What stopped a trajectory of this trainer's agent loop that ends on tool calls never answered (the
    # loop's limit, in the ``formats.trajectory`` vocabulary: verl's max_assistant_turns, TRL's
    # max_tool_calling_iterations), used when no finish reason was logged; "" when the trainer does not say.
    open_calls_end: str = ""
    # What the trainer writes beside a folder of this format's files that says how to read them (TRL's
    # trainer_state.json, prime-rl's effective/): options of their ``Reading``, found through the ``Probe``
    # (which never looks outside the served folders). A change there makes the files read again.
    companions: Callable[[Path, Probe], Options] | None = None
    # Its files sit in a folder per step named by the bare number (AReaL's rollout/{version}/): those folders
    # belong to the run above them, as step_N/ folders do for every format.
    numbered_step_folders: bool = False

    @property
    def flat(self) -> bool:
        """One record is one sample under other key names: the fast table paths can read it."""
        return self.nested is None

    def aside(self, path: Path, probe: Probe) -> str:
        return self.set_aside(path, probe) if self.set_aside is not None else ""

    def describe(self) -> str:
        """'verl rollout dump: input → prompt, output → response, ...'"""
        pairs = ", ".join(f"{src} → {dst.replace('_', ' ')}" for src, dst in self.field_map if src != dst)
        return f"{self.label}: {pairs}" if pairs else self.label


@dataclass(frozen=True)
class Reading:
    """How one file is read: its format's name, its effective field map and what was found beside it."""

    format: str
    fields: FieldMap = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> list[Any]:
        return [self.format, dict(self.fields), dict(self.options)]

    @classmethod
    def from_json(cls, data: list[Any]) -> Reading:
        return cls(str(data[0]), dict(data[1]), dict(data[2]))

    def digest(self) -> str:
        """Changes whenever the file would be read differently (cache keys)."""
        if not self.fields and not self.options:
            return ""
        raw = json.dumps([sorted(self.fields.items()), self.options], sort_keys=True, default=str)
        return hashlib.sha1(raw.encode()).hexdigest()[:12]

    def renames(self, fmt: Format) -> dict[str, str]:
        """Key renames for a flat format's table path: the format's, the user's field map winning."""
        user = {source: canonical for canonical, source in fieldmap.renames(self.fields).items()}
        base = {s: c for s, c in fmt.renames.items() if c not in self.fields and s not in user}
        return {**base, **user}


def step_from_name(path: Path) -> int | None:
    """A step number in a file's or its folders' names: ``12.jsonl``, ``step_12``, ``train_data_step12``."""
    for part in (path.stem, *(p.name for p in list(path.parents)[:3])):  # the nearest folders only
        hive = HIVE_STEP.match(part)
        if hive:
            return int(hive[1]) if hive[1] is not None else None
        for pattern in _STEP_IN_NAME:
            found = pattern.search(part)
            if found:
                return int(found.group(1))
    return None


def renamed(record: Record, mapping: Mapping[str, str]) -> Record:
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
