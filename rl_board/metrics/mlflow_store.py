"""MLflow's local stores, read without mlflow: the SQLite backend (``mlflow.db``) and the ``mlruns/`` folder.

SQLite (the default since MLflow 3.7; verl's default name is ``mlruns.db``, so files are told by their
tables, not their names): ``experiments(experiment_id, name, ...)``, ``runs(run_uuid, name,
experiment_id, status, lifecycle_stage, artifact_uri, ...)``, ``metrics(key, value, timestamp, run_uuid,
step, is_nan)`` (one row per point; timestamp in ms; NaN stored as value 0 with is_nan 1, +-inf as
+-1.7976931348623157e308, given back here as +-inf), ``params(key, value, run_uuid)``, ``tags``.
MLflow opens it in rollback-journal mode; it is read like Trackio's db (immutable, or a copy when a
``-wal``/``-journal`` is beside it).

File store (``MLFLOW_ALLOW_FILE_STORE=true`` in 3.17): ``mlruns/<experiment id>/meta.yaml`` (``name``),
``mlruns/<experiment id>/<run id>/meta.yaml`` (``run_id``, ``run_name``, ``lifecycle_stage``,
``artifact_uri``), ``params/<key>``, ``tags/<key>``, ``metrics/<key>`` (a key ``a/b`` is the file
``metrics/a/b``) with lines ``<timestamp ms> <value> <step>`` (``nan``, ``inf``, ``-inf`` as Python
prints them; 2 fields in old files: step 0; 5 with a dataset name and digest).

A run still logging only gains rows (SQLite) or lines (files): the kind is an appending one, read on from
the last row's rowid or each metric file's last complete line (``MlflowKind.read_from``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from rl_board.metrics.cache import prefix_digest
from rl_board.metrics.kind import Appended, LoggedTable, MetricKind, RunSource
from rl_board.metrics.sqlite_read import (
    Runs,
    SqliteUnreadable,
    database_claims,
    database_files,
    files_state,
    note_current,
    open_sqlite_readonly,
    row_digest,
    run_key,
    side_files,
    still_current,
    table_columns,
)
from rl_board.metrics.table import Problem, TableSet, scalar_frame
from rl_board.sources.claims import Found
from rl_board.sources.roots import OUTSIDE, inside

if TYPE_CHECKING:  # frames are built by what reads; annotations only here
    import pandas as pd

SOURCE = "mlflow"
SQLITE_SUFFIXES = frozenset({".db", ".sqlite", ".sqlite3"})
FLOAT_MAX = 1.7976931348623157e308
"""What MLflow's SQL store writes for +-inf (SQL has no infinity)."""
STEP_SOURCE = "MLflow's step (step= as logged; 0 when the trainer gave none)"
GENERATIONS = re.compile(r"^val_step(\d+)\.json$")
GENERATIONS_KEY = "val/generations"
"""verl logs its validation generations to MLflow as ``val_step<N>.json`` artifacts, to W&B under this key."""
_MLFLOW_TABLES = ("experiments", "runs", "metrics", "params", "tags")
_LINE_COLUMNS = ["timestamp", "value", "step"]
_CSV_READ = pcsv.ReadOptions(column_names=_LINE_COLUMNS, use_threads=False)
_CSV_CONVERT = pcsv.ConvertOptions(
    column_types={"timestamp": pa.int64(), "value": pa.float64(), "step": pa.int64()},
    null_values=[],
    strings_can_be_null=False,
)


