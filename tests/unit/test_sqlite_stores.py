"""Trackio's and MLflow's local stores, written by hand in their own schemas (no tracker library needed):
what is claimed, what is read, and that a read never writes beside the user's file, hangs or raises."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import struct
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rl_board.metrics import mlflow_store
from rl_board.metrics import trackio_db as trackio_module
from rl_board.metrics.kind import RunSource
from rl_board.metrics.mlflow_store import MlflowKind, logged_tables, read_meta
from rl_board.metrics.reader import load_metrics
from rl_board.metrics.sqlite_read import is_sqlite_file
from rl_board.metrics.table import TableSet
from rl_board.metrics.trackio_db import TrackioKind
from rl_board.metrics.trackio_db import logged_tables as trackio_tables
from rl_board.sources.roots import OUTSIDE

# trackio 0.43's tables (sqlite_storage.py), as far as a reader needs them
TRACKIO_SCHEMA = """
CREATE TABLE metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, timestamp TEXT NOT NULL,
    run_name TEXT NOT NULL, step INTEGER NOT NULL, metrics TEXT NOT NULL, log_id TEXT, space_id TEXT);
CREATE TABLE configs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, run_name TEXT NOT NULL,
    config TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE(run_id));
CREATE TABLE system_metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL,
    timestamp TEXT NOT NULL, run_name TEXT NOT NULL, metrics TEXT NOT NULL);
CREATE TABLE traces (id TEXT PRIMARY KEY, run_id TEXT NOT NULL, timestamp TEXT NOT NULL,
    run_name TEXT NOT NULL, step INTEGER NOT NULL, key TEXT NOT NULL, trace_index INTEGER,
    messages TEXT NOT NULL, metadata TEXT NOT NULL, search_text TEXT NOT NULL, log_id TEXT, space_id TEXT,
    spans TEXT NOT NULL DEFAULT '[]');
"""
# MLflow 3.17's tables (store/tracking/dbmodels/models.py), the columns a reader needs
MLFLOW_SCHEMA = """
CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY, name VARCHAR(256) NOT NULL,
    artifact_location VARCHAR(256), lifecycle_stage VARCHAR(32));
CREATE TABLE runs (run_uuid VARCHAR(32) PRIMARY KEY, name VARCHAR(250), status VARCHAR(9), start_time BIGINT,
    lifecycle_stage VARCHAR(20), artifact_uri VARCHAR(200), experiment_id INTEGER);
CREATE TABLE metrics (key VARCHAR(250) NOT NULL, value FLOAT NOT NULL, timestamp BIGINT NOT NULL,
    run_uuid VARCHAR(32) NOT NULL, step BIGINT DEFAULT '0' NOT NULL, is_nan BOOLEAN DEFAULT '0' NOT NULL,
    PRIMARY KEY (key, timestamp, step, run_uuid, value, is_nan));
CREATE INDEX index_metrics_run_uuid ON metrics (run_uuid);
CREATE TABLE params (key VARCHAR(250) NOT NULL, value VARCHAR(8000) NOT NULL, run_uuid VARCHAR(32) NOT NULL,
    PRIMARY KEY (key, run_uuid));
CREATE TABLE tags (key VARCHAR(250) NOT NULL, value VARCHAR(8000), run_uuid VARCHAR(32) NOT NULL,
    PRIMARY KEY (key, run_uuid));
