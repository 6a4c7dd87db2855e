"""swanlab 0.10.3 logs ``tracker_truth``'s run (``tests/helpers/swanlab_writer.py``) offline and in local
mode (with swanboard), and rl-board reads what it wrote back without swanlab: every point, the wall
times, the config, verl's generations table, and nothing written beside the user's files."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from rl_board.metrics.kind import RunSource
from rl_board.metrics.swanlab_log import DASHBOARD_DB, SOURCE, SwanlabKind, logged_tables
from rl_board.sources.catalogue import METRICS, catalogue
from tests.helpers import swanlab_writer, tracker_truth
from tests.helpers.tracker_writers import run_writer

KIND = SwanlabKind()


class Written:
    """What the writer made: the log folder, the run folder, and the time span it logged in."""

    def __init__(self, out: Path, home: Path, facts: dict) -> None:
        self.out, self.home = out, home
        self.folder, self.id = Path(facts["folder"]), facts["id"]
        self.started, self.ended = facts["start"], facts["end"]

    def read(self):
        log = next(self.folder.glob("run-*.swanlab"))
        return KIND.read(RunSource("truth", SOURCE, self.folder, (log,)), None)


def write(tmp_path_factory: pytest.TempPathFactory, mode: str) -> Written:
    """The writer in a child process with an empty HOME and no SwanLab setting of the user's."""
    out, home = tmp_path_factory.mktemp(f"swanlog-{mode}"), tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWANLAB_")}
    env.update(HOME=str(home), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    printed = run_writer(
        [swanlab_writer.__file__, str(out), "--mode", mode], env=env, cwd=out, what=f"swanlab writer ({mode})"
    )
    return Written(out, home, json.loads(printed.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Written:
    return write(tmp_path_factory, "offline")


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Written:
    return write(tmp_path_factory, "local")


def points(result) -> dict[tuple[str, int], float]:
    s = result.scalars
    pairs = list(zip(s["tag"], s["step"].tolist(), s["value"].tolist(), strict=True))
    assert len({(t, st) for t, st, _ in pairs}) == len(pairs)
    return {(t, st): v for t, st, v in pairs}


def check_run(result, written: Written) -> None:
    """Every point as logged, its time inside the logging window, the config."""
    assert result.problems == []
    assert tracker_truth.mismatches(points(result)) == []
    walls = result.scalars["wall_time"]
    assert walls.between(written.started - 1, written.ended + 1).all()
    assert walls.is_monotonic_increasing or walls.max() - walls.min() < 60
    hparams = result.extras["hparams"]
    assert hparams["algorithm"] == "grpo" and hparams["lr"] == 1e-6 and hparams["rollout.n"] == 8
    assert "tiny-random" in result.extras["config_text"]


def test_offline_run_reads_back_every_point(offline: Written):
    files = [p.name for p in offline.folder.iterdir() if p.is_file()]
    (found,) = KIND.claim_folder(offline.folder, [], files)
    assert found.whole and found.files == (offline.folder / f"run-{offline.id}.swanlab",)
    check_run(offline.read(), offline)
    assert list(offline.home.iterdir()) == []  # nothing of swanlab's outside the log folder


def test_offline_run_grows_record_by_record(offline: Written, tmp_path: Path):
    """The run log as a running job leaves it, cut anywhere: what is whole is read once, the rest later."""
    whole = next(offline.folder.glob("run-*.swanlab")).read_bytes()
    log = tmp_path / "run-x.swanlab"
    for cut in range(0, len(whole) + 1, max(1, len(whole) // 40)):
        log.write_bytes(whole[:cut])
        first = KIND.read_from(RunSource("x", SOURCE, tmp_path, (log,)), None, None)
        log.write_bytes(whole)
        rest = KIND.read_from(RunSource("x", SOURCE, tmp_path, (log,)), first.resume, None)
        got = points(first.committed)
        assert not set(got) & set(points(rest.committed))
        got.update(points(rest.committed))
        assert tracker_truth.mismatches(got) == [], cut


def test_verl_generations_table(offline: Written):
    tables = logged_tables(offline.folder)
    assert [(t.key, t.step) for t in tables] == [
        (swanlab_writer.TABLE_KEY, s) for s in swanlab_writer.TABLE_STEPS
    ]
    for table in tables:
        assert table.columns == swanlab_writer.TABLE_COLUMNS
        want = [
            [None if isinstance(v, float) and math.isnan(v) else v for v in row]
            for row in swanlab_writer.generations(table.step)
        ]
        assert table.rows == want  # a NaN score is written as null


def test_local_mode_run_is_read_from_its_log_and_its_dashboard_lines(local: Written):
    db = local.out / DASHBOARD_DB
    assert db.is_file() and local.folder.parent == local.out
    before = sorted(p.name for p in local.out.iterdir())
    (quiet,) = KIND.claim_file(db)  # the experiment's folder has its run log: read there, not twice
    assert quiet.quiet
    check_run(local.read(), local)
    dashboard = KIND.read(RunSource("truth", SOURCE, db, (db,), local.folder.name), None)
    check_run(dashboard, local)
    assert len(logged_tables(local.folder)) == len(swanlab_writer.TABLE_STEPS)
    assert sorted(p.name for p in local.out.iterdir()) == before  # no -wal, -shm or journal left beside it


def test_local_mode_run_without_its_log_is_claimed_from_the_dashboard(local: Written, tmp_path: Path):
    copy = tmp_path / "swanlog"
    (copy / local.folder.name / "logs").mkdir(parents=True)
    (copy / DASHBOARD_DB).write_bytes((local.out / DASHBOARD_DB).read_bytes())
    for tag in (local.folder / "logs").iterdir():  # as swanlab before 0.8 left it: no run log
        (copy / local.folder.name / "logs" / tag.name).mkdir()
        for f in tag.iterdir():
            (copy / local.folder.name / "logs" / tag.name / f.name).write_bytes(f.read_bytes())
    (found,) = KIND.claim_file(copy / DASHBOARD_DB)
    assert (found.part, found.label) == (local.folder.name, "truth-local")
    result = KIND.read(RunSource("x", SOURCE, found.path, found.files, found.part), None)
    assert tracker_truth.mismatches(points(result)) == []


def metric_runs(root: Path) -> list[tuple[Path, str]]:
    """The metric runs the catalogue finds under ``root`` with this kind alone."""
    return [(s.path, s.format) for s in catalogue(root, metric_kinds=(KIND,)).sources if s.role == METRICS]


def test_the_catalogue_finds_the_offline_run_once(offline: Written):
    assert metric_runs(offline.out) == [(offline.folder, SOURCE)]


def test_the_catalogue_finds_the_local_run_once(local: Written):
    assert metric_runs(local.out) == [(local.folder, SOURCE)]  # its folder; the dashboard file is quiet