class MlflowKind(MetricKind):
    """An MLflow SQLite store (one run per ``part``: the run's uuid) or one run folder of ``mlruns/``."""

    name = SOURCE
    label = "MLflow"
    appends = True

    def may_claim(self, path: Path) -> bool:
        return path.suffix.lower() in SQLITE_SUFFIXES

    def claim_folder(
        self, folder: Path, dirs: list[str], files: list[str], allowed: list[Path] | None = None
    ) -> list[Found]:
        if "meta.yaml" not in files or "metrics" not in dirs:
            return []
        meta_path = folder / "meta.yaml"
        if allowed is not None and not inside(meta_path, allowed):
            return []
        meta = read_meta(meta_path)
        run_id = meta.get("run_id") or meta.get("run_uuid")
        if not run_id:  # a logged model's folder (models/<id>/) has meta.yaml and metrics/ too
            return []
        exp = (
            read_meta(folder.parent / "meta.yaml") if _readable(folder.parent / "meta.yaml", allowed) else {}
        )
        name = meta.get("run_name") or _tag(folder, "mlflow.runName", allowed) or run_id
        label = f"{exp.get('name') or folder.parent.name}/{name}" + _deleted(meta.get("lifecycle_stage"))
        return [
            Found(
                folder,
                (meta_path, *_metric_files(folder, allowed)),
                "MLflow run folder (mlruns file store)",
                label=label,
                whole=True,
            )
        ]

    def claim_file(self, path: Path, allowed: list[Path] | None = None) -> list[Found]:
        if not self.may_claim(path):
            return []
        return database_claims(path, allowed, SOURCE, _sqlite_runs, "MLflow tracking database")

    def watched(self, source: RunSource) -> list[Path]:
        if source.path.is_dir():  # new metric files appear as the run logs new keys
            files = _metric_files(source.path, None)
            return [source.path / "meta.yaml", *(f for f in files if not f.is_symlink())]
        return database_files(source.path)

    def read_from(
        self, source: RunSource, resume: dict[str, Any] | None, allowed_roots: list[Path] | None
    ) -> Appended:
        """The run's points after those read before (``resume``), or all of them: a run of the SQLite
        store from the row after the last one read (``read_sqlite_from``), a run folder from where each
        metric file's last complete line ended (``read_folder_from``)."""
        if allowed_roots is not None and not inside(source.path, allowed_roots):
            tail = TableSet()
            tail.problems.append(Problem(str(source.path), OUTSIDE))
            return Appended(TableSet().result(), tail.result(), {}, restarted=resume is not None)
        if source.path.is_dir():
            return read_folder_from(source.path, source.run, resume, allowed_roots)
        return read_sqlite_from(source.path, source.part, source.run, resume, allowed_roots)


def _metric_files(folder: Path, allowed: list[Path] | None) -> list[Path]:
    return sorted(path for path, _ in _walk_files(folder / "metrics", allowed, []))


def _is_mlflow(columns: dict[str, set[str]]) -> bool:
    """MLflow's tables (Trackio's db has a ``metrics`` table too, of one JSON object per row)."""
    return (
        {"key", "value", "run_uuid"} <= columns.get("metrics", set())
        and {"run_uuid", "experiment_id"} <= columns.get("runs", set())
        and {"experiment_id", "name"} <= columns.get("experiments", set())
    )


def _sqlite_runs(path: Path, sides: list[Path]) -> Runs:
    """(run uuid, ``<experiment>/<run name>``) of every run, oldest first; "" for another program's
    SQLite file, a reason for one that cannot be read."""
    try:
        with open_sqlite_readonly(path, sides) as conn:
            columns = table_columns(conn, _MLFLOW_TABLES)
            if not _is_mlflow(columns):
                return ""
            runs = columns["runs"]
            name = "r.name" if "name" in runs else "NULL"
            stage = "r.lifecycle_stage" if "lifecycle_stage" in runs else "NULL"
            order = "r.start_time" if "start_time" in runs else "r.rowid"
            tag = "(SELECT value FROM tags t WHERE t.run_uuid = r.run_uuid AND t.key = 'mlflow.runName')"
            tag = tag if "tags" in columns else "NULL"
            rows = conn.execute(
                f"SELECT r.run_uuid, {name}, {stage}, e.name, {tag} FROM runs r "
                f"LEFT JOIN experiments e ON e.experiment_id = r.experiment_id ORDER BY {order}"
            ).fetchall()
    except (SqliteUnreadable, sqlite3.Error) as err:
        return f"a SQLite file that cannot be read: {err}"
    return [
        (uuid, f"{exp or 'experiment'}/{run_name or tag_name or uuid}{_deleted(stage_)}")
        for uuid, run_name, stage_, exp, tag_name in rows
    ]


