"""The long-table schema every metrics reader produces, and builders for it.

Readers append plain Python values to column lists and build a DataFrame once
at the end; the column names and dtypes live here and nowhere else.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

# pandas is imported by what builds a frame: finding runs and listing a cached index build none
if TYPE_CHECKING:
    import pandas as pd

SCALAR_COLUMNS: dict[str, str] = {
    "run": "string",
    "source": "string",
    "tag": "string",
    "step": "int64",
    "value": "float64",
    "wall_time": "float64",
}
"""One row per (run, source, tag, step) point. wall_time is NaN when unknown."""

HISTOGRAM_COLUMNS: dict[str, str] = {
    "run": "string",
    "source": "string",
    "tag": "string",
    "step": "int64",
    "wall_time": "float64",
    "left": "object",
    "right": "object",
    "count": "object",
}
"""One row per histogram record; left/right/count are equal-length float lists."""

TEXT_COLUMNS: dict[str, str] = {
    "run": "string",
    "source": "string",
    "tag": "string",
    "step": "int64",
    "wall_time": "float64",
    "text": "string",
}
"""One row per text summary (or string-valued metric)."""

EPISODE_COLUMNS: dict[str, str] = {
    "run": "string",
    "train_iter": "int64",
    "env": "int64",
    "episode": "int64",
    "reward": "float64",
}
"""DI-engine evaluator: one row per finished evaluation episode."""


@dataclass(frozen=True)
class Problem:
    """Something in a file we could not use; shown to the user, never raised."""

    file: str
    reason: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output and the on-disk cache."""
        return asdict(self)

    def shown_under(self, root: Path) -> dict[str, Any]:
        """``to_dict`` with the file relative to ``root`` when it lies inside it (a link: where it lies)."""
        out = self.to_dict()
        for candidate in (Path(self.file), Path(self.file).resolve()):
            with contextlib.suppress(ValueError):  # outside the root: keep the absolute path
                out["file"] = candidate.relative_to(root).as_posix()
                break
        return out


