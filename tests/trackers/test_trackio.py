"""Trackio 0.43 logs ``tracker_truth``'s run offline (``tests/helpers/trackio_writer.py``), and rl-board
reads its project database back without trackio: every point, the config, TRL's and ROLL's steps, the
tables, and nothing written beside the user's file."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rl_board.metrics.kind import RunSource
from rl_board.metrics.mlflow_store import MlflowKind
from rl_board.metrics.trackio_db import TrackioKind, logged_tables
from tests.helpers import tracker_truth, trackio_writer
from tests.helpers.tracker_writers import TIMEOUT, run_writer


def write(out: Path, home: Path, variant: str) -> None:
    """One variant of the writer in a child process; fail with its output when it does not succeed."""
    run_writer(
        ["-m", "tests.helpers.trackio_writer", str(out), variant],
        env=trackio_writer.environment(out, home),
        cwd=out,
        what=f"trackio writer {variant}",
    )


class Store:
    """The project database the writer made, and the time span it was written in."""

    def __init__(self, db: Path, started: float, ended: float) -> None:
        self.db, self.started, self.ended = db, started, ended
        self.runs = {found.label: found for found in TrackioKind().claim_file(db)}

    def read(self, name: str):
        found = self.runs[f"{trackio_writer.PROJECT}/{name}"]
        return TrackioKind().read(
            RunSource(found.label, "trackio", found.path, found.files, found.part), None
        )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    out = tmp_path_factory.mktemp("trackio")
    home = tmp_path_factory.mktemp("home")
    started = time.time()
    for variant in ("truth", "trl", "roll"):
        write(out, home, variant)
    return Store(out / f"{trackio_writer.PROJECT}.db", started, time.time())


def points(result, without: str = "") -> dict[tuple[str, int], float]:
    s = result.scalars
    return {(t, int(st)): v for t, st, v in zip(s["tag"], s["step"], s["value"], strict=True) if t != without}


def test_the_project_db_holds_each_run(store):
    assert sorted(store.runs) == [
        f"{trackio_writer.PROJECT}/{n}" for n in ("grpo-tiny", "roll-run", "trl-run")
    ]
    assert {found.files for found in store.runs.values()} == {(store.db,)}
    assert MlflowKind().claim_file(store.db) == []


def test_every_point_of_the_run_is_read_back(store):
    result = store.read(trackio_writer.RUN)
    assert tracker_truth.mismatches(points(result)) == []
    assert result.problems == []
    walls = result.scalars["wall_time"]
    assert walls.between(store.started - 1, store.ended + 1).all()
    assert "trackio's step" in result.extras["step_source"]


def test_the_config_is_found(store):
    extras = store.read(trackio_writer.RUN).extras
    assert json.loads(extras["config_text"]) == tracker_truth.CONFIG
    assert extras["hparams"] == {
        "algorithm": "grpo",
        "lr": 1e-6,
        "rollout.n": 8,
        "rollout.temperature": 1.0,
        "model": "tiny-random",
    }


def test_traces_are_tables_at_their_steps(store):
    tables = logged_tables(store.db, store.runs[f"{trackio_writer.PROJECT}/{trackio_writer.RUN}"].part)
    assert [(t.key, t.step) for t in tables] == [("rollout", 10), ("rollout", 20)]
    assert tables[0].columns == ["step", "key", "trace_index", "messages", "metadata"]
    assert tables[0].rows[0][3] == [
        {"role": "user", "content": "q10"},
        {"role": "assistant", "content": "a10"},
    ]
    assert tables[0].rows[0][4] == {"score": 1.0}


def test_a_trl_run_is_read_by_the_trainers_global_step(store):
    found = store.runs[f"{trackio_writer.PROJECT}/trl-run"]
    conn = sqlite3.connect(f"file:{found.path}?mode=ro&immutable=1", uri=True)
    trackio_steps = conn.execute(
        "SELECT step FROM metrics WHERE run_id = ? AND instr(CAST(metrics AS TEXT), 'train/global_step') "
        "ORDER BY id",
        (found.part,),
    ).fetchall()
    conn.close()
    assert [s for (s,) in trackio_steps][:4] == [1, 3, 5, 7]  # trackio's own count of log calls
    result = store.read("trl-run")
    profiling = "profiling/Time taken: GRPOTrainer._generate"
    assert tracker_truth.mismatches(points(result, without=profiling)) == []
    assert "train/global_step" not in set(result.scalars["tag"])
    timer = result.scalars[result.scalars["tag"] == profiling]
    assert sorted(timer["step"]) == [s - 1 for s in tracker_truth.STEPS]  # TRL logs it with step=global_step
    assert result.extras["step_source"].startswith("train/global_step")
    assert result.extras["skipped_tags"] == ["completions"]


def test_trls_completions_tables_one_per_step(store):
    tables = logged_tables(store.db, store.runs[f"{trackio_writer.PROJECT}/trl-run"].part)
    assert [t.step for t in tables] == list(tracker_truth.STEPS)  # the last one, logged twice, is kept once
    last = tables[-1]
    assert last.key == "completions" and last.columns == [
        "step",
        "prompt",
        "completion",
        "length_reward",
        "advantage",
    ]
    expected = trackio_writer.completions_rows(50)
    assert last.rows == [[row[c] for c in last.columns] for row in expected]


def test_rolls_step_metric_is_the_step(store):
    result = store.read("roll-run")
    assert tracker_truth.mismatches(points(result)) == []
    assert "step" not in set(result.scalars["tag"]) and result.extras["step_source"].startswith("step ")


def test_reading_writes_nothing_beside_the_db(store):
    before = sorted(p.name for p in store.db.parent.iterdir())
    TrackioKind().claim_file(store.db)
    store.read(trackio_writer.RUN)
    logged_tables(store.db, store.runs[f"{trackio_writer.PROJECT}/trl-run"].part)
    assert sorted(p.name for p in store.db.parent.iterdir()) == before
    assert not [n for n in before if n.endswith(("-wal", "-shm", "-journal"))]


def test_a_live_run_s_rows_still_in_the_wal_are_read(store, tmp_path):
    """A run still logging: trackio keeps its db open in WAL mode; its newest rows are only in the -wal."""
    db = tmp_path / store.db.name
    shutil.copyfile(store.db, db)
    found = store.runs[f"{trackio_writer.PROJECT}/{trackio_writer.RUN}"]
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute(
        "INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES (?, ?, ?, 51, ?)",
        (found.part, "2026-01-01T00:00:00+00:00", trackio_writer.RUN, b'{"train/reward": 0.5}'),
    )
    before = sorted(p.name for p in tmp_path.iterdir())
    assert f"{db.name}-wal" in before
    (claim,) = [f for f in TrackioKind().claim_file(db) if f.part == found.part]
    assert claim.files == (db, Path(f"{db}-wal"))
    result = TrackioKind().read(RunSource("r", "trackio", db, claim.files, claim.part), None)
    got = points(result)
    assert got.pop(("train/reward", 51)) == 0.5 and tracker_truth.mismatches(got) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    writer.close()


def wait_ready(child: subprocess.Popen) -> bool:
    """Whether the writer printed "ready" (its other output lines skipped) before it ended."""
    return any(line.strip() == "ready" for line in child.stdout)


LIVE_WRITER = """
import sys
import trackio

