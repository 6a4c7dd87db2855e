"""SwanLab's local stores, read without swanlab: an offline run's log, and the local dashboard's database.

A run folder (``swanlab.init(mode="offline")``; local mode writes one too) is
``<log_dir>/run-<time>-<id>/`` holding ``run-<id>.swanlab``, the only copy of the metrics: a 7-byte
header (``:SWL``, uint16 0xE1D6, uint8 version 2: swanlab 0.8 to 0.10), then LevelDB's log framing, as
W&B's run log has it (read by ``leveldb_log``: 32 KiB blocks of CRC-checked chunks). Each record is a
protobuf ``swanlab.record.v1.Record`` whose ``scalar`` (13) holds ``key`` (1), ``step`` (2),
``timestamp`` (4) and ``value`` (5) -> ``number`` (1, a double; a logged 0.0 is an empty message).
swanlab writes it unflushed (the last record may be half on disk) and keeps only the first point of a
key at a step. The records are decoded here by hand, all at once with numpy (``protowire.walk``). The
config is ``files/config.yaml`` (``{key: {desc, sort, value}}``); the log only names it. (swanlab 0.10.3:
sdk/internal/core_python/store, proto/swanlab/record/v1, sdk/internal/core_python/metrics.)

The local dashboard (``mode="local"`` with swanboard) keeps ``<log_dir>/runs.swanlab``, SQLite in WAL
mode: ``experiment(id, run_id, name)`` and ``tag(experiment_id, name, folder, type)``; a tag's points
are JSON lines ``{"index": step, "data": value, "create_time": ISO}`` (NaN a bare ``NaN``) in
``<run_id>/logs/<folder>/<n>.log`` (swanlab/deprecated/local.py, swanboard's db). An experiment whose
folder also has a run log is read from the log (it grows by appending; the lines are rewritten in place,
keeping the last point of a step where the log keeps the first); one without (swanlab before 0.8) is
read from the lines.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import struct
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pyarrow as pa

from rl_board.metrics.kind import Appended, LoggedTable, MetricKind, RunSource
from rl_board.metrics.leveldb_log import BLOCK as BLOCK  # the framing's facts, named here too
from rl_board.metrics.leveldb_log import CHUNK as CHUNK
from rl_board.metrics.leveldb_log import Frames, LogFile, Scan
from rl_board.metrics.protowire import Layout, doubles, message_fields, slices, walk
from rl_board.metrics.sqlite_read import (
    SqliteUnreadable,
    is_sqlite_file,
    open_sqlite_readonly,
    side_files,
    table_columns,
)
from rl_board.metrics.table import (
    Problem,
    ReadResult,
    TableSet,
    iso_seconds,
    merge_results,
    scalar_frame,
    scalar_value,
)
from rl_board.sources.claims import Found
from rl_board.sources.roots import OUTSIDE, inside

SOURCE = "swanlab"
DASHBOARD_DB = "runs.swanlab"
HEADER = struct.Struct("<4sHB")
IDENT, MAGIC, VERSION = b":SWL", 0xE1D6, 2
SYSTEM_PREFIX = "__swanlab__."
"""Keys of swanlab's own hardware monitor (CPU, memory...), on a step counter of their own: not read."""
STEP_SOURCE = "the step= passed to swanlab.log (swanlab counts the calls itself when none was passed)"
MEDIA_TAG_TYPES = frozenset({"image", "audio", "text"})