def _deleted(stage: str | None) -> str:
    return " (deleted)" if stage == "deleted" else ""


def read_sqlite_from(
    db: Path, run_uuid: str, run: str, resume: dict[str, Any] | None, allowed_roots: list[Path] | None = None
) -> Appended:
    """One run of an MLflow SQLite store, from the row after ``resume["last_rowid"]`` on (its points in one
    query, turned into columns without a Python step per point beyond fetching the rows).

    The ``metrics`` table has no id of its own but is a rowid table (MLflow 3.17's schema: a composite
    primary key, not ``WITHOUT ROWID``); MLflow only inserts into it, so a new point gets a rowid above
    every committed one. The resume point is the last row's rowid and a digest of that row: when it is
    gone or differs (the database was replaced or vacuumed), the run is read from the start
    (``restarted``). Params are read again each time (a run may log more); the file's standing problems
    are in ``tail``.
    """
    tables, tail = TableSet(), TableSet()
    sides, refused = side_files(db, allowed_roots)
    tail.problems.extend(Problem(str(p), OUTSIDE) for p in refused)
    state, taken = files_state([db, *sides]), time.time_ns()
    memo = run_key(SOURCE, db, run_uuid, allowed_roots)
    known = still_current(memo, state, resume)
    if known is not None:
        extras, notes = known
        tail.problems.extend(notes)
        return Appended(tables.result(extras), tail.result(), dict(resume or {}))
    prior = _rowid_resume(resume)
    try:
        with open_sqlite_readonly(db, sides) as conn:
            columns = table_columns(conn, _MLFLOW_TABLES)
            if not _is_mlflow(columns):
                tail.problems.append(Problem(str(db), "not an MLflow tracking database"))
                note_current(memo, state, taken, {}, ({}, tail.problems[len(refused) :]))
                return Appended(tables.result(), tail.result(), {}, restarted=resume is not None)
            resumed = prior is not None and _row_check(conn, prior[0], run_uuid) == prior[1]
            after = prior[0] if resumed and prior is not None else 0
            rows, last = _metric_rows(conn, columns["metrics"], run_uuid, after)
            check = _row_check(conn, last, run_uuid) if last else None
            params = (
                conn.execute(
                    "SELECT key, value FROM params WHERE run_uuid = ? ORDER BY key", (run_uuid,)
                ).fetchall()
                if "params" in columns
                else []
            )
    except (SqliteUnreadable, sqlite3.Error) as err:
        tail.problems.append(Problem(str(db), str(err)))
        if prior is not None:  # what was read before stays, and is read on next time
            return Appended(tables.result(), tail.result(), dict(resume or {}))
        return Appended(tables.result(), tail.result(), {}, restarted=resume is not None)
    if last:
        at: dict[str, Any] = {"last_rowid": last, "check": check}
    else:  # nothing new: the same resume point, or none when the run has no point yet
        at = {"last_rowid": prior[0], "check": prior[1]} if resumed and prior is not None else {}
    extras = _param_extras(dict(params))
    result = tables.result(extras)
    if rows:  # none new: the empty table as it is (a live run's check finds none, often)
        result.scalars = _scalars(rows, run, db, result.problems)
    note_current(memo, state, taken, at, (extras, tail.problems[len(refused) :]))
    return Appended(result, tail.result(), at, restarted=not resumed and resume is not None)


