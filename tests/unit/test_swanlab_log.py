"""SwanLab's local stores read without swanlab: a tiny run logged by the real library (tests/data/swanlab,
made by make_tiny.py there), damaged, cut short, re-framed; dashboard databases built here."""

from __future__ import annotations

import json
import math
import random
import shutil
import sqlite3
import struct
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest

from rl_board.metrics.kind import RunSource
from rl_board.metrics.leveldb_log import frame
from rl_board.metrics.swanlab_log import (
    BLOCK,
    CHUNK,
    HEADER,
    SOURCE,
    SwanlabKind,
    logged_tables,
)
from rl_board.sources.roots import OUTSIDE

DATA = Path(__file__).resolve().parents[1] / "data" / "swanlab"
EXPECTED = json.loads((DATA / "expected.json").read_text())
KIND = SwanlabKind()


def expected_points() -> dict[tuple[str, int], float]:
    return {(tag, step): float(value) for tag, step, value in EXPECTED["points"]}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A copy of the tiny run folder (tests damage it)."""
    return Path(shutil.copytree(DATA / EXPECTED["folder"], tmp_path / EXPECTED["folder"]))


def run_log(folder: Path) -> Path:
    return next(folder.glob("run-*.swanlab"))


def source(folder: Path) -> RunSource:
    return RunSource("tiny", SOURCE, folder, (run_log(folder),))


def points(result) -> dict[tuple[str, int], float]:
    frame = result.scalars
    pairs = list(zip(frame["tag"], frame["step"].tolist(), frame["value"].tolist(), strict=True))
    assert len({(t, s) for t, s, _ in pairs}) == len(pairs), "a point read twice"
    return {(t, s): v for t, s, v in pairs}


def same(got: dict, want: dict) -> bool:
    return got.keys() == want.keys() and all(
        (math.isnan(got[k]) and math.isnan(want[k])) or got[k] == want[k] for k in want
    )


# ---------------------------------------------------------------- the run log


def test_tiny_run_reads_every_point_as_logged(run: Path):
    result = KIND.read(source(run), None)
    assert result.problems == []
    assert same(points(result), expected_points())
    assert points(result)[("actor/clip_frac", 1)] == 0.0  # an empty ScalarValue: 0.0, not missing
    assert math.isnan(points(result)[("train/kl", 4)])
    assert ("train/kl", 6) not in points(result)
    walls = result.scalars["wall_time"]
    assert walls.notna().all() and (walls > 1.7e9).all() and walls.max() - walls.min() < 60
    assert result.extras["hparams"] == {
        "algorithm": "grpo",
        "lr": 1e-6,
        "rollout.n": 8,
        "rollout.temperature": 1.0,
    }
    assert "grpo" in result.extras["config_text"]
    assert "step=" in result.extras["step_source"]
    assert set(result.scalars["source"]) == {SOURCE}


def test_run_folder_is_claimed_whole(run: Path):
    files = sorted(p.name for p in run.iterdir() if p.is_file())
    (found,) = KIND.claim_folder(run, ["files", "media"], files)
    assert found.whole and found.files == (run_log(run),)
    assert KIND.claim_folder(run / "files", [], ["config.yaml"]) == []
    assert KIND.may_claim(run_log(run)) and KIND.may_claim(run.parent / "runs.swanlab")
    assert not KIND.may_claim(run / "files" / "config.yaml")


def test_config_without_pyyaml(run: Path, monkeypatch):
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` raises ImportError
    hparams = KIND.read(source(run), None).extras["hparams"]
    assert {k: hparams[k] for k in ("algorithm", "lr")} == {"algorithm": "grpo", "lr": 1e-6}
    assert "n: 8" in hparams["rollout"]  # a nested value: its YAML text


def test_a_record_cut_short_is_read_whole_on_the_next_read(run: Path):
    log = run_log(run)
    whole = log.read_bytes()
    want = expected_points()
    cuts = sorted({*range(0, 40), *range(40, len(whole) - 200, 23), *range(len(whole) - 200, len(whole) + 1)})
    for cut in cuts:
        log.write_bytes(whole[:cut])
        first = KIND.read_from(source(run), None, None)
        assert first.committed.problems == [] and first.tail.problems == [], cut
        assert len(first.tail.scalars) == 0
        offset = first.resume["offset"]
        assert offset <= max(cut, HEADER.size) or cut < HEADER.size, cut
        log.write_bytes(whole)
        second = KIND.read_from(source(run), first.resume, None)
        assert second.committed.problems == [], cut
        got = points(first.committed)
        for key, value in points(second.committed).items():
            assert key not in got, (cut, key)  # nothing read twice
            got[key] = value
        assert same(got, want), cut


def test_a_damaged_chunk_is_one_problem_and_the_rest_is_read(run: Path):
    log = run_log(run)
    data = bytearray(log.read_bytes())
    framed = frame(bytes(data[HEADER.size :]), HEADER.size, str(log))
    victim = framed.starts[len(framed.starts) // 2] + HEADER.size + 3  # inside a record's payload
    data[victim] ^= 0xFF
    log.write_bytes(bytes(data))
    result = KIND.read(source(run), None)
    assert len(result.problems) == 1 and "checksum" in result.problems[0].reason
    got, want = points(result), expected_points()
    assert len(got) >= len(want) - 1 and all(k in want for k in got)


def test_a_damaged_chunk_header_skips_its_block_only(run: Path):
    log = run_log(run)
    data = bytearray(log.read_bytes())
    data[HEADER.size + 6] = 9  # the first chunk's type: not one of LevelDB's
    log.write_bytes(bytes(data))
    result = KIND.read(source(run), None)
    assert len(result.problems) == 1 and "damaged chunk header" in result.problems[0].reason
    assert len(result.scalars) == 0  # the tiny log is one block


@pytest.mark.parametrize("version, words", [(3, "newer SwanLab"), (1, "older SwanLab")])
def test_another_header_version_is_named_not_read(run: Path, version: int, words: str):
    log = run_log(run)
    data = bytearray(log.read_bytes())
    data[HEADER.size - 1] = version
    log.write_bytes(bytes(data))
    appended = KIND.read_from(source(run), None, None)
    (problem,) = appended.tail.problems
    assert words in problem.reason and f"version {version}" in problem.reason
    assert len(appended.committed.scalars) == 0 and appended.resume == {"offset": 0}


def test_not_a_swanlab_log(run: Path):
    run_log(run).write_bytes(b"hello world, not a run log at all")
    (problem,) = KIND.read(source(run), None).problems
    assert "not a SwanLab run log" in problem.reason


def test_any_damage_is_read_around_never_raised(run: Path):
    log = run_log(run)
    whole = log.read_bytes()
    rng = random.Random(7)
    for _ in range(300):
        data = bytearray(whole)
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(len(data))
            if rng.random() < 0.7:
                data[at] = rng.randrange(256)
            else:
                del data[at : at + rng.randint(1, 40)]
        log.write_bytes(bytes(data))
        appended = KIND.read_from(source(run), None, None)
        got = points(appended.committed)
        assert all(isinstance(k[0], str) for k in got)
        assert appended.resume["offset"] <= len(data) + BLOCK


def test_outside_the_served_folders_is_not_opened(run: Path, tmp_path: Path):
    other = tmp_path / "served"
    other.mkdir()
    result = KIND.read(source(run), [other])
    assert [p.reason for p in result.problems] == [OUTSIDE] and len(result.scalars) == 0


# ---------------------------------------------------------------- framing and records written here


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(number: int, wire: int, value) -> bytes:
    tag = varint(number << 3 | wire)
    if wire == 0:
        return tag + varint(value)
    if wire == 1:
        return tag + struct.pack("<d", value)
    return tag + varint(len(value)) + value


def scalar_record(key: str, step: int, value: float, *, num: int = 1, backwards: bool = False) -> bytes:
    """A ``swanlab.record.v1.Record`` holding one point; ``backwards``: its fields in reverse order (any
    order is valid protobuf)."""
    stamp = field(1, 0, 1_795_000_000 + step) + field(2, 0, 250_000_000)
    number = field(1, 1, value) if value != 0.0 else b""
    parts = [
        field(1, 2, key.encode()),
        field(2, 0, step),
        field(3, 0, 1),
        field(4, 2, stamp),
        field(5, 2, number),
    ]
    scalar = b"".join(reversed(parts) if backwards else parts)
    outer = [field(1, 0, num), field(2, 2, stamp), field(13, 2, scalar)]
    return b"".join(reversed(outer) if backwards else outer)


def write_log(path: Path, payloads: list[bytes]) -> None:
    """SwanLab's framing, as its DataStoreWriter writes it (sdk/internal/core_python/store)."""
    out = bytearray(HEADER.pack(b":SWL", 0xE1D6, 2))

    def chunk(data: bytes, kind: int) -> None:
        out.extend(CHUNK.pack(zlib.crc32(data, zlib.crc32(bytes([kind]))), len(data), kind) + data)

    for data in payloads:
        left = BLOCK - len(out) % BLOCK
        if left < CHUNK.size:
            out.extend(bytes(left))
            left = BLOCK
        if len(data) + CHUNK.size <= left:
            chunk(data, 1)
            continue
        chunk(data[: left - CHUNK.size], 2)
        data = data[left - CHUNK.size :]
        while len(data) > BLOCK - CHUNK.size:
            chunk(data[: BLOCK - CHUNK.size], 3)
            data = data[BLOCK - CHUNK.size :]
        chunk(data, 4)
    path.write_bytes(bytes(out))


