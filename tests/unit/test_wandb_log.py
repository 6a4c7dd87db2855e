"""The W&B run log reader without wandb: a small real log (tests/data/wandb/, written by wandb 0.31 with
``tests/helpers/wandb_writer.py --variant tiny``) and logs framed here byte by byte, cut, damaged and
resumed. The same run logged through wandb itself is read in tests/trackers/test_wandb.py."""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import zlib
from pathlib import Path

import pandas as pd
import pytest

from rl_board.metrics import wandb_log
from rl_board.metrics.kind import RunSource
from rl_board.metrics.leveldb_log import Scan
from rl_board.metrics.table import merge_results
from rl_board.metrics.wandb_log import BLOCK, NOT_A_LOG, WandbKind, logged_tables
from rl_board.sources.roots import OUTSIDE
from tests.helpers import wandb_writer
from tests.helpers.tracker_truth import same_value

DATA = Path(__file__).resolve().parents[1] / "data" / "wandb"
TINY = next(DATA.glob("offline-run-*"))
KIND = WandbKind()


# ------------------------------------------------------------------ a W&B log, framed by hand


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _bytes_field(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _int_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def item(name: str, value_json: str | None, *, old: bool = False, typed: bytes = b"") -> bytes:
    """A HistoryItem: ``nested_key`` parts (wandb 0.31) or one ``key`` (``old``), an optional typed value
    (already encoded), then ``value_json``."""
    keys = (
        _bytes_field(1, name.encode())
        if old
        else b"".join(_bytes_field(2, p.encode()) for p in name.split("."))
    )
    value = _bytes_field(16, value_json.encode()) if value_json is not None else b""
    return keys + typed + value


def history(row: dict[str, str], step: int | None = None, items: list[bytes] = ()) -> bytes:
    """A Record holding a HistoryRecord (field 2): one item per ``name: JSON text``."""
    body = b"".join(_bytes_field(1, item(k, v)) for k, v in row.items()) + b"".join(
        _bytes_field(1, i) for i in items
    )
    if step is not None:
        body += _bytes_field(2, _int_field(1, step))
    return _int_field(1, 1) + _bytes_field(2, body)


def summary(row: dict[str, str]) -> bytes:
    return _bytes_field(3, b"".join(_bytes_field(1, item(k, v)) for k, v in row.items()))


def config(values: dict[str, object]) -> bytes:
    return _bytes_field(
        5, b"".join(_bytes_field(1, item(k, json.dumps(v), old=True)) for k, v in values.items())
    )


def metric(step_metric: str, *, name: str = "", glob: str = "") -> bytes:
    body = (_bytes_field(1, name.encode()) if name else b"") + (
        _bytes_field(2, glob.encode()) if glob else b""
    )
    return _bytes_field(12, body + (_bytes_field(4, step_metric.encode()) if step_metric else b""))


def frame(records: list[bytes], version: int = 0) -> tuple[bytes, list[int]]:
    """A log as wandb's writer (core/pkg/leveldb) lays it out, and where each record starts."""
    out = bytearray(b":W&B\xe1\xbe" + bytes([version]))
    starts = []
    for record in records:
        rest, first = record, True
        while True:
            room = BLOCK - len(out) % BLOCK
            if room < 7:
                out += b"\0" * room
                continue
            if first:
                starts.append(len(out))
            chunk, rest = rest[: room - 7], rest[room - 7 :]
            kind = (1 if first else 4) if not rest else (2 if first else 3)
            out += struct.pack("<IHB", zlib.crc32(bytes([kind]) + chunk), len(chunk), kind) + chunk
            first = False
            if not rest:
                break
    return bytes(out), starts


def row_of(step: int, width: int = 40) -> dict[str, str]:
    return {
        "_step": str(step),
        "_timestamp": f"{1.7e9 + step}",
        **{f"m/{i}": repr(step + i / 8) for i in range(width)},
    }


def synthetic() -> tuple[bytes, list[int]]:
    """About 5 blocks: 60 rows of 40 series, one row of 3000 (its record spans blocks), a config."""
    records = [config({"lr": 0.5, "model": {"name": "x"}})]
    records += [history(row_of(step)) for step in range(30)]
    records.append(history(row_of(30, width=3000)))
    records += [history(row_of(step)) for step in range(31, 61)]
    return frame(records)


def write_run(folder: Path, data: bytes, run_id: str = "abc") -> RunSource:
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"run-{run_id}.wandb"
    log.write_bytes(data)
    return RunSource(run="r", kind="wandb", path=folder, files=(log,))


def points(frame_: pd.DataFrame) -> dict[tuple[str, int], float]:
    return {
        (str(t), int(s)): float(v)
        for t, s, v in zip(frame_["tag"], frame_["step"], frame_["value"], strict=True)
    }


def tiny_source(tmp_path: Path | None = None) -> RunSource:
    folder = TINY
    if tmp_path is not None:
        folder = tmp_path / "wandb" / TINY.name
        shutil.copytree(TINY, folder)
    log = next(folder.glob("run-*.wandb"))
    return RunSource(run=folder.name, kind="wandb", path=folder, files=(log,))


# ------------------------------------------------------------------ the real log wandb 0.31 wrote


def test_tiny_run_reads_as_logged():
    result = KIND.read(tiny_source(), None)
    assert result.problems == []
    want: dict[tuple[str, int], float] = {}
    for step in wandb_writer.TINY_STEPS:
        row = wandb_writer.tiny_row(step)
        want.update(
            {
                ("loss", step): row["loss"],
                ("acc", step): row["acc"],
                ("flag", step): float(row["flag"]),
                ("nested.a", step): row["nested"]["a"],
                ("nested.b.c", step): row["nested"]["b"]["c"],
            }
        )
        if wandb_writer.TINY_EVAL_STEP in row:  # eval/* is stepped by eval/step, declared with a glob
            want[("eval/score", row[wandb_writer.TINY_EVAL_STEP])] = row["eval/score"]
    got = points(result.scalars)
    assert set(got) == set(want)
    assert all(same_value(got[key], want[key]) for key in want), [(k, got[k], want[k]) for k in want]
    assert math.isnan(got[("loss", 3)]) and got[("acc", 5)] == math.inf and got[("acc", 6)] == -math.inf
    histogram = result.histograms.iloc[0]
    counts, edges = wandb_writer.TINY_HISTOGRAM
    assert (histogram["tag"], histogram["step"]) == ("hist", 4) and len(result.histograms) == 1
    assert list(histogram["count"]) == counts and list(histogram["left"]) + [histogram["right"][-1]] == edges
    for _, series in result.scalars.groupby("tag"):
        walls = series.sort_values("step")["wall_time"]
        assert walls.notna().all() and walls.is_monotonic_increasing


def test_tiny_run_facts():
    extras = KIND.read(tiny_source(), None).extras
    assert json.loads(extras["config_text"]) == {**wandb_writer.TINY_CONFIG, "late": True}
    assert extras["hparams"]["model.name"] == "tiny" and extras["hparams"]["late"] is True
    assert extras["summary"]["best"] == 0.9 and extras["summary"]["loss"] == 0.125
    assert extras["summary"]["samples"]["_type"] == "table-file"
    assert "_wandb" not in extras["summary"] and not any(k.startswith("_wandb.") for k in extras["summary"])
    assert extras["step_source"].startswith("eval/step (the run's declared step metric)")
    assert "_step" in extras["step_source"] and "other 40 points" in extras["step_source"]
    assert extras["wandb_run"]["name"] == "tiny"


def test_tiny_run_table():
    (table,) = logged_tables(TINY)
    assert (table.key, table.step) == ("samples", 6)
    assert (table.columns, table.rows) == tuple(wandb_writer.TINY_TABLE)
    assert table.where.endswith(".table.json")


def test_a_missing_table_file_is_named(tmp_path):
    source = tiny_source(tmp_path)
    for path in (source.path / "files").rglob("*.table.json"):
        path.unlink()
    (table,) = logged_tables(source.path)
    assert table.rows == [] and "(missing)" in table.where


def test_claims():
    files = [p.name for p in TINY.iterdir()]
    (found,) = KIND.claim_folder(TINY, ["files"], files)
    assert found.whole and found.reason == "W&B run (offline)" and found.files == (TINY / files[0],)
    assert KIND.claim_folder(DATA, [TINY.name, "latest-run"], ["debug.log", "debug-internal.log"]) == []
    assert KIND.claim_folder(DATA / "latest-run", ["files"], files) == []  # wandb's link to the last run
    online = KIND.claim_folder(Path("/x/run-20260101_000000-abc"), ["files"], ["run-abc.wandb"])
    assert [f.reason for f in online] == ["W&B run (online)"]
    assert KIND.claim_folder(Path("/x/run-20260101_000000-abc"), ["files"], ["output.log"]) == []
    assert KIND.may_claim(Path("run-abc.wandb")) and not KIND.may_claim(Path("abc.wandb.synced"))


def test_links_in_a_run_folder_do_not_matter(tmp_path):
    source = tiny_source(tmp_path)
    (source.path / "logs").mkdir()
    (source.path / "logs" / "debug-core.log").symlink_to(tmp_path / "home" / ".cache" / "gone.log")
    (source.path.parent / "latest-run").symlink_to(source.path.name)
    walked = []
    for folder, dirs, files in os.walk(tmp_path / "wandb"):
        walked += KIND.claim_folder(Path(folder), dirs, files)
    assert [f.path for f in walked] == [source.path]
    pd.testing.assert_frame_equal(KIND.read(source, None).scalars, KIND.read(tiny_source(), None).scalars)


# ------------------------------------------------------------------ a log still being written


def _cuts(data: bytes, starts: list[int]) -> list[int]:
    """Offsets to cut a log at: in the header, around every record start, inside chunk headers and
    payloads, around block ends."""
    cuts = {0, 3, 6, 7, 8, len(data)} | set(range(0, len(data), 4999))
    for at in starts[:: max(1, len(starts) // 12)]:
        cuts |= {at - 1, at, at + 3, at + 7, at + 20}
    for block in range(BLOCK, len(data), BLOCK):
        cuts |= {block - 8, block - 3, block, block + 3, block + 7, block + 8}
    return sorted(c for c in cuts if 0 <= c <= len(data))


@pytest.mark.parametrize("which", ["tiny", "synthetic"])
def test_a_cut_log_reads_every_complete_record_and_resumes(tmp_path, which):
    if which == "tiny":
        data = next(TINY.glob("run-*.wandb")).read_bytes()
        starts = [start for start, _ in wandb_log._records(data, Scan(7), "x")]
    else:
        data, starts = synthetic()
    whole_source = write_run(tmp_path / "whole", data)
    whole = KIND.read(whole_source, None)
    assert whole.problems == [] and len(whole.scalars) > 0
    source = write_run(tmp_path / "cut", b"")
    log = source.files[0]
    for cut in _cuts(data, starts):
        log.write_bytes(data[:cut])
        first = KIND.read_from(source, None, None)
        assert first.committed.problems == [] and first.tail.problems == [], cut
        offset = first.resume["offset"]
        assert offset <= cut and (offset in starts or offset in (0, 7, cut)), (cut, offset)
        assert json.loads(json.dumps(first.resume)) == first.resume
        log.write_bytes(data)
        rest = KIND.read_from(source, first.resume, None)
        assert rest.committed.problems == [] and rest.resume["offset"] == len(data), cut
        joined = merge_results([first.committed, rest.committed])
        pd.testing.assert_frame_equal(joined.scalars, whole.scalars)
        pd.testing.assert_frame_equal(joined.histograms, whole.histograms)
        assert json.dumps(rest.committed.extras, sort_keys=True) == json.dumps(
            whole.extras, sort_keys=True
        ), cut


def test_a_record_spanning_blocks_is_read(tmp_path):
    data, _ = synthetic()
    scalars = KIND.read(write_run(tmp_path, data), None).scalars
    assert len(scalars[scalars["step"] == 30]) == 3000 and len(scalars) == 60 * 40 + 3000
    assert points(scalars)[("m/2999", 30)] == 30 + 2999 / 8


def test_zeroed_space_at_the_end_waits_for_data(tmp_path):
    data, starts = synthetic()
    source = write_run(tmp_path, data[: starts[20]] + b"\0" * 500)  # preallocated, not yet written
    first = KIND.read_from(source, None, None)
    assert first.committed.problems == [] and first.tail.problems == []
    assert first.resume["offset"] == starts[20]
    source.files[0].write_bytes(data)
    rest = KIND.read_from(source, first.resume, None)
    total = merge_results([first.committed, rest.committed]).scalars
    pd.testing.assert_frame_equal(total, KIND.read(source, None).scalars)


def test_a_shorter_log_than_the_last_read_is_named(tmp_path):
    data, _ = synthetic()
    source = write_run(tmp_path, data[:1000])
    appended = KIND.read_from(source, {"offset": 5000}, None)
    assert len(appended.committed.scalars) == 0 and "shorter" in appended.tail.problems[0].reason


# ------------------------------------------------------------------ damage


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


def test_a_bad_checksum_is_one_problem_and_the_rest_is_read(tmp_path):
    data, starts = synthetic()
    whole = points(KIND.read(write_run(tmp_path / "whole", data), None).scalars)
    bad = starts[5]  # the record of step 4 (after the config record)
    result = KIND.read(write_run(tmp_path / "bad", _flip(data, bad + 30)), None)
    (problem,) = result.problems
    assert "checksum" in problem.reason and f"at byte {bad}" in problem.reason
    assert points(result.scalars) == {k: v for k, v in whole.items() if k[1] != 4}


def test_damage_inside_a_record_spanning_blocks_loses_that_record_only(tmp_path):
    data, starts = synthetic()
    big = starts[31]  # the row of 3000 series: FIRST, MIDDLE..., LAST chunks
    result = KIND.read(write_run(tmp_path, _flip(data, big + 40_000)), None)
    (problem,) = result.problems
    assert f"the record from byte {big} is lost" in problem.reason
    assert sorted(set(result.scalars["step"])) == [s for s in range(61) if s != 30]


def test_a_damaged_last_chunk_is_a_tail_problem(tmp_path):
    data, starts = synthetic()
    source = write_run(tmp_path, _flip(data, len(data) - 5))
    first = KIND.read_from(source, None, None)
    assert first.committed.problems == [] and len(first.tail.problems) == 1
    assert first.resume["offset"] == starts[-1]
    source.files[0].write_bytes(data)  # it was a write still under way
    rest = KIND.read_from(source, first.resume, None)
    assert rest.committed.problems == [] and set(rest.committed.scalars["step"]) == {60}


def test_a_record_that_does_not_decode_is_a_problem(tmp_path):
    records = [history(row_of(1)), b"\xff\xff\xff\xff", history(row_of(2))]
    data, starts = frame(records)
    result = KIND.read(write_run(tmp_path, data), None)
    (problem,) = result.problems
    assert f"at byte {starts[1]}" in problem.reason and "does not decode" in problem.reason
    assert sorted(set(result.scalars["step"])) == [1, 2]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", None),
        (b":W&", None),
        (b":W&B\xe1\xbe\x00", None),
        (b"PK\x03\x04 not a log at all", NOT_A_LOG),
        (b":W&B\xe1\xbe\x01" + b"\0" * 40, "version 1"),
    ],
)
def test_headers(tmp_path, content, why):
    appended = KIND.read_from(write_run(tmp_path, content), None, None)
    assert len(appended.committed.scalars) == 0 and appended.tail.problems == []
    if why is None:
        assert appended.committed.problems == [] and appended.resume["offset"] <= len(content)
    else:
        assert [why in p.reason for p in appended.committed.problems] == [True]


def test_unreadable_logs_are_problems(tmp_path):
    dangling = tmp_path / "a" / "run-x.wandb"
    dangling.parent.mkdir()
    dangling.symlink_to(tmp_path / "gone.wandb")
    folder = tmp_path / "b"
    (folder / "run-x.wandb").mkdir(parents=True)
    for path in (dangling, folder / "run-x.wandb"):
        source = RunSource(run="r", kind="wandb", path=path.parent, files=(path,))
        (problem,) = KIND.read(source, None).problems
        assert problem.reason.startswith("cannot read the W&B run log")


def test_a_log_linked_from_outside_the_roots_is_not_opened(tmp_path):
    data, _ = synthetic()
    outside = write_run(tmp_path / "outside", data).files[0]
    root = tmp_path / "root" / "offline-run-1-abc"
    root.mkdir(parents=True)
    (root / "run-abc.wandb").symlink_to(outside)
    source = RunSource(run="r", kind="wandb", path=root, files=(root / "run-abc.wandb",))
    result = KIND.read(source, [tmp_path / "root"])
    assert [p.reason for p in result.problems] == [OUTSIDE] and len(result.scalars) == 0


# ------------------------------------------------------------------ what the records say


def test_a_declared_step_metric_and_rows_without_it(tmp_path):
    records = [
        history({"_step": "0", "loss": "1"}),
        metric("train/global_step", glob="*"),
        history({"_step": "1", "loss": "2", "train/global_step": "10"}),
        history({"_step": "2", "loss": "3"}),
        history({"_step": "3", "loss": "4", "train/global_step": "10.5"}),
        history({"_step": "4", "loss": "5", "train/global_step": "11", "_private": "7"}),
    ]
    result = KIND.read(write_run(tmp_path, frame(records)[0]), None)
    # before the definition: _step; with it: the metric's value; a row without it or with a fraction: _step
    assert points(result.scalars) == {
        ("loss", 0): 1,
        ("loss", 10): 2,
        ("loss", 2): 3,
        ("loss", 3): 4,
        ("loss", 11): 5,
        ("_private", 4): 7,
    }
    text = result.extras["step_source"]
    assert text.startswith("train/global_step (the run's declared step metric)")
    assert "2 points logged in rows without it are at _step" in text


def test_values_that_are_not_numbers_are_not_points(tmp_path):
    row = {
        "_step": "1",
        "s": '"NaN"',
        "n": "null",
        "l": "[1,2]",
        "d": '{"a":1}',
        "t": "true",
        "f": "false",
        "x": "-1.5e-3",
        "i": "Infinity",
    }
    got = points(KIND.read(write_run(tmp_path, frame([history(row)])[0]), None).scalars)
    assert got == {("t", 1): 1.0, ("f", 1): 0.0, ("x", 1): -1.5e-3, ("i", 1): math.inf}


def test_old_keys_typed_values_and_long_items(tmp_path):
    double = b"\x31" + struct.pack("<d", 2.5)  # HistoryItem.number (6), a double
    zigzag = _int_field(5, 2 * 7)  # HistoryItem.integer (5): sint64 7
    items = [
        item("old", "4", old=True),
        item("typed", None, typed=double),
        item("int", None, typed=zigzag),
        item("k" * 200, "1.25"),
        item("long", "0." + "1" * 130),
        item("both", "3", typed=double),
    ]
    got = points(KIND.read(write_run(tmp_path, frame([history({}, step=9, items=items)])[0]), None).scalars)
    assert got == {
        ("old", 9): 4,
        ("typed", 9): 2.5,
        ("int", 9): 7,
        ("k" * 200, 9): 1.25,
        ("long", 9): float("0." + "1" * 130),
        ("both", 9): 3,
    }


def test_summary_updates_in_order(tmp_path):
    records = [summary({"a": "1", "b": "2"}), history(row_of(1, width=1)), summary({"a": "3", "c.d": '"x"'})]
    extras = KIND.read(write_run(tmp_path, frame(records)[0]), None).extras
    assert {k: extras["summary"][k] for k in ("a", "b", "c.d")} == {"a": 3, "b": 2, "c.d": "x"}
    assert json.loads(extras["config_text"] or "{}") == {} and extras["hparams"] == {}


def test_tables_are_given_once_per_step(tmp_path):
    folder = tmp_path / "offline-run-1-abc"
    (folder / "files" / "media" / "table").mkdir(parents=True)
    (folder / "files" / "media" / "table" / "t_1_aa.table.json").write_text(
        '{"columns": ["a"], "data": [[1]]}'
    )

    def ref(path: str, sha: str) -> dict[str, str]:
        return {
            "t._type": '"table-file"',
            "t.path": json.dumps(path),
            "t.sha256": json.dumps(sha),
            "t.nrows": "1",
        }

    records = [
        history({"_step": "1", **ref("media/table/t_1_aa.table.json", "aa")}),
        history({"_step": "1", **ref("media/table/t_1_aa.table.json", "aa")}),
        history({"_step": "2", **ref("media/table/t_2_bb.table.json", "bb")}),
        history({"_step": "3", **ref("../../../etc/passwd", "cc")}),
    ]
    write_run(folder, frame(records)[0])
    tables = logged_tables(folder)
    assert [(t.key, t.step, t.rows) for t in tables] == [("t", 1, [[1]]), ("t", 2, []), ("t", 3, [])]
    assert "(missing)" in tables[1].where and "not under the run's files folder" in tables[2].where
    assert len(KIND.read(RunSource("r", "wandb", folder), None).scalars) == 0  # t.nrows is not a series


def test_small_batches_read_the_same(tmp_path, set_sizes):
    records = [metric("train/global_step", glob="*")]
    records += [history({**row_of(step, width=5), "train/global_step": str(step // 2)}) for step in range(40)]
    records += [summary({"best": "1.5"}), config({"late": 1})]
    source = write_run(tmp_path, frame(records)[0])
    whole = KIND.read(source, None)
    set_sizes(tracker_batch_bytes=700)  # as a user sets it: RL_BOARD_TRACKER_BATCH_BYTES
    batched = KIND.read(source, None)
    pd.testing.assert_frame_equal(batched.scalars, whole.scalars)
    assert json.dumps(batched.extras, sort_keys=True) == json.dumps(whole.extras, sort_keys=True)
    assert set(whole.scalars["step"]) == set(range(20)) and whole.extras["summary"]["best"] == 1.5


def test_a_histogram_is_at_its_rows_declared_step(tmp_path):
    histogram = {"h._type": '"histogram"', "h.bins": "[0,1,2]", "h.values": "[3,4]"}
    records = [
        metric("train/global_step", glob="*"),
        history({"_step": "7", "_timestamp": "1.5e9", "train/global_step": "2", **histogram}),
    ]
    result = KIND.read(write_run(tmp_path, frame(records)[0]), None)
    (row,) = result.histograms.to_dict("records")
    assert (row["tag"], row["step"], row["wall_time"]) == ("h", 2, 1.5e9)
    assert (list(row["left"]), list(row["right"]), list(row["count"])) == ([0, 1], [1, 2], [3, 4])
    assert len(result.scalars) == 0  # h.values / h.bins are the histogram, not series


def test_a_fifo_named_like_a_log_is_not_opened(tmp_path):
    folder = tmp_path / "offline-run-1-abc"
    folder.mkdir()
    os.mkfifo(folder / "run-abc.wandb")
    (problem,) = KIND.read(RunSource("r", "wandb", folder, (folder / "run-abc.wandb",)), None).problems
    assert "not a regular file" in problem.reason
    assert logged_tables(folder) == []