def _scalars(rows: list[tuple[Any, ...]], run: str, db: Path, problems: list[Problem]) -> pd.DataFrame:
    """The scalar table of (key, step, value or NULL for NaN, timestamp ms) rows; +-``FLOAT_MAX`` as +-inf."""
    points = _columns(rows, db, problems)
    value = points.field("value").fill_null(math.nan).to_numpy(zero_copy_only=False)  # NULL: a NaN point
    value = np.where(np.abs(value) == FLOAT_MAX, np.copysign(math.inf, value), value)
    walls = (
        points.field("timestamp").cast(pa.float64()).fill_null(math.nan).to_numpy(zero_copy_only=False) / 1000
    )
    steps = points.field("step").to_numpy(zero_copy_only=False)
    return scalar_frame(run, SOURCE, points.field("key"), steps, value, walls)


def _rowid_resume(resume: dict[str, Any] | None) -> tuple[int, str] | None:
    """(last rowid, its row's digest) of a cached read of the SQLite store; None when there is none."""
    if not isinstance(resume, dict):
        return None
    last, check = resume.get("last_rowid"), resume.get("check")
    return (last, check) if isinstance(last, int) and last > 0 and isinstance(check, str) else None


def _row_check(conn: sqlite3.Connection, rowid: int, run_uuid: str) -> str | None:
    """A digest of the run's row ``rowid`` as stored (every column); None when there is no such row."""
    row = conn.execute("SELECT * FROM metrics WHERE rowid = ? AND run_uuid = ?", (rowid, run_uuid)).fetchone()
    return None if row is None else row_digest((rowid, *row))


_ROW = pa.struct(
    [("key", pa.string()), ("step", pa.int64()), ("value", pa.float64()), ("timestamp", pa.int64())]
)


def _columns(rows: list[tuple[Any, ...]], db: Path, problems: list[Problem]) -> pa.StructArray:
    """The rows as Arrow columns, converted in C (5x faster than transposing the tuples in Python); rows
    of other types than MLflow writes (a hand-edited db) are left out and counted as a problem."""
    try:
        return pa.array(rows, type=_ROW)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        good = [
            r
            for r in rows
            if isinstance(r[0], str)
            and isinstance(r[1], int)
            and _number_or_none(r[2])
            and (r[3] is None or isinstance(r[3], int))
        ]
        problems.append(Problem(str(db), f"{len(rows) - len(good)} metric rows of unexpected types left out"))
        return pa.array(good, type=_ROW)


def _number_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _metric_rows(
    conn: sqlite3.Connection, columns: set[str], run_uuid: str, after: int = 0
) -> tuple[list[tuple[Any, ...]], int | None]:
    """(key, step, value or NULL for NaN, timestamp ms) of one run's rows after rowid ``after``, and the
    last one's rowid (None: no such row): read in rowid order over the span of rows they occupy (a
    sequential scan; the run_uuid index, which finds the span's ends, would fetch each row on its own)."""
    step = "step" if "step" in columns else "0"
    value = "CASE WHEN is_nan THEN NULL ELSE value END" if "is_nan" in columns else "value"
    stamp = "timestamp" if "timestamp" in columns else "NULL"
    first = conn.execute(
        "SELECT rowid FROM metrics WHERE run_uuid = ? AND rowid > ? ORDER BY rowid LIMIT 1", (run_uuid, after)
    ).fetchone()
    if first is None:
        return [], None
    last = conn.execute(
        "SELECT rowid FROM metrics WHERE run_uuid = ? ORDER BY rowid DESC LIMIT 1", (run_uuid,)
    ).fetchone()
    rows = conn.execute(
        f"SELECT key, {step}, {value}, {stamp} FROM metrics WHERE rowid BETWEEN ? AND ? AND +run_uuid = ?",
        (first[0], last[0], run_uuid),
    ).fetchall()
    return rows, last[0]


