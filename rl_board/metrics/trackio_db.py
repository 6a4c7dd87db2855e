"""Trackio's local store, read without trackio: one SQLite file per project, ``<TRACKIO_DIR>/<project>.db``.

Schema (trackio 0.43, ``sqlite_storage.py``): ``metrics(id, run_id, timestamp, run_name, step, metrics,
log_id, space_id)`` holds one row per ``trackio.log`` call, its ``metrics`` a JSON object (orjson bytes,
so usually a BLOB) of ``{key: value}``; ``configs(run_id, run_name, config, created_at)``;
``system_metrics`` (GPU/CPU samples with a timestamp and no step: not read); ``traces(run_id, step, key,
trace_index, messages, metadata, ...)``. Databases written before trackio 0.24 have no ``run_id``: a
run is its name. Trackio writes NaN and +-inf as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``;
it renames a logged key that is reserved (``step``, ``time``, ...) or starts with ``__`` to ``__<key>``,
and the name is given back here as logged.

Steps: ``trackio.log`` without ``step=`` numbers the calls itself (TRL's metrics land on 1, 3, 5, ...
because its completions table and profiling timers are logged in between). When a run's rows carry the
trainer's step (``train/global_step``, which transformers' callback adds; ROLL's wrapper logs ``step``),
that value is each row's step and the key is not shown as a series; rows without it keep trackio's step.

Every read opens the file read-only and immutable, so nothing appears beside it; when a ``-wal`` or
``-journal`` file is beside it (a run still writing), the database and that file are copied into a
temporary folder and the copy is read, so committed rows in the WAL are seen.

A run still logging only gains rows, each with an id above all before it (``AUTOINCREMENT``): the kind
is an appending one, and a read goes on from the last row read (its id and a digest of it are the
resume point; a database rewritten is read from the start).
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pyarrow as pa

from rl_board.lazy import pc
from rl_board.metrics.kind import Appended, LoggedTable, MetricKind, RunSource
from rl_board.metrics.sqlite_read import (
    Runs,
    SqliteUnreadable,
    database_claims,
    database_files,
    files_state,
    note_current,
    open_sqlite_readonly,
    remembered_runs,
    row_digest,
    run_key,
    side_files,
    still_current,
    table_columns,
)
from rl_board.metrics.table import Problem, ReadResult, TableSet, iso_seconds, scalar_frame, scalar_value
from rl_board.sources.catalogue import remembered
from rl_board.sources.claims import Found
from rl_board.sources.roots import OUTSIDE, inside

if TYPE_CHECKING:  # frames are built by what reads; annotations only here
    import pandas as pd

SOURCE = "trackio"
STEP_KEYS = ("train/global_step", "__step")
"""Keys that carry the trainer's step in a row (``__step``: ROLL's ``step``, renamed by trackio)."""
_TRACKIO_CONFIG_KEYS = frozenset({"_Username", "_Created", "_Group"})
_NUMBER_STRINGS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


TRACE_SESSION = (
    "a Trackio trace session (one conversation: verl's or ROLL's generations); its project database "
    "holds the same traces, read there as the run's rollouts"
)
TRACE_COLUMNS = ["step", "key", "trace_index", "messages", "metadata"]


def _trace_session(path: Path) -> bool:
    """A session file Trackio writes for each trace (``traces/<project>/<run>/*.jsonl``): its first line
    says so."""
    try:
        if not path.is_file():
            return False
        with path.open("rb") as handle:
            first = handle.readline(64 << 10)
        head = json.loads(first)
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(head, dict) and head.get("type") == "session" and head.get("harness") == SOURCE


def is_trackio_schema(columns: dict[str, set[str]]) -> bool:
    """Trackio's tables: ``metrics`` with a JSON ``metrics`` column per row, and ``configs`` (MLflow's db
    also has a ``metrics`` table, of one value per row)."""
    metrics_ok = {"timestamp", "run_name", "step", "metrics"} <= columns.get("metrics", set())
    return metrics_ok and {"run_name", "config"} <= columns.get("configs", set())


class TrackioKind(MetricKind):
    """A Trackio project database; each run in it is one metric run (``part``: its run id)."""

    name = SOURCE
    label = "Trackio"
    appends = True
    keeps_rollouts = True

    def may_claim(self, path: Path) -> bool:
        return path.suffix.lower() == ".db"

    def claim_file(self, path: Path, allowed: list[Path] | None = None) -> list[Found]:
        if path.suffix.lower() == ".jsonl" and remembered(
            path, "trace session", lambda: _trace_session(path), False
        ):
            return [Found(path, skipped=TRACE_SESSION)]
        if not self.may_claim(path):
            return []
        claims = database_claims(path, allowed, SOURCE, _runs, "Trackio project database")
        if not any(c.part for c in claims):
            return claims
        heads = remembered_runs(path, side_files(path, allowed)[0], "trackio rollouts", _rollout_heads)
        return [replace(c, rollout_head=heads.get(c.part)) for c in claims]

    def rollout_rows(self, store: Path, part: str, allowed_roots: list[Path] | None) -> list[dict[str, Any]]:
        return rollout_rows(store, part, allowed_roots)

    def watched(self, source: RunSource) -> list[Path]:
        return database_files(source.path)

    def read_from(
        self, source: RunSource, resume: dict[str, Any] | None, allowed_roots: list[Path] | None
    ) -> Appended:
        """The run's rows after the last one read before (``resume``), or all of them.

        The resume point is the id of the last row read and a digest of that row: when the row is gone or
        differs (the database was replaced, the run renamed: trackio deletes and re-inserts its rows), the
        run is read from the start (``restarted``). SQLite gives whole committed rows only. A bad row's
        problem is committed with it; the file's standing problems (a side file refused, the config or
        the database unreadable) are in ``tail``: shown with every read, never piled up in the cache.
        """
        path, tail = source.path, TableSet()
        if allowed_roots is not None and not inside(path, allowed_roots):
            tail.problems.append(Problem(str(path), OUTSIDE))
            return Appended(TableSet().result(), tail.result(), {}, restarted=resume is not None)
        sides, refused = side_files(path, allowed_roots)
        tail.problems.extend(Problem(str(p), OUTSIDE) for p in refused)
        state, taken = files_state([path, *sides]), time.time_ns()
        memo = run_key(SOURCE, path, source.part, allowed_roots)
        known = still_current(memo, state, resume)
        if known is not None:
            extras, notes = known
            tail.problems.extend(notes)
            return Appended(TableSet().result(extras), tail.result(), dict(resume or {}))
        read = _read_rows(source, sides, _Resume.of(resume), tail)
        if read is None:  # the step key the run's rows carry changed: what was cached is read again
            tail = TableSet()
            tail.problems.extend(Problem(str(p), OUTSIDE) for p in refused)
            read = _read_rows(source, sides, None, tail)
            assert read is not None
        committed, at, restarted, ok = read
        if not ok and _Resume.of(resume) is not None:  # unreadable now: what was read stays, read on later
            return Appended(committed, tail.result(), dict(resume or {}))
        if ok:
            note_current(memo, state, taken, at, (committed.extras, tail.problems[len(refused) :]))
        return Appended(committed, tail.result(), at, restarted and resume is not None)


@dataclass
class _Resume:
    """Where a read of one run stopped: the last row's id and digest, and what the rows so far decided (the
    step keys they carry, the keys skipped) that a read of the new rows alone must know."""

    key: str
    last_id: int
    check: str | None
    step_keys: list[str]
    skipped: list[str]

    @classmethod
    def of(cls, raw: dict[str, Any] | None) -> _Resume | None:
        """The resume point of a cached read; None when there is none (or it is of another shape)."""
        if not isinstance(raw, dict):
            return None
        try:
            got = cls(raw["key"], raw["last_id"], raw["check"], list(raw["step_keys"]), list(raw["skipped"]))
        except (KeyError, TypeError):
            return None
        shapes = isinstance(got.key, str) and isinstance(got.last_id, int) and got.last_id >= 0
        return got if shapes and (got.check is None) == (got.last_id == 0) else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "last_id": self.last_id,
            "check": self.check,
            "step_keys": self.step_keys,
            "skipped": self.skipped,
        }

    def holds(self, conn: sqlite3.Connection, key: str, part: str) -> bool:
        """Whether the row this read stopped after is still there, as it was."""
        if key != self.key:
            return False
        if not self.last_id:
            return True
        row = conn.execute(
            f"SELECT id, step, metrics FROM metrics WHERE id = ? AND {key} = ?", (self.last_id, part)
        ).fetchone()
        return row is not None and row_digest(row) == self.check


def _read_rows(
    source: RunSource, sides: list[Path], prior: _Resume | None, tail: TableSet
) -> tuple[ReadResult, dict[str, Any], bool, bool] | None:
    """(committed, resume point, read from the start, the database could be read) of the run's rows after
    ``prior`` (all when None or no longer sound); None when the new rows decide another step key than the
    cached ones did (the run must be read again whole)."""
    path, part, tables = source.path, source.part, TableSet()
    try:
        with open_sqlite_readonly(path, sides) as conn:
            columns = table_columns(conn, ("metrics", "configs"))
            if not is_trackio_schema(columns):
                tail.problems.append(Problem(str(path), "not a Trackio database (no metrics/configs tables)"))
                return tables.result(), {}, True, True
            key = "run_id" if "run_id" in columns["metrics"] else "run_name"
            resumed = prior is not None and prior.holds(conn, key, part)
            after = prior.last_id if resumed and prior is not None else 0
            rows = _new_rows(conn, key, part, after)
            config = conn.execute(
                f"SELECT config FROM configs WHERE {key} = ? ORDER BY id DESC LIMIT 1", (part,)
            ).fetchone()
    except (SqliteUnreadable, sqlite3.Error) as err:
        tail.problems.append(Problem(str(path), str(err)))
        return tables.result(), {}, True, False
    before = prior if resumed and prior is not None else _Resume(key, 0, None, [], [])
    if not rows and not after and config is None:
        tail.problems.append(Problem(str(path), f"no run {part!r} in this database"))
    parsed = _Rows(path, rows, tables.problems)
    carried = parsed.present
    present = [k for k in STEP_KEYS if k in before.step_keys or k in carried]
    step_key = present[0] if present else None
    if before.step_keys and step_key != before.step_keys[0]:
        return None
    scalars = parsed.points(source.run, tables, step_key) if parsed.counts else None
    skipped = sorted(set(before.skipped) | parsed.skipped)
    extras: dict[str, Any] = {"step_source": _step_phrase(step_key), "skipped_tags": skipped}
    extras.update(_config_extras(config, path, tail.problems))
    result = tables.result(extras)
    if scalars is not None:  # none new: the empty table as it is (a live run's check finds none, often)
        result.scalars = scalars
    last = rows[-1] if rows else None
    at = _Resume(
        key,
        last[0] if last else before.last_id,
        row_digest((last[0], last[1], last[3])) if last else before.check,
        present,
        skipped,
    )
    return result, at.to_dict(), not resumed, True


def _step_phrase(step_key: str | None) -> str:
    """Which step the run's points are at, in words."""
    if step_key is None:
        return "trackio's step (step= as logged, else its own count of log calls)"
    shown = step_key.removeprefix("__")
    return f"{shown} (the trainer's step, logged in each row); rows without it: trackio's own step"


def _new_rows(conn: sqlite3.Connection, key: str, part: str, after: int) -> list[tuple[Any, ...]]:
    """(id, step, timestamp, metrics) of the run's rows after row ``after``, in the order logged."""
    return conn.execute(
        f"SELECT id, step, timestamp, metrics FROM metrics WHERE {key} = ? AND id > ? ORDER BY id",
        (part, after),
    ).fetchall()


def _runs(path: Path, sides: list[Path]) -> Runs:
    """(part, label) of each run in a Trackio db; "" when the file is another program's, a reason when it
    cannot be read."""
    project = path.stem
    try:
        with open_sqlite_readonly(path, sides) as conn:
            columns = table_columns(conn, ("metrics", "configs"))
            if not is_trackio_schema(columns):
                return ""
            key = "run_id" if "run_id" in columns["metrics"] else "run_name"
            found = conn.execute(
                f"SELECT {key}, run_name, MIN(id) FROM metrics GROUP BY {key} UNION ALL "
                f"SELECT {key}, run_name, NULL FROM configs"
            ).fetchall()
    except (SqliteUnreadable, sqlite3.Error) as err:
        return f"a SQLite file that cannot be read: {err}"
    names: dict[str, str] = {}
    for part, name, _ in sorted(found, key=lambda r: (r[2] is None, r[2] or 0)):
        names.setdefault(str(part), str(name))
    clashes = {n for n in names.values() if list(names.values()).count(n) > 1}
    return [
        (part, f"{project}/{name}" + (f" ({part[:8]})" if name in clashes else ""))
        for part, name in names.items()
    ]


class _Rows:
    """One run's metric rows parsed once: every key and value in row order, and each row's step and time."""

    def __init__(self, path: Path, rows: list[tuple[Any, ...]], problems: list[Problem]) -> None:
        self.keys: list[str] = []
        self.values: list[Any] = []
        self.counts: list[int] = []
        self.steps: list[int] = []
        self.skipped: set[str] = set()
        self.stamps: list[Any] = []
        self.dicts: list[dict[str, Any]] = []
        for row_id, step, stamp, blob in rows:
            try:
                data = loads(blob)
            except (TypeError, ValueError) as err:
                problems.append(Problem(str(path), f"metrics row {row_id}: not JSON ({err})", row_id))
                continue
            if not isinstance(data, dict) or not isinstance(step, int):
                problems.append(
                    Problem(str(path), f"metrics row {row_id}: no step or no metrics object", row_id)
                )
                continue
            self.keys.extend(data)
            self.values.extend(data.values())
            self.counts.append(len(data))
            self.steps.append(step)
            self.stamps.append(stamp)
            self.dicts.append(data)

    @property
    def present(self) -> set[str]:
        """Which of ``STEP_KEYS`` these rows carry."""
        return {k for k in STEP_KEYS if any(k in data for data in self.dicts)}

    def row_steps(self, step_key: str | None) -> np.ndarray:
        """Each row's step: the trainer's (``step_key``) where the row has it as a whole number, else
        trackio's."""
        steps = np.asarray(self.steps, dtype=np.int64)
        if step_key is not None:
            for i, data in enumerate(self.dicts):
                value = _number(data.get(step_key))
                if value is not None and math.isfinite(value) and value == int(value):
                    steps[i] = int(value)
        return steps

    def points(self, run: str, tables: TableSet, step_key: str | None) -> pd.DataFrame:
        """The scalar frame (histograms and texts go to ``tables``); ``step_key``: the key that carries the
        trainer's step in the run's rows (these and those read before), if one does."""
        counts = np.asarray(self.counts, dtype=np.int64)
        steps = np.repeat(self.row_steps(step_key), counts)
        walls = np.repeat(iso_seconds(self.stamps), counts)
        values, keep = _numbers(self.values)
        tags = pa.array(self.keys, pa.string())
        if step_key is not None:
            keep &= ~pc.equal(tags, step_key).to_numpy(zero_copy_only=False)
        if not keep.all():
            self._others(run, keep, steps, walls, tables)
            mask = pa.array(keep)
            tags, values, steps, walls = tags.filter(mask), values[keep], steps[keep], walls[keep]
        tags = _logged_names(tags)
        return scalar_frame(run, SOURCE, tags, steps, values, walls)

    def _others(
        self, run: str, keep: np.ndarray, steps: np.ndarray, walls: np.ndarray, tables: TableSet
    ) -> None:
        """Histograms and text values among the points that are not numbers; the keys of other values
        (tables, media, nested objects) are named in ``skipped``; a null is no point."""
        for i in np.flatnonzero(~keep):
            value, tag = self.values[i], _logged_name(self.keys[i])
            if isinstance(value, str):
                tables.texts.add(
                    run=run, source=SOURCE, tag=tag, step=int(steps[i]), wall_time=float(walls[i]), text=value
                )
            elif isinstance(value, dict) and value.get("_type") == "trackio.histogram":
                _add_histogram(tables, run, tag, int(steps[i]), float(walls[i]), value)
            elif value is not None and self.keys[i] not in STEP_KEYS:
                self.skipped.add(tag)


def loads(blob: str | bytes) -> Any:
    """JSON text or bytes; orjson first (4x faster), the standard parser for bare ``NaN``/``Infinity``
    tokens (older writers)."""
    try:
        return orjson.loads(blob)
    except orjson.JSONDecodeError:
        return json.loads(blob)


def _numbers(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Values as floats and which of them are scalars (numbers, bools, trackio's NaN/inf strings); the
    plain numbers are converted in one go, only the others one by one."""
    count = len(values)
    if set(map(type, values)) <= {float, int}:
        return np.asarray(values, dtype=np.float64), np.ones(count, dtype=bool)
    types = np.fromiter(map(type, values), dtype=object, count=count)
    keep = np.isin(types, np.array([float, int], dtype=object))
    out = np.full(count, np.nan)
    out[keep] = np.fromiter(values, dtype=object, count=count)[keep].astype(np.float64)
    for i in np.flatnonzero(~keep):
        number = _number(values[i])
        if number is not None:
            out[i], keep[i] = number, True
    return out, keep


def _number(value: Any) -> float | None:
    if isinstance(value, str):
        return _NUMBER_STRINGS.get(value)
    return scalar_value(value)


def _logged_name(key: str) -> str:
    """The key as the trainer logged it (trackio stores a reserved or ``__``-prefixed key as ``__<key>``)."""
    return key[2:] if key.startswith("__") else key


def _logged_names(tags: pa.Array) -> pa.Array:
    encoded = tags.dictionary_encode()
    names = encoded.dictionary.to_pylist()
    if not any(n.startswith("__") for n in names):
        return tags
    return pa.DictionaryArray.from_arrays(encoded.indices, pa.array([_logged_name(n) for n in names]))


def _add_histogram(
    tables: TableSet, run: str, tag: str, step: int, wall: float, value: dict[str, Any]
) -> None:
    bins, counts = value.get("bins"), value.get("values")
    if isinstance(bins, list) and isinstance(counts, list) and len(bins) == len(counts) + 1:
        tables.histograms.add(
            run=run,
            source=SOURCE,
            tag=tag,
            step=step,
            wall_time=wall,
            left=bins[:-1],
            right=bins[1:],
            count=counts,
        )


def _config_extras(row: tuple[Any, ...] | None, path: Path, problems: list[Problem]) -> dict[str, Any]:
    """The run's config as indented JSON and flat hparams (trackio's own ``_Username``... left out)."""
    if row is None:
        return {}
    try:
        config = loads(row[0])
    except (TypeError, ValueError) as err:
        problems.append(Problem(str(path), f"unreadable run config ({err})"))
        return {}
    if not isinstance(config, dict):
        return {}
    own = {k: v for k, v in config.items() if k not in _TRACKIO_CONFIG_KEYS}
    return {"config_text": json.dumps(own, indent=2, ensure_ascii=False), "hparams": flat_hparams(own)}


def flat_hparams(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config as ``a.b`` keys; lists and other non-scalars as JSON text."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat_hparams(value, f"{name}."))
        elif value is None or isinstance(value, (str, int, float, bool)):
            out[name] = value
        else:
            out[name] = json.dumps(value, ensure_ascii=False)
    return out


def logged_tables(db: Path, part: str, allowed_roots: list[Path] | None = None) -> list[LoggedTable]:
    """The tables one run logged: ``trackio.Table`` values (TRL's ``completions``) and its traces.

    A table's step is the trainer's step of its row when the run logs one (``train/global_step``), else
    the table's own ``step`` column when all its rows agree (TRL's), else trackio's step. Traces (verl's
    and ROLL's ``trackio.Trace``) come as one table per key and step, columns ``step, key, trace_index,
    messages, metadata`` (messages: ``[{role, content}]``). A table logged twice alike at a step is one.
    """
    inline, traces = _tables_of(db, part, allowed_roots)
    return _unique(inline + traces)


def rollout_rows(db: Path, part: str, allowed_roots: list[Path] | None = None) -> list[dict[str, Any]]:
    """One run's tables and traces as rollout rows, the samples of the run read as a rollout run.

    A table's rows are as logged (TRL's completions read as TRL's own Parquet does), with the table's
    step where a row has none. A trace is one sample in rl-board's own shape: its messages up to the first
    assistant message are the prompt, the rest the response; a numeric ``score`` or ``reward`` in its
    metadata is the reward, and the metadata's other plain values are columns.
    """
    inline, traces = _tables_of(db, part, allowed_roots)
    rows: list[dict[str, Any]] = []
    for table in _unique(inline):
        for values in table.rows:
            row = dict(zip(table.columns, values, strict=True))
            if table.step is not None:
                row.setdefault("step", table.step)
            rows.append(row)
    for table in _unique(traces):
        rows.extend(_trace_sample(values) for values in table.rows)
    return rows


_TRACE_REWARDS = ("score", "reward")
_NATIVE_NAMES = frozenset({"step", "prompt", "response", "reward", "messages", "group", "sample"})


def _trace_sample(values: list[Any]) -> dict[str, Any]:
    step, key, index, messages, metadata = values
    row: dict[str, Any] = {"step": step, "trace_key": key, "trace_index": index}
    if isinstance(messages, list) and all(isinstance(m, dict) for m in messages):
        first = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
        row["prompt"], row["response"] = messages[:first] or None, messages[first:] or None
    else:
        row["response"] = None if messages is None else str(messages)
    meta = metadata if isinstance(metadata, dict) else {}
    reward = next((meta[k] for k in _TRACE_REWARDS if _is_number(meta.get(k))), None)
    row["reward"] = reward
    for name, value in meta.items():
        if name not in _TRACE_REWARDS and name not in _NATIVE_NAMES and _is_plain(value):
            row.setdefault(name, value)
    return row


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_plain(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _rollout_heads(path: Path, sides: list[Path]) -> dict[str, dict[str, Any]]:
    """part -> first rollout row of each run that keeps tables or traces (``Found.rollout_head``)."""
    try:
        with open_sqlite_readonly(path, sides) as conn:
            columns = table_columns(conn, ("metrics", "configs", "traces"))
            if not is_trackio_schema(columns):
                return {}
            key = "run_id" if "run_id" in columns["metrics"] else "run_name"
            parts = [
                str(r[0])
                for r in conn.execute(
                    f"SELECT DISTINCT {key} FROM metrics WHERE CAST(metrics AS TEXT) LIKE '%trackio.table%'"
                )
            ]
            if key in columns.get("traces", set()):
                parts += [str(r[0]) for r in conn.execute(f"SELECT DISTINCT {key} FROM traces")]
    except (SqliteUnreadable, sqlite3.Error):
        return {}
    heads = {}
    for part in dict.fromkeys(parts):
        rows = rollout_rows(path, part)
        if rows:
            heads[part] = rows[0]
    return heads


def _tables_of(
    db: Path, part: str, allowed_roots: list[Path] | None
) -> tuple[list[LoggedTable], list[LoggedTable]]:
    """(inline tables, trace tables) of one run."""
    if allowed_roots is not None and not inside(db, allowed_roots):
        return [], []
    sides, _ = side_files(db, allowed_roots)
    try:
        with open_sqlite_readonly(db, sides) as conn:
            columns = table_columns(conn, ("metrics", "configs", "traces"))
            if not is_trackio_schema(columns):
                return [], []
            key = "run_id" if "run_id" in columns["metrics"] else "run_name"
            rows = conn.execute(
                f"SELECT id, step, metrics FROM metrics WHERE {key} = ? AND "
                "CAST(metrics AS TEXT) LIKE '%trackio.table%' ORDER BY id",
                (part,),
            ).fetchall()
            traces = (
                conn.execute(
                    f"SELECT step, key, trace_index, messages, metadata, timestamp FROM traces "
                    f"WHERE {key} = ? ORDER BY step, timestamp, trace_index",
                    (part,),
                ).fetchall()
                if key in columns.get("traces", set())
                else []
            )
            declared = _declares_step(conn, key, part)
    except (SqliteUnreadable, sqlite3.Error):
        return [], []
    return _inline_tables(db, rows, declared), _trace_tables(db, traces)


def _declares_step(conn: sqlite3.Connection, key: str, part: str) -> str | None:
    for name in STEP_KEYS:
        if conn.execute(
            f"SELECT 1 FROM metrics WHERE {key} = ? AND instr(CAST(metrics AS TEXT), ?) LIMIT 1",
            (part, json.dumps(name)),
        ).fetchone():
            return name
    return None


def _inline_tables(db: Path, rows: list[tuple[Any, ...]], declared: str | None) -> list[LoggedTable]:
    out = []
    for row_id, step, blob in rows:
        try:
            data = loads(blob)
        except (TypeError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        own = _number(data.get(declared)) if declared else None
        for name, value in data.items():
            if not (isinstance(value, dict) and value.get("_type") == "trackio.table"):
                continue
            records = [r for r in value.get("_value") or [] if isinstance(r, dict)]
            columns = list(dict.fromkeys(c for r in records for c in r))
            table_step = (
                int(own) if own is not None and math.isfinite(own) else _table_step(records, declared, step)
            )
            out.append(
                LoggedTable(
                    _logged_name(name),
                    table_step,
                    columns,
                    [[_cell(r.get(c)) for c in columns] for r in records],
                    f"{db}: metrics row {row_id}",
                )
            )
    return out


def _cell(value: Any) -> Any:
    """A table cell as logged: trackio writes a NaN or infinity inside a table as the string "NaN",
    "Infinity" or "-Infinity" (and reads it back so itself); a number was logged there."""
    return _NUMBER_STRINGS[value] if isinstance(value, str) and value in _NUMBER_STRINGS else value


def _table_step(records: list[dict[str, Any]], declared: str | None, step: int) -> int | None:
    """The table's own step column when all rows agree, else trackio's step (when the run gives steps)."""
    steps = {r.get("step") for r in records}
    if len(steps) == 1 and isinstance(own := next(iter(steps)), int) and not isinstance(own, bool):
        return own
    return None if declared else step


def _trace_tables(db: Path, traces: list[tuple[Any, ...]]) -> list[LoggedTable]:
    groups: dict[tuple[int, str], list[list[Any]]] = {}
    for step, key, index, messages, metadata, _ in traces:
        row = [step, key, index, _json_or_text(messages), _json_or_text(metadata)]
        groups.setdefault((step, key), []).append(row)
    columns = ["step", "key", "trace_index", "messages", "metadata"]
    return [LoggedTable(key, step, columns, rows, f"{db}: traces") for (step, key), rows in groups.items()]


def _json_or_text(blob: Any) -> Any:
    try:
        return loads(blob)
    except (TypeError, ValueError):
        return blob


def _unique(tables: list[LoggedTable]) -> list[LoggedTable]:
    seen: set[tuple[str, int | None, str]] = set()
    out = []
    for table in tables:
        sign = (table.key, table.step, json.dumps([table.columns, table.rows], default=str, sort_keys=True))
        if sign not in seen:
            seen.add(sign)
            out.append(table)
    return out