class SwanlabKind(MetricKind):
    """A SwanLab run folder (read from its run log as it grows), or an experiment of the local dashboard's
    ``runs.swanlab`` that has no run log (``part``: its run folder's name)."""

    name = SOURCE
    label = "SwanLab"
    appends = True

    def claim_folder(
        self, folder: Path, dirs: list[str], files: list[str], allowed: list[Path] | None = None
    ) -> list[Found]:
        logs = sorted(name for name in files if is_run_log(name))
        if not logs and "logs" in dirs and (folder.parent / DASHBOARD_DB).is_file():
            return [Found(folder, quiet=True, whole=True)]  # an older local run: read through the dashboard
        if not logs:
            return []
        return [Found(folder, tuple(folder / name for name in logs), "SwanLab run log", whole=True)]

    def claim_file(self, path: Path, allowed: list[Path] | None = None) -> list[Found]:
        if path.name != DASHBOARD_DB:
            return []
        if not is_sqlite_file(path):
            return [Found(path, skipped="named like SwanLab's dashboard database, but not a SQLite file")]
        try:
            experiments = _experiments(path, side_files(path, allowed)[0])
        except SqliteUnreadable as err:
            return [Found(path, skipped=str(err))]
        found = [
            Found(
                path,
                (path,),
                "an experiment in SwanLab's local dashboard database",
                part=run_id,
                label=name or run_id,
            )
            for run_id, name in experiments
            if not _has_run_log(path.parent / run_id, allowed)
        ]
        return found or [Found(path, quiet=True)]  # each experiment is read from its run folder's log

    def may_claim(self, path: Path) -> bool:
        return path.name == DASHBOARD_DB or is_run_log(path.name)

    def watched(self, source: RunSource) -> list[Path]:
        if source.part:
            return [source.path, *side_files(source.path)[0]]
        return list(source.files) or sorted(p for p in source.path.glob("run-*.swanlab"))

    def read_from(
        self, source: RunSource, resume: dict[str, Any] | None, allowed_roots: list[Path] | None
    ) -> Appended:
        if source.part or source.path.name == DASHBOARD_DB:  # rewritten in place: read whole every time
            points = _read_dashboard(source, allowed_roots)
            facts, points.extras = points.extras, {}  # the reader keeps the facts of what it commits
            return Appended(TableSet().result(facts), points)
        return _read_run_log(source, resume, allowed_roots)


def is_run_log(name: str) -> bool:
    """A run log's name, ``run-<id>.swanlab`` (one per run folder; ``runs.swanlab`` is the dashboard's)."""
    return name.startswith("run-") and name.endswith(".swanlab")


def _has_run_log(folder: Path, allowed: list[Path] | None) -> bool:
    if allowed is not None and not inside(folder, allowed):
        return False
    try:
        return any(is_run_log(entry.name) for entry in folder.iterdir())
    except OSError:
        return False


# ---------------------------------------------------------------- the run log


def _read_run_log(source: RunSource, resume: dict[str, Any] | None, allowed: list[Path] | None) -> Appended:
    """The points after ``resume["offset"]`` (from the start when None); a record not wholly on disk yet
    is left for the next read. The config is read again only when its file changed (``resume["config"]``:
    its size and time), so a read of a log that did not grow stays quick."""
    tail = TableSet()
    logs = list(source.files) or sorted(source.path.glob("run-*.swanlab"))
    log = logs[0] if logs else source.path / "run-*.swanlab"
    if len(logs) > 1:  # swanlab sync refuses such a folder too
        tail.problems.append(Problem(str(source.path), f"several run logs here; only {log.name} is read"))
    if allowed is not None and not inside(log, allowed):
        tail.problems.append(Problem(str(log), OUTSIDE))
        return Appended(TableSet().result(), tail.result(), {"offset": 0})
    if not log.is_file():  # a pipe named like a log could block a read forever; a dangling link
        tail.problems.append(Problem(str(log), "missing, or not a regular file; not opened"))
        return Appended(TableSet().result(), tail.result(), {"offset": 0})
    committed, parts = TableSet(), list[ReadResult]()
    scan = Scan(int((resume or {}).get("offset", 0)), str(log), HEADER.size, _refused_header)
    try:
        with LogFile(log) as data:
            for frames in scan.batches(data):
                parts.append(_points(source.run, frames, committed.problems))
    except OSError as err:
        tail.problems.append(Problem(str(log), f"cannot read: {err}"))
        return Appended(TableSet().result(), tail.result(), {"offset": 0})
    if scan.refused:
        tail.problems.append(Problem(str(log), scan.refused))
    committed.problems.extend(scan.problems)
    tail.problems.extend(scan.tail)
    offset = scan.offset if scan.offset >= HEADER.size and not scan.refused else 0
    result = (merge_results(parts) if len(parts) > 1 else parts[0]) if parts else TableSet().result()
    result.problems = committed.problems
    stamp = _config_stamp(source.path, allowed)
    known = stamp is not None and stamp == (resume or {}).get("config")
    found: list[Problem] = []
    facts = {} if known else _config(source.path, allowed, found)  # else the reader keeps what it had
    tail.problems.extend(found)
    result.extras = {"step_source": STEP_SOURCE, **facts}
    ahead = {"config": stamp} if stamp is not None and not found and not scan.refused else {}
    return Appended(result, tail.result(), {"offset": offset, **ahead})