def _param_extras(params: dict[str, Any]) -> dict[str, Any]:
    extras: dict[str, Any] = {"step_source": STEP_SOURCE}
    if params:
        extras["hparams"] = params
        extras["config_text"] = json.dumps(params, indent=2, ensure_ascii=False)
    return extras


def read_folder_from(
    folder: Path, run: str, resume: dict[str, Any] | None, allowed_roots: list[Path] | None = None
) -> Appended:
    """One run folder of the file store: every metric file under ``metrics/`` from where the last read
    stopped, and ``params/`` (read again each time: a run may log more).

    MLflow only appends whole lines to a metric file. ``resume["files"]`` keeps, per metric key, the byte
    offset after the last complete line read, how many lines that was (bad lines are named by number) and
    a digest of the bytes before the offset; when a file shrank, changed before its offset or is gone,
    the run is read from the start (``restarted``). A last line without its newline is one still being
    written: it is not read (half a number is no point) and is read whole next time. Links refused and
    unreadable files are problems of ``tail``.
    """
    tables, tail = TableSet(), TableSet()
    found = list(_walk_files(folder / "metrics", allowed_roots, tail.problems))
    prior = _file_offsets(resume)
    restarted = resume is not None and (prior is None or not _offsets_hold(found, prior))
    if restarted or prior is None:
        prior = {}
    tags: list[pa.Array] = []
    steps, values, walls = [], [], []
    offsets: dict[str, list[Any]] = {}
    for path, key in found:
        start, lines, digest = prior.get(key, (0, 0, ""))
        got = _metric_chunk(path, start, lines, tables.problems, tail.problems)
        if got is None:
            if key in prior:
                offsets[key] = [start, lines, digest]
            continue
        (stamp, value, step), size, count, moved_digest = got
        offsets[key] = [start + size, lines + count, moved_digest or digest]
        if not len(value):
            continue
        tags.append(pa.DictionaryArray.from_arrays(pa.array(np.zeros(len(value), np.int32)), pa.array([key])))
        steps.append(step)
        values.append(value)
        walls.append(stamp / 1000.0)
    params = {
        key: _text(path, tail.problems)
        for path, key in _walk_files(folder / "params", allowed_roots, tail.problems)
    }
    result = tables.result(_param_extras({k: v for k, v in sorted(params.items()) if v is not None}))
    if values:
        tag = pa.chunked_array([t.cast(pa.string()) for t in tags]).combine_chunks()
        result.scalars = scalar_frame(
            run, SOURCE, tag, np.concatenate(steps), np.concatenate(values), np.concatenate(walls)
        )
    return Appended(result, tail.result(), {"files": offsets}, restarted=restarted)


def _file_offsets(resume: dict[str, Any] | None) -> dict[str, tuple[int, int, str]] | None:
    """Per metric key: (byte offset, lines, digest) where a cached read of a run folder stopped."""
    files = resume.get("files") if isinstance(resume, dict) else None
    if not isinstance(files, dict):
        return None
    out = {}
    for key, got in files.items():
        if not (
            isinstance(got, list) and len(got) == 3 and isinstance(got[0], int) and isinstance(got[1], int)
        ):
            return None
        out[key] = (got[0], got[1], str(got[2]))
    return out


def _offsets_hold(found: list[tuple[Path, str]], prior: dict[str, tuple[int, int, str]]) -> bool:
    """Whether every file read before is still there, at least as long, with the same bytes before where
    the read stopped (the last 4 KiB of them, as ``cache.prefix_digest`` hashes them)."""
    paths = {key: path for path, key in found}
    for key, (offset, _, digest) in prior.items():
        path = paths.get(key)
        if path is None:
            return False
        if not offset:
            continue
        try:
            if path.stat().st_size < offset or prefix_digest(path, offset) != digest:
                return False
        except OSError:
            return False
    return True