"""
STAMP = "2026-01-02T03:04:05.500000+00:00"
STAMP_SECONDS = 1767323045.5


def trackio_db(
    path: Path,
    rows: list[tuple[int, object]],
    *,
    run_id: str = "r1",
    run: str = "run-a",
    config: dict | None = None,
    blob: bool = True,
) -> Path:
    """A Trackio project database with one run's ``(step, metrics)`` rows (dicts as trackio's JSON)."""
    conn = sqlite3.connect(path)
    conn.executescript(TRACKIO_SCHEMA)
    for step, metrics in rows:
        text = metrics if isinstance(metrics, str) else json.dumps(metrics)
        conn.execute(
            "INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES (?, ?, ?, ?, ?)",
            (run_id, STAMP, run, step, text.encode() if blob else text),
        )
    conn.execute(
        "INSERT INTO configs (run_id, run_name, config, created_at) VALUES (?, ?, ?, ?)",
        (run_id, run, json.dumps(config or {"lr": 0.1}), STAMP),
    )
    conn.commit()
    conn.close()
    return path


def mlflow_db(path: Path, points: list[tuple[str, int, float]], *, run_uuid: str = "u1") -> Path:
    """An MLflow SQLite store with one run's ``(key, step, value)`` points, NaN and inf stored as MLflow
    stores them."""
    conn = sqlite3.connect(path)
    conn.executescript(MLFLOW_SCHEMA)
    conn.execute("INSERT INTO experiments VALUES (1, 'exp', '/nowhere/1', 'active')")
    conn.execute(
        "INSERT INTO runs VALUES (?, 'run-a', 'FINISHED', 1, 'active', '/nowhere/1/u1/artifacts', 1)",
        (run_uuid,),
    )
    for i, (key, step, value) in enumerate(points):
        stored = (
            0.0 if math.isnan(value) else max(min(value, 1.7976931348623157e308), -1.7976931348623157e308)
        )
        conn.execute(
            "INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?)",
            (key, stored, 1767323045000 + i, run_uuid, step, int(math.isnan(value))),
        )
    conn.execute("INSERT INTO params VALUES ('lr', '0.1', ?)", (run_uuid,))
    conn.commit()
    conn.close()
    return path


def read(kind, path: Path, part: str = "", allowed: list[Path] | None = None):
    return kind.read(RunSource("r", kind.name, path, (path,), part), allowed)


def points(result) -> dict[tuple[str, int], float]:
    s = result.scalars
    return dict(zip(zip(s["tag"], s["step"], strict=True), s["value"], strict=True))


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- claims ---------------------------------------------------------------------------------------------


def test_each_kind_claims_its_own_db_and_not_the_other(tmp_path):
    tk = trackio_db(tmp_path / "proj.db", [(0, {"a": 1.0})])
    ml = mlflow_db(tmp_path / "mlflow.db", [("a", 0, 1.0)])
    (found,) = TrackioKind().claim_file(tk)
    assert (found.part, found.label, found.files) == ("r1", "proj/run-a", (tk,))
    (run,) = MlflowKind().claim_file(ml)
    assert (run.part, run.label) == ("u1", "exp/run-a")
    assert TrackioKind().claim_file(ml) == [] and MlflowKind().claim_file(tk) == []


def test_a_foreign_sqlite_file_is_not_claimed_and_reads_as_a_problem(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE users (id, name); CREATE TABLE metrics (id, name, value); "
        "INSERT INTO metrics VALUES (1, 'x', 2.0);"
    )
    conn.commit()
    conn.close()
    assert TrackioKind().claim_file(path) == [] and MlflowKind().claim_file(path) == []
    for kind in (TrackioKind(), MlflowKind()):
        result = read(kind, path, "1")
        assert result.scalars.empty and "not" in result.problems[0].reason


def test_a_corrupt_file_is_a_problem_never_an_exception(tmp_path):
    path = tmp_path / "broken.db"
    path.write_bytes(b"SQLite format 3\x00" + np.random.default_rng(0).bytes(8192))
    assert is_sqlite_file(path)
    for kind in (TrackioKind(), MlflowKind()):
        assert all(f.skipped and not f.part for f in kind.claim_file(path))
        result = read(kind, path, "r1")
        assert result.scalars.empty and result.problems and result.problems[0].file == str(path)
    assert listing(tmp_path) == ["broken.db"]


def test_only_sqlite_files_by_their_header_are_opened(tmp_path):
    (tmp_path / "notes.db").write_text("not a database")
    assert TrackioKind().claim_file(tmp_path / "notes.db") == []
    os.mkfifo(tmp_path / "pipe.db")  # opening a pipe for reading would wait forever
    start = time.monotonic()
    assert not is_sqlite_file(tmp_path / "pipe.db") and TrackioKind().claim_file(tmp_path / "pipe.db") == []
    assert time.monotonic() - start < 1


# --- never writing beside the user's file, locks, WAL -----------------------------------------------------


@pytest.fixture
def own_tmp(tmp_path, monkeypatch) -> Path:
    """Temporary copies go to a folder of the test's own, to check they are cleaned up."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_wal_rows_not_yet_checkpointed_are_read_and_nothing_is_left_beside(tmp_path, own_tmp):
    db = trackio_db(tmp_path / "proj.db", [(0, {"a": 1.0})])
    mdb = mlflow_db(tmp_path / "mlflow.db", [("a", 0, 1.0)])
    writers = []
    for path, sql in (
        (
            db,
            "INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES "
            f"('r1', '{STAMP}', 'run-a', 1, '{{\"a\": 2.0}}')",
        ),
        (mdb, "INSERT INTO metrics VALUES ('a', 2.0, 1767323046000, 'u1', 1, 0)"),
    ):
        writer = sqlite3.connect(path, isolation_level=None)
        writer.execute("PRAGMA journal_mode = WAL")
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute(sql)
        writers.append(writer)
    before = listing(tmp_path)
    assert "proj.db-wal" in before and "mlflow.db-wal" in before
    assert points(read(TrackioKind(), db, "r1")) == {("a", 0): 1.0, ("a", 1): 2.0}
    assert points(read(MlflowKind(), mdb, "u1")) == {("a", 0): 1.0, ("a", 1): 2.0}
    assert [f.part for f in TrackioKind().claim_file(db)] == ["r1"]
    assert listing(tmp_path) == before and listing(own_tmp) == []
    for writer in writers:
        writer.close()


def test_a_db_never_gets_side_files_from_a_read(tmp_path):
    db = trackio_db(tmp_path / "proj.db", [(0, {"a": 1.0})])
    sqlite3.connect(db).execute("PRAGMA journal_mode = WAL").close()  # WAL in the header, no -wal left
    before = listing(tmp_path)
    TrackioKind().claim_file(db)
    assert points(read(TrackioKind(), db, "r1")) == {("a", 0): 1.0}
    trackio_tables(db, "r1")
    assert listing(tmp_path) == before == ["proj.db"]


