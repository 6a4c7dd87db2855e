"""mlflow-skinny 3.17 logs ``tracker_truth``'s run offline (``tests/helpers/mlflow_writer.py``) into its
SQLite store and into the legacy ``mlruns/`` file store; rl-board reads both back without mlflow."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rl_board.metrics.kind import RunSource
from rl_board.metrics.mlflow_store import MlflowKind, logged_tables
from rl_board.metrics.trackio_db import TrackioKind
from tests.helpers import mlflow_writer, tracker_truth
from tests.helpers.tracker_writers import TIMEOUT, run_writer

TRUTH = f"{mlflow_writer.EXPERIMENT}/{mlflow_writer.RUN}"
EDGE = f"{mlflow_writer.EXPERIMENT}/{mlflow_writer.EDGE_RUN}"


def write(out: Path, home: Path, backend: str) -> None:
    """The writer in a child process (working folder ``out``); fail with its output when it fails."""
    run_writer(
        ["-m", "tests.helpers.mlflow_writer", str(out), backend],
        env=mlflow_writer.environment(home),
        cwd=out,
        what=f"mlflow writer ({backend})",
    )


class Store:
    """What one backend wrote: its runs as the kind claims them, and the time span it was written in."""

    def __init__(self, root: Path, started: float, ended: float) -> None:
        self.root, self.started, self.ended = root, started, ended
        self.runs = {found.label: found for found in claims(root)}

    def read(self, label: str):
        found = self.runs[label]
        return MlflowKind().read(RunSource(label, "mlflow", found.path, found.files, found.part), None)


def claims(root: Path) -> list:
    """Every run the kind claims under ``root``, walked as the catalogue walks (a whole claim stops it)."""
    kind, found = MlflowKind(), []
    for here, dirs, files in os.walk(root):
        folder = Path(here)
        got = kind.claim_folder(folder, dirs, files)
        found += got
        if any(f.whole for f in got):
            dirs[:] = []
            continue
        for name in files:
            found += [f for f in kind.claim_file(folder / name) if not f.skipped]
    return found


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Store]:
    home = tmp_path_factory.mktemp("home")
    out = {}
    for backend in ("sqlite", "file"):
        root = tmp_path_factory.mktemp(f"mlflow-{backend}")
        started = time.time()
        write(root, home, backend)
        out[backend] = Store(root, started, time.time())
    return out


def points(result) -> dict[tuple[str, int], float]:
    s = result.scalars
    return dict(zip(zip(s["tag"], s["step"], strict=True), s["value"], strict=True))


@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_each_run_is_found_once(stores, backend):
    store = stores[backend]
    assert sorted(store.runs) == [EDGE, TRUTH]
    if backend == "sqlite":
        assert {f.path for f in store.runs.values()} == {store.root / "mlflow.db"}
        assert TrackioKind().claim_file(store.root / "mlflow.db") == []
    else:
        assert all(f.whole and f.path.parent.parent.name == "mlruns" for f in store.runs.values())


@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_every_point_of_the_run_is_read_back(stores, backend):
    store = stores[backend]
    result = store.read(TRUTH)
    assert tracker_truth.mismatches(points(result)) == []
    assert result.problems == []
    assert result.scalars["wall_time"].between(store.started - 1, store.ended + 1).all()
    assert result.extras["step_source"].startswith("MLflow's step")


@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_nan_and_infinities_come_back_as_logged(stores, backend):
    got = points(stores[backend].read(EDGE))
    assert math.isnan(got.pop(("edge/nan", 1)))
    assert got == {("edge/pos_inf", 1): math.inf, ("edge/neg_inf", 1): -math.inf, ("edge/tiny", 1): 5e-324}


@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_params_are_the_config(stores, backend):
    extras = stores[backend].read(TRUTH).extras
    assert extras["hparams"] == {
        k: str(v) for k, v in mlflow_writer.flat_config(tracker_truth.CONFIG).items()
    }
    assert '"rollout/n": "8"' in extras["config_text"]


@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_verls_generations_are_tables(stores, backend):
    found = stores[backend].runs[TRUTH]
    tables = logged_tables(found.path, found.part)
    assert [(t.key, t.step) for t in tables] == [
        ("val/generations", s) for s in mlflow_writer.GENERATION_STEPS
    ]
    assert tables[0].columns == ["input", "output", "score"]
    assert tables[0].rows == [[r["input"], r["output"], r["score"]] for r in mlflow_writer.generations(10)]


def test_generations_follow_a_copied_store(stores, tmp_path):
    """The run's artifact_uri is an absolute path on the machine that logged it; in a copy served on its own
    (the original out of reach), the artifacts are found beside the db."""
    copy = tmp_path / "copy"
    shutil.copytree(stores["sqlite"].root, copy)
    found = stores["sqlite"].runs[TRUTH]
    tables = logged_tables(copy / "mlflow.db", found.part, allowed_roots=[copy])
    assert [t.step for t in tables] == list(mlflow_writer.GENERATION_STEPS)
    assert all(Path(t.where).is_relative_to(copy) for t in tables)


def test_reading_the_sqlite_store_writes_nothing_beside_it(stores):
    root = stores["sqlite"].root
    before = sorted(p.name for p in root.iterdir())
    claims(root)
    stores["sqlite"].read(TRUTH)
    assert sorted(p.name for p in root.iterdir()) == before == ["mlflow.db", "mlruns"]


def test_a_bad_line_in_a_metric_file_is_named_and_the_rest_read(stores, tmp_path):
    run = stores["file"].runs[TRUTH].path
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    reward = copy / "metrics" / "train" / "reward"
    lines = reward.read_text().splitlines(keepends=True)
    reward.write_text("".join(lines[:3]) + "garbage line here now\n" + "".join(lines[3:]))
    result = MlflowKind().read(RunSource("r", "mlflow", copy), None)
    (problem,) = result.problems
    assert (Path(problem.file), problem.line) == (reward, 4)
    assert tracker_truth.mismatches(points(result)) == []


def wait_ready(child: subprocess.Popen) -> bool:
    """Whether the writer printed "ready" (its other output lines skipped) before it ended."""
    return any(line.strip() == "ready" for line in child.stdout)


LIVE_WRITER = """
import sys
import mlflow