trackio.init(project="live", name="run", config={"lr": 0.5}, auto_log_gpu=False)
for step in range(20):
    trackio.log({"train/reward": step * 0.5, "train/kl": 0.01 * step, "note": f"s{step}"}, step=step)
    if step == 9:
        print("ready", flush=True)
        sys.stdin.readline()
trackio.finish()
"""


def test_a_run_being_logged_is_read_on_from_its_last_row(tmp_path, monkeypatch):
    """trackio logs half a run and waits; the run is read through a cache until its rows are there (trackio
    writes them from a background thread), then trackio logs the rest and finishes: each read through the
    cache fetched only rows it had not read, and the last gives what a read from scratch gives."""
    from rl_board.metrics import trackio_db
    from rl_board.metrics.reader import load_metrics

    out, home, cache = tmp_path / "out", tmp_path / "home", tmp_path / "cache"
    out.mkdir()
    home.mkdir()
    fetched: list[tuple[int, int]] = []
    new_rows = trackio_db._new_rows

    def spy(conn, key, part, after):
        rows = new_rows(conn, key, part, after)
        fetched.append((after, len(rows)))
        return rows

    monkeypatch.setattr(trackio_db, "_new_rows", spy)
    log = (tmp_path / "writer.log").open("w")
    child = subprocess.Popen(
        [sys.executable, "-c", LIVE_WRITER],
        env=trackio_writer.environment(out, home),
        cwd=out,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    watchdog = threading.Timer(TIMEOUT, child.kill)  # a writer that hangs ends the test, not the session
    watchdog.start()
    try:
        assert wait_ready(child), (tmp_path / "writer.log").read_text()[-4000:]
        deadline = time.monotonic() + 60
        while True:
            got = load_metrics(out, cache_dir=cache) if (out / "live.db").exists() else None
            if got is not None and len(got.scalars) == 20 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert (
            got is not None
            and len(got.scalars) == 20
            and set(got.texts["text"]) == {f"s{s}" for s in range(10)}
        )
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.wait(TIMEOUT) == 0, (tmp_path / "writer.log").read_text()[-4000:]
    finally:
        watchdog.cancel()
        child.kill()
        child.wait()
        log.close()
    live = load_metrics(out, cache_dir=cache)
    assert sum(n for _, n in fetched) == 20  # every row fetched once
    assert fetched[-1][0] > 0 and fetched[-1][1] >= 1  # the last read went on from where one stopped
    fetched.clear()
    cold = load_metrics(out)
    for name in ("scalars", "texts"):
        frame, want = getattr(live, name), getattr(cold, name)
        order = ["tag", "step"]
        assert (
            frame.sort_values(order)
            .reset_index(drop=True)
            .equals(want.sort_values(order).reset_index(drop=True))
        )
    assert [r.to_dict() for r in live.runs] == [r.to_dict() for r in cold.runs]
    assert live.runs[0].hparams == {"lr": 0.5} and len(live.scalars) == 40
    assert not [p.name for p in out.iterdir() if p.name.endswith(("-wal", "-shm", "-journal"))]


def test_the_runs_tables_and_traces_open_as_rollout_runs(store, tmp_path):
    """A run's traces (and TRL's inline completions table) are a rollout run named below the database,
    read by the step browser, samples and SQL, with nothing written beside the user's file."""
    import rl_board
    from rl_board.metrics.kinds import KINDS
    from rl_board.rollouts.store import RolloutStore
    from rl_board.sources.catalogue import catalogue

    before = sorted(p.name for p in store.db.parent.iterdir())
    listing = catalogue(store.db.parent, metric_kinds=KINDS)
    runs = {f.relative: f for f in listing.rollout_folders()}
    traced = f"{trackio_writer.PROJECT}.db/{trackio_writer.RUN}"
    assert traced in runs, sorted(runs)
    run = RolloutStore.open(runs[traced].path, cache_dir=tmp_path)
    assert run.steps == [10, 20]
    first = run.samples(step=10)
    assert list(first["prompt"]) == ["q10"] and list(first["response"]) == ["a10"]
    assert list(first["reward"]) == [1.0]
    again = rl_board.open(runs[traced].path, cache_dir=tmp_path)  # the notebook's door, from the cache
    assert again.num_samples == run.num_samples == 2 and not again.store.stale()
    assert again.sql("SELECT step, response FROM samples ORDER BY step").values.tolist() == [
        [10, "a10"],
        [20, "a20"],
    ]
    assert sorted(p.name for p in store.db.parent.iterdir()) == before


def test_a_run_inside_the_database_opens_in_the_step_browser(store, tmp_path, monkeypatch):
    """The served root's sidebar lists the run below its database, and a deep link to it opens its step
    with the trace's answer in the batch table, as any run's."""
    import streamlit as st

    from rl_board import config
    from tests.helpers.apptest import assert_clean, open_page

    monkeypatch.setenv("RL_BOARD_ROOTS", str(store.db.parent))
    monkeypatch.setenv("RL_BOARD_CACHE_DIR", str(tmp_path / "cache"))
    config.reset()
    st.cache_data.clear()
    st.cache_resource.clear()
    run = f"{store.db.name}/{trackio_writer.RUN}"
    at = open_page("steps", run=run, step="20")
    assert_clean(at)
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert f"Run **{run}** · 2 samples · 2 steps" in captions, captions
    assert "**1** of 1 samples in step 20" in [m.value for m in at.markdown]
    cells = " ".join(str(frame.value.to_dict()) for frame in at.dataframe)
    assert "a20" in cells, cells[:500]
    st.cache_data.clear()
    st.cache_resource.clear()