@pytest.mark.parametrize("kind", ["trackio", "mlflow"])
@pytest.mark.parametrize("pending_write", [False, True])
def test_an_exclusively_locked_db_is_read_at_once(tmp_path, own_tmp, kind, pending_write):
    if kind == "trackio":
        path, reader, part = trackio_db(tmp_path / "proj.db", [(0, {"a": 1.0})]), TrackioKind(), "r1"
        write = (
            "INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) "
            f"VALUES ('r1', '{STAMP}', 'run-a', 9, '{{}}')"
        )
    else:
        path, reader, part = mlflow_db(tmp_path / "mlflow.db", [("a", 0, 1.0)]), MlflowKind(), "u1"
        write = "INSERT INTO metrics VALUES ('b', 5.0, 1, 'u1', 9, 0)"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    if pending_write:
        holder.execute(write)  # uncommitted: its journal lies beside the db
    before = listing(tmp_path)
    assert (f"{path.name}-journal" in before) == pending_write
    start = time.monotonic()
    result = read(reader, path, part)
    claims = reader.claim_file(path)
    assert time.monotonic() - start < 1
    assert points(result) == {("a", 0): 1.0} and result.problems == []  # the committed rows only
    assert [c.part for c in claims] == [part]
    assert listing(tmp_path) == before and listing(own_tmp) == []
    holder.execute("ROLLBACK")
    holder.close()


# --- Trackio values and steps -----------------------------------------------------------------------------


def test_trackio_values_as_trackio_writes_them(tmp_path):
    rows = [
        (
            0,
            {
                "loss": "NaN",
                "up": "Infinity",
                "down": "-Infinity",
                "ok": 0.5,
                "n": 3,
                "flag": True,
                "none": None,
                "note": "hello",
                "__time": 7.0,
                "pair": [1, 2],
                "img": {"_type": "trackio.image", "file_path": "x.png"},
                "h": {"_type": "trackio.histogram", "bins": [0.0, 1.0, 2.0], "values": [3, 4]},
            },
        ),
        (1, '{"loss": NaN, "ok": 1e-310}'),  # a bare NaN token, as json.dumps writes it
        (2, "{not json"),
    ]
    db = trackio_db(tmp_path / "p.db", rows, config={"lr": 0.1, "model": {"layers": 2}, "_Username": None})
    result = read(TrackioKind(), db, "r1")
    got = points(result)
    assert math.isnan(got.pop(("loss", 0))) and math.isnan(got.pop(("loss", 1)))
    assert got == {
        ("up", 0): math.inf,
        ("down", 0): -math.inf,
        ("ok", 0): 0.5,
        ("n", 0): 3.0,
        ("flag", 0): 1.0,
        ("time", 0): 7.0,
        ("ok", 1): 1e-310,
    }
    assert result.texts[["tag", "step", "text"]].values.tolist() == [["note", 0, "hello"]]
    hist = result.histograms.iloc[0]
    assert (hist["tag"], hist["left"], hist["right"], hist["count"]) == ("h", [0.0, 1.0], [1.0, 2.0], [3, 4])
    assert result.scalars["wall_time"].eq(STAMP_SECONDS).all()
    (problem,) = result.problems
    assert problem.line == 3 and "not JSON" in problem.reason
    assert result.extras["hparams"] == {"lr": 0.1, "model.layers": 2}
    assert result.extras["skipped_tags"] == ["img", "pair"]
    assert json.loads(result.extras["config_text"]) == {"lr": 0.1, "model": {"layers": 2}}
    assert list(result.scalars.dtypes) == list(TableSet().result().scalars.dtypes)


def test_trackio_text_column_and_exact_doubles(tmp_path):
    values = np.frombuffer(np.random.default_rng(1).bytes(8 * 2000), dtype=np.float64)
    values = [float(v) for v in values if math.isfinite(v)]
    db = trackio_db(tmp_path / "p.db", [(i, {"x": v}) for i, v in enumerate(values)], blob=False)
    got = read(TrackioKind(), db, "r1").scalars.sort_values("step")["value"].tolist()
    assert [struct.pack("<d", v) for v in got] == [struct.pack("<d", v) for v in values]


def test_trackio_uses_the_trainers_step_logged_in_the_rows(tmp_path):
    rows = [
        (0, {"profiling/t": 0.1}),
        (1, {"reward": 1.0, "train/global_step": 1}),
        (
            2,
            {
                "completions": {
                    "_type": "trackio.table",
                    "_value": [{"step": 1, "prompt": "p", "completion": "c"}],
                }
            },
        ),
        (1, {"profiling/t": 0.2}),
        (3, {"reward": 2.0, "train/global_step": 2}),
    ]
    result = read(TrackioKind(), trackio_tables_db := trackio_db(tmp_path / "p.db", rows), "r1")
    assert points(result) == {
        ("profiling/t", 0): 0.1,
        ("reward", 1): 1.0,
        ("profiling/t", 1): 0.2,
        ("reward", 2): 2.0,
    }
    assert "train/global_step" in result.extras["step_source"]
    assert result.extras["skipped_tags"] == ["completions"]  # read by logged_tables
    (table,) = trackio_tables(trackio_tables_db, "r1")
    assert (table.key, table.step, table.columns, table.rows) == (
        "completions",
        1,
        ["step", "prompt", "completion"],
        [[1, "p", "c"]],
    )