out, backend = sys.argv[1], sys.argv[2]
mlflow.set_tracking_uri(f"sqlite:///{out}/mlflow.db" if backend == "sqlite" else f"file:{out}/mlruns")
mlflow.set_experiment("live")
with mlflow.start_run(run_name="run"):
    mlflow.log_params({"lr": 0.5})
    for step in range(20):
        mlflow.log_metrics(
            {"train/reward": step * 0.5, "train/kl": float("nan") if step == 3 else 0.01}, step=step
        )
        if step == 9:
            print("ready", flush=True)
            sys.stdin.readline()
"""


@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_a_run_being_logged_is_read_on_from_where_the_last_read_stopped(tmp_path, monkeypatch, backend):
    """MLflow logs half a run and waits; it is read through a cache; MLflow logs the rest: the next read
    fetches the new rows (or the new lines of each metric file) alone and gives what a read from scratch
    gives."""
    from rl_board.metrics import mlflow_store
    from rl_board.metrics.reader import load_metrics

    out, home, cache = tmp_path / "out", tmp_path / "home", tmp_path / "cache"
    out.mkdir()
    home.mkdir()
    fetched: list[tuple[str, int, int]] = []
    metric_rows, chunk = mlflow_store._metric_rows, mlflow_store._metric_chunk

    def rows_spy(conn, columns, run_uuid, after=0):
        rows, last = metric_rows(conn, columns, run_uuid, after)
        fetched.append(("db", after, len(rows)))
        return rows, last

    def chunk_spy(path, start, lines, problems, standing):
        got = chunk(path, start, lines, problems, standing)
        fetched.append((path.name, start, got[2] if got else -1))
        return got

    monkeypatch.setattr(mlflow_store, "_metric_rows", rows_spy)
    monkeypatch.setattr(mlflow_store, "_metric_chunk", chunk_spy)
    log = (tmp_path / "writer.log").open("w")
    child = subprocess.Popen(
        [sys.executable, "-c", LIVE_WRITER, str(out), backend],
        env=mlflow_writer.environment(home),
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
        first = load_metrics(out, cache_dir=cache)
        assert len(first.scalars) == 20
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.wait(TIMEOUT) == 0, (tmp_path / "writer.log").read_text()[-4000:]
    finally:
        watchdog.cancel()
        child.kill()
        child.wait()
        log.close()
    fetched.clear()
    live = load_metrics(out, cache_dir=cache)
    if backend == "sqlite":
        assert fetched == [("db", 20, 20)]  # on from the 20th row: the 20 new ones
    else:
        (run,) = [f for f in (out / "mlruns").glob("*/*/metrics") if f.is_dir()]
        ten = {
            f.name: len(b"".join(f.read_bytes().splitlines(keepends=True)[:10]))
            for f in run.rglob("*")
            if f.is_file()
        }
        assert sorted(fetched) == [("kl", ten["kl"], 10), ("reward", ten["reward"], 10)]  # after the 10 read
    cold = load_metrics(out)
    order = ["tag", "step"]
    got, want = live.scalars.sort_values(order), cold.scalars.sort_values(order)
    assert got.reset_index(drop=True).equals(want.reset_index(drop=True)) and len(got) == 40
    assert math.isnan(points(live)[("train/kl", 3)])
    assert [r.to_dict() for r in live.runs] == [r.to_dict() for r in cold.runs]
    assert live.runs[0].hparams == {"lr": "0.5"}
