"""Tables a trainer logged to an experiment tracker, as the rows of a rollout run.

TRL logs its completions (``log_completions=True``) and verl its validation
generations to the trackers beside the scalars. Each tracker keeps them as a
JSON document on disk:

- W&B: ``files/media/table/<key>_<step>_<sha>.table.json`` =
  ``{"columns": [...], "data": [[...], ...]}``;
- SwanLab: ``media/echarts/...json`` = ``{"_swanLab": "table", "rowData": [{...}]}``;
- MLflow (verl): ``artifacts/val_step<N>.json`` = ``[{"input", "output", "score"}]``.

The rows then read as the trainer's own dump does (TRL's completions table,
verl's generations), so a table carries the same truth as the trainer's dump.
verl logs its generations to W&B as one wide row per validation step
(``step, input_1, output_1, score_1, input_2, ...``): each numbered group of
a row is one sample. Nothing here opens a file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson

from rl_board.formats.base import Record

SUFFIX = ".json"
WANDB_TABLE = re.compile(r"^(?P<key>.+)_(?P<step>\d+)_(?P<sha>[0-9a-f]{8,64})\.table\.json$")
MLFLOW_GENERATIONS = re.compile(r"^val_step\d+\.json$")
HOMES = (("files", "media", "table"), ("media", "echarts"), ("artifacts",))
"""Where each tracker keeps its tables inside a run folder: a table belongs to the run above it."""
_NUMBERED = re.compile(r"^(?P<base>.+)_(?P<n>\d+)$")


def may_be_table(path: Path) -> bool:
    """Whether a JSON file's name or folder is one a tracker gives a table document."""
    if path.suffix.lower() != SUFFIX:
        return False
    if WANDB_TABLE.match(path.name) or MLFLOW_GENERATIONS.match(path.name):
        return True
    return run_folder([p.name for p in reversed(path.parents)]) is not None


def rows_of(document: Any, name: str) -> list[Record] | None:
    """The rows a tracker's table document holds, one per sample; None when it is no such table."""
    if isinstance(document, dict) and isinstance(document.get("columns"), list) and "data" in document:
        columns = [str(c) for c in document["columns"]]
        data = document["data"] if isinstance(document["data"], list) else []
        rows = [
            dict(zip(columns, row, strict=True))
            for row in data
            if isinstance(row, list) and len(row) == len(columns)
        ]
        return melted(columns, rows)
    if isinstance(document, dict) and document.get("_swanLab") == "table":
        row_data = document.get("rowData")
        return [r for r in row_data if isinstance(r, dict)] if isinstance(row_data, list) else None
    if (
        isinstance(document, list)
        and MLFLOW_GENERATIONS.match(name)
        and all(isinstance(r, dict) for r in document)
    ):
        return list(document)
    return None


def parsed(data: bytes) -> Any:
    """A table document's JSON (NaN and Infinity as bare tokens too, as Python's json writes them); None when
    the bytes are no JSON. The one parse the catalogue's look and the reader share."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            return None


def is_wide(columns: list[str]) -> bool:
    """verl's wide generations table: columns numbered from 1 in groups (``input_1, output_1, ...``)."""
    return 1 in _numbered_groups(columns)


def melted(columns: list[str], rows: list[Record]) -> list[Record]:
    """A wide table's rows as one record per numbered group (with the row's other columns); others as they
    are."""
    groups = _numbered_groups(columns)
    if not groups:
        return rows
    shared = [c for c in columns if not any(c in g.values() for g in groups.values())]
    out = []
    for row in rows:
        common = {c: row[c] for c in shared}
        for n in sorted(groups):
            part = {base: row[column] for base, column in groups[n].items()}
            if any(v is not None for v in part.values()):
                out.append({**common, **part})
    return out


def _numbered_groups(columns: list[str]) -> dict[int, dict[str, str]]:
    """number -> {base name: column} for columns named ``<base>_<n>``, when at least two bases share
    numbers."""
    groups: dict[int, dict[str, str]] = {}
    for column in columns:
        match = _NUMBERED.match(column)
        if match:
            groups.setdefault(int(match["n"]), {})[match["base"]] = column
    bases = {frozenset(g) for g in groups.values()}
    if len(bases) != 1 or len(next(iter(bases))) < 2:
        return {}
    return groups


def run_folder(parts: list[str]) -> int | None:
    """How many of a table's folder parts (relative to the root) name its run: those above the tracker's
    table home (W&B's ``files/media/table``, which may hold a key's own folders); None outside a home."""
    for k in range(len(parts) - 1, -1, -1):
        if any(tuple(parts[k : k + len(home)]) == home for home in HOMES):
            return k
    return None