def _walk_files(top: Path, allowed: list[Path] | None, problems: list[Problem]) -> Iterator[tuple[Path, str]]:
    """(file, its path under ``top`` as a key) for every file below ``top``; links to folders are not
    followed, files linked from outside ``allowed`` are named, not opened."""
    if not top.is_dir():
        return
    for here, dirs, files in os.walk(top):
        base = Path(here)
        for name in [d for d in dirs if (base / d).is_symlink()]:
            problems.append(Problem(str(base / name), "a link to a folder; not followed"))
        for name in sorted(files):
            path = base / name
            if allowed is not None and not inside(path, allowed):
                problems.append(Problem(str(path), OUTSIDE))
                continue
            yield path, path.relative_to(top).as_posix()


def _text(path: Path, problems: list[Problem]) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        problems.append(Problem(str(path), f"unreadable: {err}"))
        return None


Series = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(timestamps ms, values, steps) of a metric file's lines."""


def _metric_chunk(
    path: Path, start: int, lines: int, problems: list[Problem], standing: list[Problem]
) -> tuple[Series, int, int, str] | None:
    """(timestamps ms, values, steps) of one metric file's complete lines from byte ``start`` on (``lines``
    lines before it), the bytes and lines they take, and a digest of the bytes before their end ("" when
    they take none); None when the file cannot be read (a problem of ``standing``).

    Arrow's CSV reader when every line is ``ts value step``, else line by line (old 2-field lines,
    5-field dataset lines, bad lines named in ``problems`` by their number in the file)."""
    try:
        with path.open("rb") as handle:
            if start:
                handle.seek(start)
            data = handle.read()
    except OSError as err:
        standing.append(Problem(str(path), f"unreadable: {err}"))
        return None
    data = data[: data.rfind(b"\n") + 1]  # a last line without its newline is still being written
    if not data:
        return (_EMPTY, _EMPTY, _EMPTY.astype(np.int64)), 0, 0, ""
    if start and len(data) < _DIGEST_SPAN:
        digest = prefix_digest(path, start + len(data))
    else:
        digest = hashlib.sha256(data[-_DIGEST_SPAN:]).hexdigest()
    count = data.count(b"\n")
    odd: list[int] = []

    def skip_odd(row: object) -> str:  # noted; the lines are read one by one below
        odd.append(1)
        return "skip"

    parse = pcsv.ParseOptions(delimiter=" ", quote_char=False, invalid_row_handler=skip_odd)
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data), read_options=_CSV_READ, parse_options=parse, convert_options=_CSV_CONVERT
        )
    except pa.ArrowInvalid:
        odd.append(1)
    if odd:
        return _metric_lines(path, data, problems, lines), len(data), count, digest
    columns = (
        table.column("timestamp").to_numpy().astype(np.float64),
        table.column("value").to_numpy(),
        table.column("step").to_numpy(),
    )
    return columns, len(data), count, digest


_EMPTY = np.zeros(0, dtype=np.float64)
_DIGEST_SPAN = 4096
"""Bytes before a resume offset that ``cache.prefix_digest`` hashes."""


def _metric_lines(path: Path, data: bytes, problems: list[Problem], before: int = 0) -> Series:
    stamps: list[float] = []
    values: list[float] = []
    steps: list[int] = []
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=before + 1):
        parts = line.split()
        if not parts:
            continue
        try:
            if len(parts) not in (2, 3, 5):
                raise ValueError(f"{len(parts)} fields")
            stamp, value, step = int(parts[0]), float(parts[1]), int(parts[2]) if len(parts) > 2 else 0
        except ValueError as err:
            problems.append(Problem(str(path), f"not a metric line (timestamp value step): {err}", number))
            continue
        stamps.append(stamp)
        values.append(value)
        steps.append(step)
    return (
        np.array(stamps, dtype=np.float64),
        np.array(values, dtype=np.float64),
        np.array(steps, dtype=np.int64),
    )