def _refused_header(head: bytes) -> str:
    """Why a run log's header is refused ("" when it is SwanLab's, version 2, or not all written yet)."""
    if len(head) < HEADER.size:
        return ""
    ident, magic, version = HEADER.unpack(head)
    if ident != IDENT or magic != MAGIC:
        return "not a SwanLab run log (its first bytes are not SwanLab's header)"
    if version > VERSION:
        return f"written by a newer SwanLab (run log version {version}; rl-board reads {VERSION}); not read"
    if version != VERSION:
        return f"written by an older SwanLab (run log version {version}; rl-board reads {VERSION}); not read"
    return ""


RECORD: Layout = ((1, 0), (2, 2), (13, 2), (14, 2))  # num, timestamp, scalar, media (of the oneof)
SCALAR: Layout = ((1, 2), (2, 0), (3, 0), (4, 2), (5, 2))  # key, step, type, timestamp, value
TIMESTAMP: Layout = ((1, 0), (2, 0))  # seconds, nanos
NUMBER: Layout = ((1, 1),)  # a double


def _points(run: str, frames: Frames, problems: list[Problem]) -> ReadResult:
    """The scalar points of the framed records, decoded column-wise; a record that does not parse is a
    Problem (one for all of them, naming the first)."""
    blob, starts, ends = frames.blob, frames.starts, frames.ends
    buf = np.frombuffer(blob, np.uint8)
    record = walk(buf, starts, ends, RECORD)
    scalar = np.flatnonzero(record.ok & (record.value[13] >= 0))
    fields = record.inner(buf, 13, SCALAR, scalar)
    stamp, number = fields.inner(buf, 4, TIMESTAMP), fields.inner(buf, 5, NUMBER)
    fine = fields.ok & stamp.ok & number.ok
    broken = np.concatenate([np.flatnonzero(~record.ok), scalar[~fine]])
    if broken.size:
        first = int(frames.offsets[broken].min())
        problems.append(
            Problem(
                frames.file,
                f"{broken.size} record(s) could not be decoded as SwanLab records "
                f"(the first at byte {first}); skipped",
            )
        )
    usable = fine & (fields.value[1] >= 0) & (fields.length[1] > 0)
    keep: np.ndarray | slice = slice(None) if usable.all() else usable
    values = doubles(buf, number.value[1][keep])
    walls = stamp.value[1][keep] + stamp.value[2][keep] * 1e-9
    missing = np.flatnonzero(walls == 0)
    if missing.size:  # no time of its own: the record's
        when = record.inner(buf, 2, TIMESTAMP, scalar[keep][missing])
        walls[missing] = np.where(when.value[1] > 0, when.value[1] + when.value[2] * 1e-9, np.nan)
    key_at = fields.value[1][keep]
    keys = slices(blob, key_at, key_at + fields.length[1][keep]).dictionary_encode()
    codes = keys.indices.to_numpy(zero_copy_only=False)
    texts = [name.decode("utf-8", "replace") for name in keys.dictionary.to_pylist()]
    system = [i for i, text in enumerate(texts) if text.startswith(SYSTEM_PREFIX)]
    shown = ~np.isin(codes, system) if system else slice(None)
    tags = pa.DictionaryArray.from_arrays(pa.array(codes[shown]), pa.array(texts, pa.string()))
    result = TableSet().result()
    steps = fields.value[2][keep][shown]
    result.scalars = scalar_frame(run, SOURCE, tags, steps, values[shown], walls[shown])
    return result


# ---------------------------------------------------------------- the config