def test_records_across_blocks_and_longer_than_a_block(tmp_path: Path):
    folder = tmp_path / "run-x"
    folder.mkdir()
    log_line = field(16, 2, field(1, 2, b"x" * 70_000))  # a terminal line longer than two blocks
    payloads = [scalar_record(f"tag/{i % 7}", i // 7, i * 0.5, num=i) for i in range(1500)]
    payloads.insert(700, log_line)
    write_log(folder / "run-x.swanlab", payloads)
    assert (folder / "run-x.swanlab").stat().st_size > 3 * BLOCK
    result = KIND.read(source(folder), None)
    assert result.problems == []
    got = points(result)
    assert len(got) == 1500 and all(got[(f"tag/{i % 7}", i // 7)] == i * 0.5 for i in range(1500))
    assert result.scalars["wall_time"].between(1.7e9, 1.8e9).all()


def test_a_long_log_is_read_piece_by_piece(tmp_path: Path, set_sizes):
    folder = tmp_path / "run-x"
    folder.mkdir()
    payloads = [scalar_record(f"tag/{i % 3}", i, float(i)) for i in range(3000)]
    payloads.insert(1000, field(16, 2, field(1, 2, b"z" * 50_000)))  # longer than a piece: the piece grows
    write_log(folder / "run-x.swanlab", payloads)
    whole = KIND.read(source(folder), None)
    set_sizes(tracker_batch_bytes=5000)  # as a user sets it: RL_BOARD_TRACKER_BATCH_BYTES
    pieces = KIND.read(source(folder), None)
    assert pieces.problems == whole.problems == []
    assert points(pieces) == points(whole) and len(points(whole)) == 3000


def test_resume_at_every_cut_near_block_ends(tmp_path: Path):
    folder = tmp_path / "run-x"
    folder.mkdir()
    payloads = [scalar_record(f"k{i % 5}", i, float(i)) for i in range(900)]
    payloads.insert(300, field(16, 2, field(1, 2, b"y" * 40_000)))
    write_log(folder / "run-x.swanlab", payloads)
    whole = (folder / "run-x.swanlab").read_bytes()
    cuts = [c for edge in range(BLOCK, len(whole), BLOCK) for c in range(edge - 80, edge + 12)]
    for cut in cuts:
        (folder / "run-x.swanlab").write_bytes(whole[:cut])
        first = KIND.read_from(source(folder), None, None)
        (folder / "run-x.swanlab").write_bytes(whole)
        second = KIND.read_from(source(folder), first.resume, None)
        assert first.committed.problems == second.committed.problems == [], cut
        assert len(first.committed.scalars) + len(second.committed.scalars) == 900, cut


def test_any_field_order_other_records_system_keys_and_negative_nums(tmp_path: Path):
    folder = tmp_path / "run-x"
    folder.mkdir()
    start = field(1, 0, -1) + field(10, 2, field(1, 2, b"project") + field(4, 2, b"name"))
    payloads = [
        start,
        scalar_record("a", 1, 1.5, num=-4),
        scalar_record("b", 2, 0.0, backwards=True),
        scalar_record("c", 3, -2.25, backwards=True),
        scalar_record("__swanlab__.cpu.pct", 1, 9.0),
        field(1, 0, 9) + field(12, 2, field(3, 2, b"a")),
    ]
    write_log(folder / "run-x.swanlab", payloads)
    result = KIND.read(source(folder), None)
    assert result.problems == []
    assert points(result) == {("a", 1): 1.5, ("b", 2): 0.0, ("c", 3): -2.25}


def test_an_undecodable_record_is_a_problem_and_the_rest_is_read(tmp_path: Path):
    folder = tmp_path / "run-x"
    folder.mkdir()
    bad = field(13, 2, b"\x0a\x7fabc")  # a key longer than its message
    write_log(folder / "run-x.swanlab", [scalar_record("a", 1, 1.0), bad, scalar_record("a", 2, 2.0)])
    result = KIND.read(source(folder), None)
    assert len(result.problems) == 1 and "could not be decoded" in result.problems[0].reason
    assert points(result) == {("a", 1): 1.0, ("a", 2): 2.0}


def test_garbage_records_with_sound_checksums_never_raise(tmp_path: Path):
    folder = tmp_path / "run-x"
    folder.mkdir()
    rng = random.Random(3)
    good = [scalar_record("a", i, float(i)) for i in range(200)]
    garbage = []
    for _ in range(400):
        record = bytearray(rng.choice(good) if rng.random() < 0.5 else rng.randbytes(rng.randint(0, 90)))
        for _ in range(rng.randint(1, 3)):
            if record:
                record[rng.randrange(len(record))] = rng.randrange(256)
        garbage.append(bytes(record))
    write_log(folder / "run-x.swanlab", good + garbage)
    frame = KIND.read(source(folder), None).scalars  # damaged copies may repeat a point: all rows kept
    rows = set(zip(frame["tag"], frame["step"].tolist(), frame["value"].tolist(), strict=True))
    assert all(("a", i, float(i)) in rows for i in range(200))


# ---------------------------------------------------------------- logged tables


def test_logged_tables_of_the_tiny_run(run: Path):
    echarts = run / "media" / "echarts"
    (echarts / "005-deadbeef.json").write_bytes(next(echarts.iterdir()).read_bytes())  # no record: dropped
    (table,) = logged_tables(run)
    assert (table.key, table.step, table.columns) == (
        "val/generations",
        5,
        ["step", "input", "output", "score"],
    )
    assert table.rows == [[5, "q", "a", 1.0], [5, "q2", "a2", None]]  # NaN: written as null


def test_logged_tables_without_the_log_take_the_step_from_the_name(run: Path):
    run_log(run).unlink()
    (table,) = logged_tables(run)  # every table file, as nothing says which swanlab kept
    assert table.step == 5 and table.key == "echarts table"
    assert logged_tables(run, [run / "files"]) == []  # outside: not opened


# ---------------------------------------------------------------- the local dashboard's database


SCHEMA = """
CREATE TABLE project (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE experiment (id INTEGER PRIMARY KEY, project_id INTEGER, run_id TEXT UNIQUE, name VARCHAR(100),
                         status INTEGER);
CREATE TABLE tag (id INTEGER PRIMARY KEY, experiment_id INTEGER, name VARCHAR(255), folder VARCHAR(255),
                  type VARCHAR(10));
"""


def dashboard(root: Path, *, wal_open: bool = False) -> sqlite3.Connection:
    """A swanboard-shaped ``runs.swanlab`` (WAL mode) with two experiments; the first has tag files."""
    conn = sqlite3.connect(root / "runs.swanlab", isolation_level=None)
    conn.execute("PRAGMA journal_mode=wal")
    conn.executescript(SCHEMA)
    if wal_open:
        conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute(
        "INSERT INTO experiment VALUES (1, 1, 'run-1-aaa', 'first', 1), (2, 1, 'run-2-bbb', 'second', 1)"
    )
    conn.execute(
        "INSERT INTO tag VALUES (1, 1, 'train/reward', '1', 'line'), (2, 1, 'train/kl', NULL, 'line'),"
        " (3, 1, 'samples', '3', 'text'), (4, 2, 'x', '1', 'line')"
    )
    logs = root / "run-1-aaa" / "logs"
    (logs / "1").mkdir(parents=True)
    (logs / "train%2Fkl").mkdir()
    (logs / "3").mkdir()
    line = '{{"index": {}, "data": {}, "create_time": "2026-11-25T19:07:06.825954+00:00"}}\n'
    (logs / "1" / "1000.log").write_text(
        "".join(line.format(s, v) for s, v in ((1, "0.5"), (2, "NaN"), (3, "0.0")))
    )
    (logs / "1" / "2000.log").write_text(
        line.format(1001, "Infinity") + "not json\n" + line.format(1002, "1.5")
    )
    (logs / "train%2Fkl" / "1000.log").write_text(
        line.format(1, "-0.25") + '{"index": 2, "da'
    )  # half-written
    (logs / "3" / "1000.log").write_text(line.format(1, '["a text"]'))
    (root / "run-2-bbb").mkdir()
    (root / "run-2-bbb" / "run-bbb.swanlab").write_bytes(b"")  # read from its run log instead
    return conn


def test_dashboard_experiments_without_a_run_log_are_read_from_their_lines(tmp_path: Path):
    conn = dashboard(tmp_path, wal_open=True)
    conn.execute("INSERT INTO tag VALUES (5, 1, 'late', '5', 'line')")  # only in the -wal
    db = tmp_path / "runs.swanlab"
    assert Path(f"{db}-wal").stat().st_size > 0
    before = sorted(p.name for p in tmp_path.iterdir())
    (found,) = KIND.claim_file(db)
    assert (found.part, found.label, found.files) == ("run-1-aaa", "first", (db,))
    result = KIND.read(RunSource("first", SOURCE, db, (db,), "run-1-aaa"), None)
    got = points(result)
    assert got[("train/reward", 1)] == 0.5 and math.isnan(got[("train/reward", 2)])
    assert got[("train/reward", 3)] == 0.0 and got[("train/reward", 1001)] == math.inf
    assert got[("train/reward", 1002)] == 1.5 and got[("train/kl", 1)] == -0.25
    assert len(got) == 6  # not the text tag, not the half-written line
    assert [(Path(p.file).name, p.line) for p in result.problems] == [("2000.log", 2)]
    assert result.scalars["wall_time"].tolist() == pytest.approx([1795633626.825954] * 6)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing new beside the database
    conn.close()


def test_dashboard_db_whose_experiments_all_have_run_logs_is_quiet(tmp_path: Path):
    dashboard(tmp_path).close()
    (found,) = KIND.claim_folder(tmp_path / "run-1-aaa", ["logs"], [])  # read through the database
    assert found.quiet and found.whole
    (tmp_path / "run-1-aaa" / "run-aaa.swanlab").write_bytes(b"")
    (found,) = KIND.claim_file(tmp_path / "runs.swanlab")
    assert found.quiet


def test_a_foreign_or_broken_runs_swanlab_is_named_not_read(tmp_path: Path):
    db = tmp_path / "runs.swanlab"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER, text TEXT)")
    conn.close()
    (found,) = KIND.claim_file(db)
    assert "without SwanLab's experiment and tag tables" in found.skipped
    (problem,) = KIND.read(RunSource("x", SOURCE, db, (db,), "run-1"), None).problems
    assert "not SwanLab's dashboard database" in problem.reason
    db.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 20)
    (found,) = KIND.claim_file(db)
    assert found.skipped
    assert KIND.read(RunSource("x", SOURCE, db, (db,), "run-1"), None).problems
    db.write_text("just text")
    (found,) = KIND.claim_file(db)
    assert "not a SQLite file" in found.skipped
    assert KIND.claim_file(tmp_path / "other.swanlab") == []


def test_a_locked_dashboard_db_is_read_or_named_quickly(tmp_path: Path):
    dashboard(tmp_path).close()
    locker = sqlite3.connect(tmp_path / "runs.swanlab", isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        done: list = []
        reader = threading.Thread(
            target=lambda: done.append(
                KIND.read(RunSource("x", SOURCE, tmp_path / "runs.swanlab", (), "run-1-aaa"), None)
            )
        )
        reader.start()
        reader.join(timeout=5)
        assert done and time.monotonic() - started < 3
        assert len(done[0].scalars) == 6 or done[0].problems
    finally:
        locker.execute("ROLLBACK")
        locker.close()


def test_a_run_id_that_leaves_its_folder_is_not_followed(tmp_path: Path):
    conn = dashboard(tmp_path)
    conn.execute("INSERT INTO experiment VALUES (3, 1, '../escape', 'bad', 1)")
    conn.close()
    assert [f.part for f in KIND.claim_file(tmp_path / "runs.swanlab")] == ["run-1-aaa"]
    result = KIND.read(RunSource("x", SOURCE, tmp_path / "runs.swanlab", (), "../escape"), None)
    assert result.problems and len(result.scalars) == 0
