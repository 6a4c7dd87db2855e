"""The metrics index (every run's tags without its points), reading chosen runs only, parallel reads,
the background build and the TFRecord reader's checks."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from rl_board.metrics import parallel
from rl_board.metrics.background import index_build
from rl_board.metrics.index import metrics_index
from rl_board.metrics.reader import load_metrics, tag_summary
from rl_board.metrics.tensorboard import read_event_files
from tests.helpers.metric_fixtures import write_demo_tree, write_tensorboard_run


def small_run(folder: Path, *, steps: int = 5, tags: int = 3, offset: float = 0.0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    writer = EventFileWriter(str(folder))
    for step in range(steps):
        values = [
            summary_pb2.Summary.Value(tag=f"t/{k}", simple_value=k + step + offset) for k in range(tags)
        ]
        writer.add_event(
            event_pb2.Event(step=step, wall_time=float(step), summary=summary_pb2.Summary(value=values))
        )
    writer.close()
    return next(folder.glob("events.out.tfevents.*"))


def test_index_holds_what_a_full_read_holds(tmp_path):
    root = write_demo_tree(tmp_path / "root", unstable=True)
    index = metrics_index(root, cache_dir=tmp_path / "cache")
    bundle = load_metrics(root)
    assert [r.run for r in index.runs] == [r.run for r in bundle.runs]
    for info in index.runs:
        points = bundle.scalars[bundle.scalars["run"] == info.run]
        assert info.tags == tag_summary(points) and info.tags  # every run here has scalars
        hist = bundle.histograms
        assert info.histogram_tags == sorted(set(hist.loc[hist["run"] == info.run, "tag"]))
        assert info.kind == bundle.run(info.run).kind
    trl = index.run("tb/trl_run")
    assert trl.tags["env/reward_mean"] == {"points": 40, "first_step": 0, "last_step": 39}
    assert [p.reason for p in index.problems] == [p.reason for p in bundle.problems]
    assert [p.file for p in index.skipped] == [p.file for p in bundle.skipped]


def test_index_comes_back_from_its_file_until_a_file_changes(tmp_path):
    root = tmp_path / "root"
    for k in range(3):
        small_run(root / f"run{k}")
    cache = tmp_path / "cache"
    first = metrics_index(root, cache_dir=cache)
    again = metrics_index(root, cache_dir=cache)
    assert not first.from_cache and again.from_cache
    assert [r.to_dict() for r in again.runs] == [r.to_dict() for r in first.runs]
    time.sleep(0.01)
    small_run(root / "run1", steps=9)  # a second event file: the run grew
    grown = metrics_index(root, cache_dir=cache)
    assert not grown.from_cache
    assert grown.run("run1").tags["t/0"] == {"points": 14, "first_step": 0, "last_step": 8}
    assert grown.run("run0").tags == first.run("run0").tags


def test_index_of_a_confined_server_is_not_the_cli_index(tmp_path):
    root = tmp_path / "root"
    small_run(root / "run0")
    cache = tmp_path / "cache"
    metrics_index(root, cache_dir=cache)
    confined = metrics_index(root, cache_dir=cache, allowed_roots=[root.resolve()])
    assert not confined.from_cache


def test_chosen_runs_are_read_and_no_other(tmp_path):
    root = tmp_path / "root"
    for k in range(4):
        small_run(root / f"run{k}", offset=k)
    cache = tmp_path / "cache"
    bundle = load_metrics(root, cache_dir=cache, runs=["run2"])
    assert [r.run for r in bundle.runs] == ["run2"]
    assert set(bundle.scalars["run"]) == {"run2"} and len(bundle.scalars) == 15
    entries = [p for p in cache.iterdir() if p.is_dir()]
    assert len(entries) == 1  # only the chosen run was parsed and cached


def test_parallel_read_equals_a_serial_read(tmp_path):
    root = tmp_path / "root"
    count = parallel.MIN_PARALLEL + 6
    for k in range(count):
        small_run(root / f"r{k:03d}", steps=3, tags=2, offset=k)
    assert parallel.workers_wanted(count, 2) == 2
    serial = load_metrics(root, workers=1)
    both = load_metrics(root, workers=2)
    assert [r.to_dict() for r in both.runs] == [r.to_dict() for r in serial.runs]
    assert both.scalars.equals(serial.scalars)
    seen: list[tuple[int, int]] = []
    index = metrics_index(
        root, cache_dir=tmp_path / "cache", workers=2, progress=lambda d, t: seen.append((d, t))
    )
    assert len(index.runs) == count and seen[0] == (0, count) and seen[-1] == (count, count)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_background_build_reports_progress_and_ends_with_the_index(tmp_path):
    root = tmp_path / "root"
    for k in range(5):
        small_run(root / f"run{k}")
    build = index_build(root, tmp_path / "cache")
    assert index_build(root, tmp_path / "cache") is build  # one build per root, joined not restarted
    build.thread.join(timeout=60)
    assert not build.running and build.error == ""
    assert build.done == build.total == 5 and len(build.index.runs) == 5


def test_a_damaged_record_in_the_middle_keeps_what_came_before(tmp_path):
    path = small_run(tmp_path / "run", steps=6)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped bit inside some record's payload or header
    path.write_bytes(bytes(data))
    result = read_event_files([path], "run")
    kept = result.scalars["step"].nunique()
    assert 1 <= kept < 6
    assert len(result.problems) == 1 and "incomplete or damaged" in result.problems[0].reason
    assert str(path) == result.problems[0].file


def test_empty_and_unreadable_event_files_are_problems_not_errors(tmp_path):
    empty = tmp_path / "a" / "events.out.tfevents.1.host"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    assert read_event_files([empty], "a").problems == []
    gone = tmp_path / "b" / "events.out.tfevents.2.host"
    result = read_event_files([gone], "b")
    assert len(result.problems) == 1 and "cannot read event file" in result.problems[0].reason


@pytest.mark.skipif(not hasattr(os, "nice"), reason="no os.nice on this platform")
def test_niced_workers_still_read_everything(tmp_path):
    items = list(range(parallel.MIN_PARALLEL + 1))
    out = parallel.map_batches(_double, items, workers=2, niceness=5)
    assert out == [2 * i for i in items]


def _double(batch: list[int]) -> list[int]:
    return [2 * i for i in batch]


def test_writer_run_reads_the_same_as_before_the_fast_path(tmp_path):
    """Old-style and tensor scalars together stay in file order (both go through one list)."""
    write_tensorboard_run(tmp_path / "tb", steps=4)
    result = read_event_files(sorted((tmp_path / "tb").glob("events.out.tfevents.*")), "tb")
    frame = result.scalars
    assert list(frame["step"]) == sorted(frame["step"])  # one event per step, written in order
    assert set(frame["tag"]) >= {"actor/pg_loss", "env/reward_mean"}
    assert frame.loc[frame["tag"] == "actor/pg_loss", "value"].round(6).tolist() == [0.0, -0.01, -0.02, -0.03]