def read_meta(path: Path) -> dict[str, str]:
    """The top-level ``key: value`` scalars of an MLflow ``meta.yaml`` (plain, 'single' or "double" quoted),
    parsed by hand: the few keys needed do not warrant a YAML parser."""
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return out
    for line in text.splitlines():
        if not line or line[0] in " \t#-" or ":" not in line:
            continue
        key, _, raw = line.partition(":")
        out[key.strip()] = _yaml_scalar(raw.strip())
    return out


def _yaml_scalar(raw: str) -> str:
    if raw.startswith("'") and raw.endswith("'") and len(raw) > 1:
        return raw[1:-1].replace("''", "'")
    if raw.startswith('"') and raw.endswith('"') and len(raw) > 1:
        try:
            return str(json.loads(raw))
        except ValueError:
            return raw[1:-1]
    if raw in ("null", "~"):
        return ""
    return raw.split(" #", 1)[0].strip()


def _readable(path: Path, allowed: list[Path] | None) -> bool:
    return allowed is None or inside(path, allowed)


def _tag(folder: Path, key: str, allowed: list[Path] | None) -> str:
    path = folder / "tags" / key
    if not _readable(path, allowed):
        return ""
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def logged_tables(path: Path, part: str = "", allowed_roots: list[Path] | None = None) -> list[LoggedTable]:
    """verl's validation generations of one run: ``val_step<N>.json`` artifacts (``[{input, output,
    score}]``, step N), as tables keyed ``val/generations``. ``path``: a run folder of ``mlruns/``, or a
    SQLite store with ``part`` the run's uuid, whose artifacts are found where the run's ``artifact_uri``
    says when that is a local path, else beside the database (``mlruns/`` or ``mlartifacts/``)."""
    out = []
    for folder in _artifact_folders(path, part, allowed_roots):
        try:
            files = sorted(folder.iterdir()) if folder.is_dir() else []
        except OSError:
            continue
        for file in files:
            match = GENERATIONS.match(file.name)
            if not match or (allowed_roots is not None and not inside(file, allowed_roots)):
                continue
            try:
                records = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            rows = [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []
            columns = list(dict.fromkeys(c for r in rows for c in r))
            out.append(
                LoggedTable(
                    GENERATIONS_KEY,
                    int(match.group(1)),
                    columns,
                    [[r.get(c) for c in columns] for r in rows],
                    str(file),
                )
            )
        if out:
            break
    return sorted(out, key=lambda t: t.step or 0)


def _artifact_folders(path: Path, part: str, allowed: list[Path] | None) -> list[Path]:
    if path.is_dir():
        uri = read_meta(path / "meta.yaml").get("artifact_uri", "")
        candidates = [path / "artifacts", *_local(uri)]
    else:
        uri, exp = _sqlite_artifact_uri(path, part, allowed)
        candidates = [
            *_local(uri),
            *(path.parent / top / exp / part / "artifacts" for top in ("mlruns", "mlartifacts")),
        ]
    return [c for c in candidates if allowed is None or inside(c, allowed)]


def _local(uri: str) -> list[Path]:
    """The local folder an artifact URI names (``file://`` or a plain path); none for a remote one."""
    if not uri:
        return []
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return [Path(unquote(parsed.path))]
    local = not parsed.scheme or len(parsed.scheme) == 1  # "C:" is a drive, not a scheme
    return [Path(uri)] if local else []


def _sqlite_artifact_uri(db: Path, part: str, allowed: list[Path] | None) -> tuple[str, str]:
    if allowed is not None and not inside(db, allowed):
        return "", ""
    try:
        with open_sqlite_readonly(db, side_files(db, allowed)[0]) as conn:
            row = conn.execute(
                "SELECT artifact_uri, experiment_id FROM runs WHERE run_uuid = ?", (part,)
            ).fetchone()
    except (SqliteUnreadable, sqlite3.Error):
        return "", ""
    return (str(row[0] or ""), str(row[1])) if row else ("", "")