def _config(folder: Path, allowed: list[Path] | None, problems: list[Problem]) -> dict[str, Any]:
    """``files/config.yaml`` as text, and flattened to hparams (``rollout.n``) in swanlab's key order."""
    path = folder / "files" / "config.yaml"
    if allowed is not None and not inside(path, allowed):
        problems.append(Problem(str(path), OUTSIDE))
        return {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    except OSError:
        text = None
    if text is None:
        return {}
    try:
        entries = _load_yaml(text)
    except ValueError as err:
        problems.append(Problem(str(path), f"not readable as YAML: {err}"))
        return {"config_text": text, "hparams": {}}
    hparams: dict[str, Any] = {}
    if isinstance(entries, dict):
        ordered = sorted(entries.items(), key=lambda kv: _sort_of(kv[1]))
        for key, entry in ordered:
            _flatten(
                str(key),
                entry.get("value") if isinstance(entry, dict) and "value" in entry else entry,
                hparams,
            )
    return {"config_text": text, "hparams": hparams}


def _config_stamp(folder: Path, allowed: list[Path] | None) -> list[int] | None:
    """``files/config.yaml``'s size and change time, or None when it is not there to read."""
    path = folder / "files" / "config.yaml"
    if allowed is not None and not inside(path, allowed):
        return None
    try:
        info = path.stat()
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


def _sort_of(entry: Any) -> float:
    sort = entry.get("sort") if isinstance(entry, dict) else None
    return float(sort) if isinstance(sort, (int, float)) and not isinstance(sort, bool) else math.inf


def _flatten(key: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for sub, inner in value.items():
            _flatten(f"{key}.{sub}", inner, out)
    elif isinstance(value, (bool, int, float, str)):
        out[key] = value
    else:
        out[key] = json.dumps(value, default=str)


def _load_yaml(text: str) -> Any:
    """PyYAML's safe load when it is installed (swanlab needs it; rl-board does not), else the plain
    subset swanlab writes: ``key:`` then ``  value: <scalar or block>``."""
    try:
        import yaml
    except ImportError:
        return _plain_config(text)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ValueError(str(err).splitlines()[0]) from err


_TOP_KEY = re.compile(r"^(?!\s)(?:'((?:[^']|'')*)'|\"((?:[^\"\\]|\\.)*)\"|([^:#]+)):\s*$")


def _plain_config(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    key: str | None = None
    block: list[str] | None = None
    for line in text.splitlines():
        top = _TOP_KEY.match(line)
        if top:
            key, block = next(g for g in top.groups() if g is not None).strip(), None
            out[key] = {"value": None}
        elif key is not None and line.startswith("  value:"):
            rest = line[len("  value:") :].strip()
            out[key] = {"value": _plain_scalar(rest) if rest else ""}
            block = [] if not rest else None
        elif key is not None and block is not None and line.startswith("    "):
            block.append(line[4:])
            out[key]["value"] = "\n".join(block)
        elif key is not None and line.startswith("  sort:"):
            out[key]["sort"] = _plain_scalar(line[len("  sort:") :].strip())
            block = None
    return out


def _plain_scalar(text: str) -> Any:
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1].replace("''", "'") if text[0] == "'" else json.loads(text)
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "~"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {".nan": math.nan, ".inf": math.inf, "-.inf": -math.inf}.get(lowered, text)


# ---------------------------------------------------------------- the local dashboard's database


def _experiments(db: Path, sides: list[Path]) -> list[tuple[str, str]]:
    """(run_id, name) of each experiment in a dashboard database; SqliteUnreadable when it is not one."""
    try:
        with open_sqlite_readonly(db, sides) as conn:
            if not _is_dashboard(table_columns(conn, ("experiment", "tag"))):
                raise SqliteUnreadable(
                    "a SQLite file named runs.swanlab without SwanLab's experiment and tag tables"
                )
            rows = conn.execute("SELECT run_id, name FROM experiment ORDER BY id").fetchall()
    except sqlite3.Error as err:
        raise SqliteUnreadable(f"cannot read this SQLite file: {err}") from err
    return [(str(run_id), str(name or "")) for run_id, name in rows if _plain_name(str(run_id))]


def _is_dashboard(columns: dict[str, set[str]]) -> bool:
    return {"id", "run_id", "name"} <= columns.get("experiment", set()) and {
        "experiment_id",
        "name",
        "type",
    } <= columns.get("tag", set())


def _plain_name(name: str) -> bool:
    """A folder name that stays in its folder (a database could name ``../..``)."""
    return (
        bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\x00" not in name
    )


def _read_dashboard(source: RunSource, allowed: list[Path] | None) -> ReadResult:
    """One experiment of a dashboard database, from its tags' JSON lines (its run folder has no log)."""
    tables = TableSet()
    db, run_id = source.path, source.part
    if allowed is not None and not inside(db, allowed):
        tables.problems.append(Problem(str(db), OUTSIDE))
        return tables.result()
    sides, refused = side_files(db, allowed)
    tables.problems.extend(Problem(str(p), OUTSIDE) for p in refused)
    try:
        with open_sqlite_readonly(db, sides) as conn:
            columns = table_columns(conn, ("experiment", "tag"))
            if not _is_dashboard(columns):
                tables.problems.append(
                    Problem(str(db), "not SwanLab's dashboard database (no experiment and tag tables)")
                )
                return tables.result()
            folder = "tag.folder" if "folder" in columns["tag"] else "NULL"  # before swanboard 0.1.2b8: none
            tags = conn.execute(
                f"SELECT tag.name, {folder}, tag.type FROM tag JOIN experiment ON "
                "tag.experiment_id = experiment.id WHERE experiment.run_id = ? ORDER BY tag.id",
                (run_id,),
            ).fetchall()
    except (SqliteUnreadable, sqlite3.Error) as err:
        tables.problems.append(Problem(str(db), str(err)))
        return tables.result()
    if not _plain_name(run_id):
        tables.problems.append(
            Problem(str(db), f"the run folder {run_id!r} is not a plain folder name; not read")
        )
        return tables.result()
    run_dir = db.parent / run_id
    lines = _TagLines(source.run, tables, allowed)
    for name, tag_folder, kind in tags:
        tag_folder = str(tag_folder) if tag_folder else quote(str(name), safe="")  # as swanboard migrates
        if kind not in MEDIA_TAG_TYPES and _plain_name(tag_folder):
            lines.read(str(name), run_dir / "logs" / tag_folder)
    lines.finish()
    return tables.result({"step_source": STEP_SOURCE, **_config(run_dir, allowed, tables.problems)})


class _TagLines:
    """The scalar points of a tag's ``<n>.log`` files; a line that is not JSON is a Problem with its line
    number, a last line without its newline is not written yet."""

    def __init__(self, run: str, tables: TableSet, allowed: list[Path] | None) -> None:
        self.run, self.tables, self.allowed = run, tables, allowed
        self.tags: list[str] = []
        self.steps: list[int] = []
        self.values: list[float] = []
        self.times: list[Any] = []

    def read(self, tag: str, folder: Path) -> None:
        try:
            files = sorted(folder.glob("*.log"), key=lambda p: (len(p.stem), p.stem))
        except OSError:
            return
        for path in files:
            if self.allowed is not None and not inside(path, self.allowed):
                self.tables.problems.append(Problem(str(path), OUTSIDE))
                continue
            try:
                if not path.is_file():
                    raise OSError("not a regular file")
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as err:
                self.tables.problems.append(Problem(str(path), f"cannot read: {err}"))
                continue
            for row in self._rows(text[: text.rfind("\n") + 1], path):
                value = scalar_value(row.get("data")) if isinstance(row, dict) else None
                step = row.get("index") if value is not None else None
                if value is not None and isinstance(step, int) and not isinstance(step, bool):
                    self.tags.append(tag)
                    self.steps.append(step)
                    self.values.append(value)
                    self.times.append(row.get("create_time"))

    def _rows(self, text: str, path: Path) -> list[Any]:
        lines = text.splitlines()
        try:
            return json.loads("[" + ",".join(line for line in lines if line.strip()) + "]")
        except ValueError:
            pass
        rows = []
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    self.tables.problems.append(Problem(str(path), "not a JSON line", number))
        return rows

    def finish(self) -> None:
        walls = iso_seconds(self.times).tolist()
        self.tables.scalars.extend(
            len(self.values),
            run=self.run,
            source=SOURCE,
            tag=self.tags,
            step=self.steps,
            value=self.values,
            wall_time=walls,
        )


# ---------------------------------------------------------------- logged tables


def logged_tables(
    run_folder: Path, allowed_roots: list[Path] | None = None, problems: list[Problem] | None = None
) -> list[LoggedTable]:
    """The tables logged to a run as ``swanlab.echarts.Table`` (verl's ``val/generations``): each
    ``media/echarts/<step:03d>-<sha8>.json`` holding ``{"_swanLab": "table", "colDefs", "rowData"}``, named
    and stepped by the run log's media records (without a run log: every such file, stepped by its name).
    A table logged twice with the same content at one step is one file, so one table; a file swanlab
    wrote but then dropped (a second table for a key at one step) has no record, and is left out. NaN
    cells were written as null (swanlab dumps with ``ignore_nan``). This reads the whole run log."""
    problems = [] if problems is None else problems
    folder = Path(run_folder) / "media" / "echarts"
    try:
        files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    except OSError:
        files = []
    if not files:
        return []
    names = _media_names(Path(run_folder), allowed_roots, problems)
    out = []
    for path in files:
        if names is not None and path.name not in names:
            continue  # written, then dropped by swanlab (a second table for a key at one step)
        if allowed_roots is not None and not inside(path, allowed_roots):
            problems.append(Problem(str(path), OUTSIDE))
            continue
        try:
            if not path.is_file():
                raise OSError("not a regular file")
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            problems.append(Problem(str(path), f"not a readable JSON file: {err}"))
            continue
        if not isinstance(doc, dict) or doc.get("_swanLab") != "table":
            continue  # a chart, not a table
        columns = [str(c.get("field")) for c in doc.get("colDefs") or [] if isinstance(c, dict)]
        rows = [[row.get(c) for c in columns] for row in doc.get("rowData") or [] if isinstance(row, dict)]
        stem = path.name.split("-", 1)[0]
        key, step = (names or {}).get(path.name, ("", int(stem) if stem.isdigit() else None))
        out.append(LoggedTable(key or "echarts table", step, columns, rows, str(path)))
    return sorted(out, key=lambda t: (t.step is None, t.step or 0, t.key))


def _media_names(
    folder: Path, allowed: list[Path] | None, problems: list[Problem]
) -> dict[str, tuple[str, int]] | None:
    """Media file name -> (key, step), from the run log's media records (14: key 1, step 2, value 5 ->
    items 1 -> filename 1); None without a run log to read."""
    logs = sorted(folder.glob("run-*.swanlab"))
    if not logs or (allowed is not None and not inside(logs[0], allowed)) or not logs[0].is_file():
        return None
    names: dict[str, tuple[str, int]] = {}
    scan = Scan(0, str(logs[0]), HEADER.size, _refused_header)
    try:
        with LogFile(logs[0]) as data:
            for frames in scan.batches(data):
                blob = frames.blob
                record = walk(np.frombuffer(blob, np.uint8), frames.starts, frames.ends, RECORD)
                for at, length in zip(record.value[14].tolist(), record.length[14].tolist(), strict=True):
                    if at >= 0:
                        _media_name(bytes(blob[at : at + length]), names, frames.file, problems)
    except OSError as err:
        problems.append(Problem(str(logs[0]), f"cannot read: {err}"))
        return None
    return names


def _media_name(raw: bytes, names: dict[str, tuple[str, int]], where: str, problems: list[Problem]) -> None:
    try:
        media = message_fields(raw)
        key = media.get(1, [b""])[-1].decode("utf-8", "replace")
        step = media.get(2, [0])[-1]
        for item in message_fields(media.get(5, [b""])[-1]).get(1, []):
            filename = message_fields(item).get(1, [b""])[-1].decode("utf-8", "replace")
            names.setdefault(filename, (key, step))
    except (ValueError, AttributeError) as err:
        problems.append(Problem(where, f"a media record could not be decoded: {err}"))