@dataclass
class Columns:
    """Column lists for one table; `frame()` builds the DataFrame once."""

    schema: dict[str, str]
    data: dict[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.schema:
            self.data.setdefault(name, [])

    def add(self, **row: Any) -> None:
        """Append one row; missing optional columns become NaN/None."""
        for name, values in self.data.items():
            values.append(row.get(name, math.nan if self.schema[name] == "float64" else None))

    def extend(self, count: int, **columns: Any) -> None:
        """Append `count` rows at once: a list per column, or one value repeated for all rows."""
        for name, values in self.data.items():
            given = columns.get(name, math.nan if self.schema[name] == "float64" else None)
            values.extend(given if isinstance(given, list) else [given] * count)

    def __len__(self) -> int:
        return len(next(iter(self.data.values()), []))

    def frame(self) -> pd.DataFrame:
        """The DataFrame with the declared dtypes (empty frames keep the columns)."""
        import pandas as pd

        if not len(self):
            return empty_frame(self.schema)
        if "object" in self.schema.values():
            return typed_frame(pd.DataFrame(self.data, columns=list(self.schema)), self.schema)
        arrays = {name: pa.array(self.data[name], _ARROW_TYPES[dtype]) for name, dtype in self.schema.items()}
        return pa.table(arrays).to_pandas(types_mapper=_pandas_types().get)  # through Arrow: 5x faster


_ARROW_TYPES = {
    "string": pa.string(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "object": pa.list_(pa.float64()),
}


def _pandas_types() -> dict[pa.DataType, Any]:
    """How Arrow's types become pandas' dtypes in these frames (strings as pandas' string dtype)."""
    import pandas as pd

    return {pa.string(): pd.StringDtype()}


def to_arrow(frame: pd.DataFrame, schema: dict[str, str]) -> pa.Table:
    """A typed frame as an Arrow table, column by column (pyarrow's own pandas conversion walks
    every string cell of these frames in Python)."""
    return pa.table(
        {
            name: pa.array(frame[name].array if dtype != "object" else list(frame[name]), _ARROW_TYPES[dtype])
            for name, dtype in schema.items()
        }
    )


def from_arrow(table: pa.Table, schema: dict[str, str]) -> pd.DataFrame:
    """The inverse of `to_arrow`: list cells come back as Python lists."""
    frame = table.to_pandas(types_mapper=_pandas_types().get)
    if "object" not in schema.values() and list(frame.columns) == list(schema):
        return frame  # already the schema's dtypes
    for name, dtype in schema.items():
        if dtype == "object" and name in frame.columns:
            frame[name] = [list(cell) if cell is not None else [] for cell in frame[name]]
    return typed_frame(frame, schema)


def typed_frame(frame: pd.DataFrame, schema: dict[str, str]) -> pd.DataFrame:
    """Cast a frame to `schema`, so concatenated and cached frames agree."""
    out = frame.reindex(columns=list(schema))
    for name, dtype in schema.items():
        if dtype == "object":
            out[name] = out[name].astype(object)
        else:
            out[name] = out[name].astype(dtype)
    return out.reset_index(drop=True)


def empty_frame(schema: dict[str, str]) -> pd.DataFrame:
    """A zero-row frame with the schema's columns and dtypes (a copy of one built once per schema:
    casting costs milliseconds, and most runs have three empty tables)."""
    import pandas as pd

    key = tuple(schema.items())
    if key not in _EMPTY:
        _EMPTY[key] = typed_frame(pd.DataFrame({name: [] for name in schema}), schema)
    return _EMPTY[key].copy()


_EMPTY: dict[tuple[tuple[str, str], ...], pd.DataFrame] = {}


def concat_frames(frames: list[pd.DataFrame], schema: dict[str, str]) -> pd.DataFrame:
    """Concatenate frames of one schema; an empty list gives an empty frame."""
    import pandas as pd

    usable = [f for f in frames if len(f)]
    if not usable:
        return empty_frame(schema)
    return typed_frame(pd.concat(usable, ignore_index=True), schema)


def scalar_value(raw: Any) -> float | None:
    """A float for numbers and bools (NaN/Inf kept), None for anything else."""
    if isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, (int, float, np.integer, np.floating)):
        return float(raw)
    if isinstance(raw, str) and raw.strip().lower() in {
        "nan",
        "inf",
        "-inf",
        "+inf",
        "infinity",
        "-infinity",
    }:
        return float(raw.strip().lower().replace("infinity", "inf"))
    return None


@dataclass
class ReadResult:
    """Everything one reader got from one unit (a file, or a folder of event files).

    `extras` holds JSON-friendly facts that are not series: hparams, config
    text, the network printout, checkpoint listings, per-file notes.
    """

    scalars: pd.DataFrame
    histograms: pd.DataFrame
    texts: pd.DataFrame
    episodes: pd.DataFrame
    problems: list[Problem] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class TableSet:
    """Column builders for all four tables plus the problems met on the way."""

    scalars: Columns = field(default_factory=lambda: Columns(SCALAR_COLUMNS))
    histograms: Columns = field(default_factory=lambda: Columns(HISTOGRAM_COLUMNS))
    texts: Columns = field(default_factory=lambda: Columns(TEXT_COLUMNS))
    episodes: Columns = field(default_factory=lambda: Columns(EPISODE_COLUMNS))
    problems: list[Problem] = field(default_factory=list)

    def result(self, extras: dict[str, Any] | None = None) -> ReadResult:
        """Freeze the builders into DataFrames."""
        return ReadResult(
            scalars=self.scalars.frame(),
            histograms=self.histograms.frame(),
            texts=self.texts.frame(),
            episodes=self.episodes.frame(),
            problems=list(self.problems),
            extras=dict(extras or {}),
        )


def merge_results(parts: list[ReadResult]) -> ReadResult:
    """One ReadResult from several (extras of later parts win on key clashes)."""
    extras: dict[str, Any] = {}
    for part in parts:
        extras.update(part.extras)
    return ReadResult(
        scalars=concat_frames([p.scalars for p in parts], SCALAR_COLUMNS),
        histograms=concat_frames([p.histograms for p in parts], HISTOGRAM_COLUMNS),
        texts=concat_frames([p.texts for p in parts], TEXT_COLUMNS),
        episodes=concat_frames([p.episodes for p in parts], EPISODE_COLUMNS),
        problems=[problem for p in parts for problem in p.problems],
        extras=extras,
    )


def scalar_frame(
    run: str, source: str, tags: pa.Array, steps: np.ndarray, values: np.ndarray, walls: np.ndarray
) -> pd.DataFrame:
    """The scalar table built from columns at once (as ``Columns.frame`` types it), without a Python
    object per point."""
    count = len(values)
    if not count:
        return TableSet().scalars.frame()
    constant = pa.array(np.zeros(count, np.int32))
    arrays = {
        "run": pa.DictionaryArray.from_arrays(constant, pa.array([run])).cast(pa.string()),
        "source": pa.DictionaryArray.from_arrays(constant, pa.array([source])).cast(pa.string()),
        "tag": tags.cast(pa.string()),
        "step": pa.array(steps, pa.int64()),
        "value": pa.array(values, pa.float64()),
        "wall_time": pa.array(walls, pa.float64()),
    }
    frame = pa.table(arrays).to_pandas(types_mapper=_pandas_types().get)
    return frame[list(SCALAR_COLUMNS)]


def iso_seconds(texts: list[Any]) -> np.ndarray:
    """ISO-8601 timestamps as seconds since the epoch (no zone: UTC); NaN where one cannot be read."""
    import pandas as pd

    parsed = pd.to_datetime(pd.Series(texts, dtype=object), utc=True, errors="coerce", format="ISO8601")
    return (parsed - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan)