def test_trackio_rolls_step_metric_and_a_legacy_db_without_run_ids(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE metrics (id INTEGER PRIMARY KEY, timestamp TEXT, run_name TEXT, step INTEGER,"
        " metrics TEXT); CREATE TABLE configs (id INTEGER PRIMARY KEY, run_name TEXT, config TEXT,"
        " created_at TEXT);"
    )
    for i, step in enumerate((10, 20)):
        conn.execute(
            "INSERT INTO metrics VALUES (?, ?, 'old-run', ?, ?)",
            (i + 1, "2026-01-02T03:04:05", i, json.dumps({"r": step / 10, "__step": step})),
        )
    conn.commit()
    conn.close()
    (found,) = TrackioKind().claim_file(db)
    assert (found.part, found.label) == ("old-run", "old/old-run")
    result = read(TrackioKind(), db, "old-run")
    assert points(result) == {("r", 10): 1.0, ("r", 20): 2.0}
    assert result.scalars["wall_time"].iloc[0] == STAMP_SECONDS - 0.5  # no zone: UTC
    assert result.extras["step_source"].startswith("step ")


def test_a_trackio_run_without_points_and_a_run_not_in_the_db(tmp_path):
    db = trackio_db(tmp_path / "p.db", [])
    (found,) = TrackioKind().claim_file(db)
    result = read(TrackioKind(), db, found.part)
    assert result.scalars.empty and result.problems == [] and result.extras["hparams"] == {"lr": 0.1}
    result = read(TrackioKind(), db, "gone")
    assert result.scalars.empty and "no run 'gone'" in result.problems[0].reason


def test_trackio_traces_are_tables_by_key_and_step(tmp_path):
    db = trackio_db(tmp_path / "p.db", [(0, {"a": 1.0})])
    conn = sqlite3.connect(db)
    for i, step in enumerate((5, 5, 6)):
        conn.execute(
            "INSERT INTO traces (id, run_id, timestamp, run_name, step, key, trace_index, messages, "
            "metadata, search_text) VALUES (?, 'r1', ?, 'run-a', ?, 'rollout', ?, ?, '{\"score\": 1}', '')",
            (f"t{i}", STAMP, step, i, json.dumps([{"role": "user", "content": f"q{i}"}])),
        )
    conn.commit()
    conn.close()
    tables = trackio_tables(db, "r1")
    assert [(t.key, t.step, len(t.rows)) for t in tables] == [("rollout", 5, 2), ("rollout", 6, 1)]
    assert tables[0].rows[0][3] == [{"role": "user", "content": "q0"}] and tables[0].rows[0][4] == {
        "score": 1
    }


# --- MLflow SQLite and file store -------------------------------------------------------------------------


def test_mlflow_sqlite_nan_inf_and_exact_doubles(tmp_path):
    rng = np.random.default_rng(2)
    raw = [float(v) for v in np.frombuffer(rng.bytes(8 * 3000), dtype=np.float64) if math.isfinite(v)]
    pts = [("x", i, v) for i, v in enumerate(raw)] + [
        ("nan", 0, math.nan),
        ("inf", 0, math.inf),
        ("ninf", 0, -math.inf),
    ]
    result = read(MlflowKind(), mlflow_db(tmp_path / "mlflow.db", pts), "u1")
    got = points(result)
    assert (
        math.isnan(got.pop(("nan", 0)))
        and got.pop(("inf", 0)) == math.inf
        and got.pop(("ninf", 0)) == -math.inf
    )
    assert [struct.pack("<d", got[("x", i)]) for i in range(len(raw))] == [struct.pack("<d", v) for v in raw]
    assert result.scalars["wall_time"].min() == 1767323045.0
    assert result.extras["hparams"] == {"lr": "0.1"} and result.problems == []


def mlruns_run(
    root: Path, lines: dict[str, str], meta: str = "run_id: abc\nrun_name: 'it''s: a run'\n"
) -> Path:
    """A run folder of MLflow's file store, metric files written as given."""
    (root / "7").mkdir(parents=True)
    (root / "7" / "meta.yaml").write_text('experiment_id: \'7\'\nname: "my \\"exp\\""\n')
    run = root / "7" / "abc"
    for sub in ("metrics", "params", "tags", "artifacts"):
        (run / sub).mkdir(parents=True)
    (run / "meta.yaml").write_text(meta)
    (run / "params" / "rollout").mkdir()
    (run / "params" / "rollout" / "n").write_text("8")
    for key, text in lines.items():
        (run / "metrics" / key).parent.mkdir(parents=True, exist_ok=True)
        (run / "metrics" / key).write_text(text)
    return run


def claim_run(run: Path, allowed: list[Path] | None = None):
    return MlflowKind().claim_folder(
        run,
        [p.name for p in run.iterdir() if p.is_dir()],
        [p.name for p in run.iterdir() if p.is_file()],
        allowed,
    )


def test_mlruns_bad_line_is_a_problem_with_its_number_and_the_rest_is_read(tmp_path):
    run = mlruns_run(
        tmp_path / "mlruns",
        {
            "train/reward": "1000 0.5 1\n2000 nan 2\nnot a line\n3000 inf 3\n"
            "4000 -0.25 4 eval-set abc123\n5000 1.",
            "old": "1000 2.5\n",
            "empty": "",
        },
    )
    (found,) = claim_run(run)
    assert found.whole and found.label == 'my "exp"/it\'s: a run'
    result = read(MlflowKind(), run)
    got = points(result)
    assert math.isnan(got.pop(("train/reward", 2)))
    assert got == {
        ("train/reward", 1): 0.5,
        ("train/reward", 3): math.inf,
        ("train/reward", 4): -0.25,
        ("old", 0): 2.5,
    }
    (problem,) = result.problems  # the unfinished last line is not one
    assert problem.line == 3 and problem.file.endswith("train/reward")
    assert result.extras["hparams"] == {"rollout/n": "8"}


def test_mlruns_logged_model_folders_are_not_runs(tmp_path):
    model = tmp_path / "models" / "m-1"
    (model / "metrics").mkdir(parents=True)
    (model / "meta.yaml").write_text("model_id: m-1\nname: model\n")
    assert claim_run(model) == []


def test_mlruns_links_outside_the_roots_are_named_not_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("1 42.0 1\n")
    root = tmp_path / "root"
    run = mlruns_run(root / "mlruns", {"ok": "1 1.0 1\n"})
    (run / "metrics" / "leak").symlink_to(outside / "secret")
    (run / "metrics" / "gone").symlink_to(root / "missing")
    result = read(MlflowKind(), run, allowed=[root])
    assert points(result) == {("ok", 1): 1.0}
    reasons = {Path(p.file).name: p.reason for p in result.problems}
    assert reasons["leak"] == OUTSIDE and "unreadable" in reasons["gone"]
    db = trackio_db(outside / "p.db", [(0, {"a": 1.0})])
    (root / "p.db").symlink_to(db)
    result = read(TrackioKind(), root / "p.db", "r1", allowed=[root])
    assert result.scalars.empty and result.problems[0].reason == OUTSIDE


def test_mlflow_generations_found_beside_a_moved_db(tmp_path):
    db = mlflow_db(tmp_path / "mlflow.db", [("a", 0, 1.0)])  # its artifact_uri points nowhere
    folder = tmp_path / "mlruns" / "1" / "u1" / "artifacts"
    folder.mkdir(parents=True)
    (folder / "val_step7.json").write_text(json.dumps([{"input": "q", "output": "a", "score": 1.0}]))
    (folder / "model.json").write_text("{}")
    (table,) = logged_tables(db, "u1")
    assert (table.key, table.step, table.columns, table.rows) == (
        "val/generations",
        7,
        ["input", "output", "score"],
        [["q", "a", 1.0]],
    )


def test_meta_yaml_scalars(tmp_path):
    path = tmp_path / "meta.yaml"
    path.write_text(
        "run_id: abc\nrun_name: 'a: ''b'''\nuser_id: \"x\\ty\"\ntags: []\nend_time: null\n  nested: 1\n"
    )
    assert read_meta(path) == {
        "run_id": "abc",
        "run_name": "a: 'b'",
        "user_id": "x\ty",
        "tags": "[]",
        "end_time": "",
    }


# --- a live run: read on from where the cached read stopped ----------------------------------------------


def insert_trackio_rows(
    path: Path, rows: list[tuple[int, object]], *, run_id: str = "r1", run: str = "run-a"
):
    """More rows of a run, inserted as ``trackio.log`` inserts them (orjson bytes of the metrics)."""
    conn = sqlite3.connect(path)
    for step, metrics in rows:
        text = metrics if isinstance(metrics, str) else json.dumps(metrics)
        conn.execute(
            "INSERT INTO metrics (timestamp, run_id, run_name, step, metrics) VALUES (?, ?, ?, ?, ?)",
            (STAMP, run_id, run, step, text.encode()),
        )
    conn.commit()
    conn.close()


def insert_mlflow_points(path: Path, points: list[tuple[str, int, float]], *, run_uuid: str = "u1") -> None:
    """More points of a run, as MLflow's SQL store inserts them (one row each, NaN as 0 with is_nan)."""
    conn = sqlite3.connect(path)
    for key, step, value in points:
        conn.execute(
            "INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?)",
            (
                key,
                0.0 if math.isnan(value) else value,
                1767323050000 + step,
                run_uuid,
                step,
                int(math.isnan(value)),
            ),
        )
    conn.commit()
    conn.close()


@pytest.fixture
def fetched(monkeypatch) -> list[tuple[str, int, int]]:
    """(kind, where the read started, rows or lines it got) of every fetch of new points, as they happen."""
    calls: list[tuple[str, int, int]] = []
    new_rows, metric_rows, chunk = (
        trackio_module._new_rows,
        mlflow_store._metric_rows,
        mlflow_store._metric_chunk,
    )

    def trackio_rows(conn, key, part, after):
        rows = new_rows(conn, key, part, after)
        calls.append(("trackio", after, len(rows)))
        return rows

    def mlflow_rows(conn, columns, run_uuid, after=0):
        rows, last = metric_rows(conn, columns, run_uuid, after)
        calls.append(("mlflow", after, len(rows)))
        return rows, last

    def mlruns_chunk(path, start, lines, problems, standing):
        got = chunk(path, start, lines, problems, standing)
        calls.append((path.name, start, got[2] if got else -1))
        return got

    monkeypatch.setattr(trackio_module, "_new_rows", trackio_rows)
    monkeypatch.setattr(mlflow_store, "_metric_rows", mlflow_rows)
    monkeypatch.setattr(mlflow_store, "_metric_chunk", mlruns_chunk)
    return calls


def ordered(frame):
    cols = [c for c in ("run", "tag", "step", "wall_time") if c in frame.columns]
    return frame.sort_values(cols, kind="stable").reset_index(drop=True)


def assert_same_as_cold(root: Path, cache: Path):
    """A read through the cache gives what a read from scratch of the store as it is now gives."""
    live = load_metrics(root, cache_dir=cache)
    cold = load_metrics(root)
    for name in ("scalars", "texts", "histograms"):
        pd.testing.assert_frame_equal(ordered(getattr(live, name)), ordered(getattr(cold, name)))
    assert [r.to_dict() for r in live.runs] == [r.to_dict() for r in cold.runs]
    assert live.problems == cold.problems
    return live


def trackio_row(step: int, **extra) -> tuple[int, dict]:
    row = {"loss": 1.0 / (step + 1), "reward": "NaN" if step == 3 else step * 0.5, "note": f"n{step}"}
    if step % 4 == 0:
        row["h"] = {"_type": "trackio.histogram", "bins": [0.0, 1.0, 2.0], "values": [step, 1]}
    return step, {**row, **extra}


def test_a_live_trackio_run_is_read_on_from_its_last_row(tmp_path, fetched):
    root, cache = tmp_path / "root", tmp_path / "cache"
    root.mkdir()
    db = trackio_db(root / "proj.db", [trackio_row(s) for s in range(20)], config={"lr": 0.1})
    first = load_metrics(root, cache_dir=cache)
    assert fetched == [("trackio", 0, 20)] and len(first.scalars) == 40
    insert_trackio_rows(
        db, [trackio_row(20), (21, "{not json"), trackio_row(22, img={"_type": "trackio.image"})]
    )
    fetched.clear()
    live = assert_same_as_cold(root, cache)
    assert fetched[0] == ("trackio", 20, 3)  # the new rows alone (then the cold read's)
    (run,) = live.runs
    assert [p.line for p in run.problems] == [22]  # the bad row, named once
    assert run.hparams == {"lr": 0.1} and run.tags["loss"]["points"] == 22
    meta = json.loads(next(cache.glob("*/meta.json")).read_text())
    assert meta["resume"]["last_id"] == 23 and meta["extras"]["skipped_tags"] == ["img"]
    fetched.clear()
    assert_same_as_cold(root, cache)
    # nothing new: the cached read fetches no row (a store that settled is not even opened)
    assert [f for f in fetched if f[1] != 0] in ([], [("trackio", 23, 0)])


def test_a_trackio_run_whose_step_key_arrives_later_is_read_on(tmp_path, fetched):
    """TRL's first rows (a timer) carry no train/global_step: the rows that do are read on without a restart;
    a run whose cached rows stepped by ROLL's ``step`` and whose new rows carry train/global_step (which
    wins) is read again whole."""
    root, cache = tmp_path / "root", tmp_path / "cache"
    root.mkdir()
    db = trackio_db(root / "proj.db", [(0, {"profiling/t": 0.1})])
    load_metrics(root, cache_dir=cache)
    insert_trackio_rows(db, [(1, {"reward": 1.0, "train/global_step": 1}), (2, {"profiling/t": 0.2})])
    fetched.clear()
    live = assert_same_as_cold(root, cache)
    assert fetched[0] == ("trackio", 1, 2)
    assert set(live.scalars["tag"]) == {"profiling/t", "reward"}
    assert live.runs[0].to_dict()["tags"]["reward"] == {"points": 1, "first_step": 1, "last_step": 1}

    root2, cache2 = tmp_path / "root2", tmp_path / "cache2"
    root2.mkdir()
    db2 = trackio_db(root2 / "proj.db", [(0, {"r": 1.0, "__step": 10})])
    load_metrics(root2, cache_dir=cache2)
    insert_trackio_rows(db2, [(1, {"r": 2.0, "__step": 20, "train/global_step": 5})])
    fetched.clear()
    live = assert_same_as_cold(root2, cache2)
    assert fetched[:2] == [("trackio", 1, 1), ("trackio", 0, 2)]  # the new rows, then all again
    assert points(live) == {("r", 0): 1.0, ("step", 0): 10.0, ("r", 5): 2.0, ("step", 5): 20.0}


@pytest.mark.parametrize("fewer", [False, True])
def test_a_rewritten_trackio_db_is_read_from_scratch(tmp_path, fetched, fewer):
    root, cache = tmp_path / "root", tmp_path / "cache"
    root.mkdir()
    db = trackio_db(root / "proj.db", [(s, {"a": float(s)}) for s in range(10)])
    load_metrics(root, cache_dir=cache)
    db.unlink()
    trackio_db(db, [(s, {"b": -float(s)}) for s in range(5 if fewer else 12)])  # row 10: gone, or another
    fetched.clear()
    live = assert_same_as_cold(root, cache)
    assert fetched[0] == ("trackio", 0, 5 if fewer else 12)
    assert set(live.scalars["tag"]) == {"b"}


def test_a_live_mlflow_run_is_read_on_from_its_last_rowid(tmp_path, fetched):
    root, cache = tmp_path / "root", tmp_path / "cache"
    root.mkdir()
    db = mlflow_db(root / "mlflow.db", [(k, s, s * 0.5) for s in range(10) for k in ("a", "b")])
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO runs VALUES ('u2', 'run-b', 'RUNNING', 2, 'active', '/nowhere/1/u2', 1)")
    conn.commit()
    conn.close()
    load_metrics(root, cache_dir=cache)
    assert sorted(fetched) == [("mlflow", 0, 0), ("mlflow", 0, 20)]
    insert_mlflow_points(db, [("a", 10, 5.0), ("b", 10, math.nan)])
    insert_mlflow_points(db, [("x", 1, 1.0)], run_uuid="u2")  # another run's row between
    insert_mlflow_points(db, [("a", 11, math.inf), ("c", 11, -1e308)])
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO params VALUES ('late', 'yes', 'u1')")
    conn.commit()
    conn.close()
    fetched.clear()
    live = assert_same_as_cold(root, cache)
    assert sorted(fetched[:2]) == [("mlflow", 0, 1), ("mlflow", 20, 4)]
    run = next(r for r in live.runs if r.run.endswith("run-a"))
    assert run.hparams == {"late": "yes", "lr": "0.1"} and run.tags["a"]["last_step"] == 11
    fetched.clear()
    assert_same_as_cold(root, cache)
    assert all(rows == 0 for _, start, rows in fetched if start != 0)  # nothing new: no row fetched again


def test_a_rewritten_mlflow_db_is_read_from_scratch(tmp_path, fetched):
    root, cache = tmp_path / "root", tmp_path / "cache"
    root.mkdir()
    db = mlflow_db(root / "mlflow.db", [("a", s, float(s)) for s in range(10)])
    load_metrics(root, cache_dir=cache)
    db.unlink()
    mlflow_db(db, [("b", s, -float(s)) for s in range(12)])  # rowid 10 is another row now
    fetched.clear()
    live = assert_same_as_cold(root, cache)
    assert fetched[0] == ("mlflow", 0, 12) and set(live.scalars["tag"]) == {"b"}


@pytest.mark.parametrize("kind", ["trackio", "mlflow"])
def test_a_db_written_in_wal_mode_with_a_transaction_open_is_read_on(tmp_path, own_tmp, fetched, kind):
    """A job writing the db: its committed rows (still in the -wal) are read, its open transaction's are
    not, and nothing appears beside the db; once it commits, the new rows alone are read."""
    root, cache = tmp_path / "root", tmp_path / "cache"
    root.mkdir()
    if kind == "trackio":
        db = trackio_db(root / "proj.db", [(s, {"a": float(s)}) for s in range(5)])
        insert = (
            "INSERT INTO metrics (timestamp, run_id, run_name, step, metrics) VALUES "
            f"('{STAMP}', 'r1', 'run-a', ?, ?)"
        )
        row = lambda s: (s, json.dumps({"a": float(s)}).encode())  # noqa: E731
    else:
        db = mlflow_db(root / "mlflow.db", [("a", s, float(s)) for s in range(5)])
        insert = "INSERT INTO metrics VALUES ('a', ?, 1767323050000, 'u1', ?, 0)"
        row = lambda s: (float(s), s)  # noqa: E731
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute(insert, row(5))  # committed, in the -wal only
    load_metrics(root, cache_dir=cache)
    writer.execute("BEGIN")
    writer.executemany(insert, [row(s) for s in range(6, 400)])
    before = listing(root)
    assert f"{db.name}-wal" in before
    fetched.clear()
    got = load_metrics(root, cache_dir=cache)
    # committed rows only; the open transaction has not touched the files yet, so nothing is even opened
    assert sorted(got.scalars["step"]) == list(range(6)) and fetched in ([], [(kind, 6, 0)])
    assert listing(root) == before and listing(own_tmp) == []
    writer.execute("COMMIT")
    fetched.clear()
    live = assert_same_as_cold(root, cache)
    assert sorted(live.scalars["step"]) == list(range(400)) and fetched[0][2] == 394
    assert fetched[0][1] == 6  # on from the last row (id or rowid) read before
    assert listing(root) == before and listing(own_tmp) == []
    writer.close()


def test_an_unchanged_db_is_not_opened_again(tmp_path, monkeypatch):
    """A dashboard asks every few seconds for each run of a database: one that has not changed (and did
    not just change: a write in the same mtime tick could hide) is not copied or opened again."""
    root, cache = tmp_path / "root", tmp_path / "cache"
    root.mkdir()
    db = trackio_db(root / "proj.db", [(s, {"a": float(s)}) for s in range(5)])
    mdb = mlflow_db(root / "mlflow.db", [("a", 0, 1.0)])
    past = time.time() - 60
    for path in (db, mdb):
        os.utime(path, (past, past))
    first = load_metrics(root, cache_dir=cache)
    opened = []
    for module in (trackio_module, mlflow_store):
        real = module.open_sqlite_readonly
        monkeypatch.setattr(
            module, "open_sqlite_readonly", lambda *a, real=real: opened.append(a) or real(*a)
        )
    again = load_metrics(root, cache_dir=cache)
    assert opened == [] and [r.to_dict() for r in again.runs] == [r.to_dict() for r in first.runs]
    insert_trackio_rows(db, [(5, {"a": 5.0})])
    assert len(load_metrics(root, cache_dir=cache).scalars) == len(first.scalars) + 1  # a changed one is


def test_a_live_mlruns_run_is_read_on_from_each_files_last_line(tmp_path, fetched):
    root, cache = tmp_path / "root", tmp_path / "cache"
    run = mlruns_run(root / "mlruns", {"train/reward": "1000 0.5 1\n2000 nan 2\n", "loss": "1000 3.0 1\n"})
    load_metrics(root, cache_dir=cache)
    reward, loss = run / "metrics" / "train" / "reward", run / "metrics" / "loss"
    with reward.open("a") as handle:
        handle.write("3000 0.75 3\nbad line\n4000 1.2")  # the last line is still being written
    (run / "metrics" / "kl").write_text("1000 0.01 1\n")
    fetched.clear()
    live = assert_same_as_cold(root, cache)
    assert sorted(fetched[:3]) == [("kl", 0, 1), ("loss", 11, 0), ("reward", 22, 2)]
    (problem,) = live.problems
    assert problem.line == 4 and problem.file == str(reward)  # its number in the file, not in the chunk
    assert ("train/reward", 4) not in points(live)
    with reward.open("a") as handle:
        handle.write("5 4\n")
    with loss.open("a") as handle:
        handle.write("2000 -inf 2\n")
    fetched.clear()
    live = assert_same_as_cold(root, cache)
    assert sorted(fetched[:3]) == [("kl", 12, 0), ("loss", 11, 1), ("reward", 43, 1)]
    got = points(live)
    assert got[("train/reward", 4)] == 1.25 and got[("loss", 2)] == -math.inf and len(live.problems) == 1
    meta = json.loads(next(cache.glob("*/meta.json")).read_text())
    assert (
        meta["resume"]["files"]["train/reward"][:2] == [reward.stat().st_size, 5]
        and "offset" not in meta["resume"]
    )


@pytest.mark.parametrize("change", ["rewritten", "shorter", "removed"])
def test_a_rewritten_mlruns_file_reads_the_run_from_scratch(tmp_path, fetched, change):
    root, cache = tmp_path / "root", tmp_path / "cache"
    run = mlruns_run(root / "mlruns", {"a": "1000 0.5 1\n2000 0.6 2\n", "b": "1000 1.0 1\n"})
    load_metrics(root, cache_dir=cache)
    a = run / "metrics" / "a"
    if change == "rewritten":
        a.write_text("1000 9.5 1\n2000 9.6 2\n3000 9.7 3\n")
    elif change == "shorter":
        a.write_text("1000 0.5 1\n")
    else:
        a.unlink()
    fetched.clear()
    live = assert_same_as_cold(root, cache)
    assert ("b", 0) in {(name, start) for name, start, _ in fetched[:2]}  # every file from its start
    assert len(live.scalars) == {"rewritten": 4, "shorter": 2, "removed": 1}[change]


def add_trace(path: Path, step: int, messages: object, metadata: object, *, index: int = 0) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO traces (id, run_id, timestamp, run_name, step, key, trace_index, messages, metadata, "
        "search_text) VALUES (?, 'r1', ?, 'run-a', ?, 'rollout', ?, ?, ?, '')",
        (f"t{step}-{index}", STAMP, step, index, json.dumps(messages), json.dumps(metadata)),
    )
    conn.commit()
    conn.close()


def test_traces_of_any_shape_open_as_a_rollout_run_and_grow_live(tmp_path):
    """Odd traces (no assistant message, plain text, metadata that is no object, no score) are each one
    sample, none lost; a trace written later is read on the next look, and nothing appears beside the db."""
    import rl_board.metrics.kinds  # also registers the stores that keep runs
    from rl_board.rollouts.store import RolloutStore
    from rl_board.sources.catalogue import catalogue

    root = tmp_path / "root"
    root.mkdir()
    db = trackio_db(root / "proj.db", [(1, {"loss": 1.0})])
    add_trace(db, 1, [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], {"score": 2})
    add_trace(db, 1, [{"role": "user", "content": "only a question"}], {"reward": -1.5}, index=1)
    add_trace(db, 2, "plain text, not messages", ["metadata", "as a list"])
    add_trace(
        db, 2, [{"role": "assistant", "content": "<b>x</b>"}], {"score": "high", "judge": "j1"}, index=1
    )
    before = listing(root)
    [found] = catalogue(root, metric_kinds=rl_board.metrics.kinds.KINDS).rollout_folders()
    assert found.relative == "proj.db/run-a" and found.format == "rl-board"
    run = RolloutStore.open(found.path, cache_dir=tmp_path / "cache")
    frame = run.samples(columns=["step", "prompt", "response", "reward", "judge"])
    assert frame["step"].tolist() == [1, 1, 2, 2] and run.report.bad_lines == []
    assert frame["response"].tolist()[0] == "a" and frame["prompt"].tolist()[1] == "only a question"
    assert frame["response"].tolist()[2:] == ["plain text, not messages", "<b>x</b>"]
    assert frame["reward"].tolist()[:2] == [2.0, -1.5] and frame["reward"].iloc[2:].isna().all()
    assert frame["judge"].tolist()[3] == "j1"
    add_trace(
        db, 3, [{"role": "user", "content": "q3"}, {"role": "assistant", "content": "a3"}], {"score": 1}
    )
    assert run.stale()
    run.refresh()
    assert run.steps == [1, 2, 3] and run.num_samples == 5
    assert listing(root) == before
