"""The columnar cache: hits, growth, half-written lines, replacement, damage."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from rl_board.rollouts.cache import sync as cache
from rl_board.rollouts.store import RolloutStore


def line(step: int, reward: float = 1.0) -> str:
    return json.dumps({"step": step, "prompt": "p", "response": "r", "reward": reward}) + "\n"


def make_run(tmp_path: Path, steps: range) -> Path:
    run = tmp_path / "run"
    run.mkdir(parents=True, exist_ok=True)
    (run / "r0.jsonl").write_text("".join(line(s) for s in steps))
    return run


def test_second_open_reads_only_the_cache(train_run: Path, cache_dir: Path) -> None:
    first = RolloutStore.open(train_run, cache_dir=cache_dir)
    assert not first.report.from_cache and first.report.parsed_bytes > 0
    second = RolloutStore.open(train_run, cache_dir=cache_dir)
    assert second.report.from_cache and second.report.parsed_bytes == 0
    assert second.samples().equals(first.samples())


def test_cache_is_never_written_next_to_the_logs(train_run: Path, cache_dir: Path) -> None:
    before = sorted(os.listdir(train_run))
    os.chmod(train_run, stat.S_IRUSR | stat.S_IXUSR)  # read-only log folder
    try:
        store = RolloutStore.open(train_run, cache_dir=cache_dir)
    finally:
        os.chmod(train_run, stat.S_IRWXU)
    assert store.num_samples == 48
    assert sorted(os.listdir(train_run)) == before
    assert list(cache_dir.glob("runs/*/seg-*.arrow"))


def test_growth_reads_only_the_appended_bytes(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(3))
    store = RolloutStore.open(run, cache_dir=cache_dir)
    appended = line(3) + line(4)
    with open(run / "r0.jsonl", "a") as f:
        f.write(appended)
    assert store.refresh()
    assert store.report.parsed_bytes == len(appended)
    assert store.steps == [0, 1, 2, 3, 4]
    assert store.samples()["line"].tolist() == [1, 2, 3, 4, 5]
    reopened = RolloutStore.open(run, cache_dir=cache_dir)
    assert reopened.report.from_cache and reopened.num_samples == 5


def test_half_written_line_waits_for_its_newline(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(2))
    partial = line(2)
    with open(run / "r0.jsonl", "a") as f:
        f.write(partial[:10])
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.num_samples == 2
    assert store.report.bad_line_count == 0
    assert store.report.files[0].pending_bytes == 10
    with open(run / "r0.jsonl", "a") as f:
        f.write(partial[10:])
    assert store.refresh()
    assert store.steps == [0, 1, 2]
    assert store.report.bad_line_count == 0


def test_replaced_or_shrunk_file_is_read_again(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(5))
    RolloutStore.open(run, cache_dir=cache_dir)
    (run / "r0.jsonl").write_text(line(7, 0.5) + line(8, 0.5))  # shorter, different
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert not store.report.from_cache
    assert store.steps == [7, 8]
    (run / "r0.jsonl").write_text("".join(line(s, 2.0) for s in range(10, 20)))  # longer, different prefix
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.steps == list(range(10, 20))
    assert store.num_samples == 10


def test_new_and_removed_files(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(2))
    store = RolloutStore.open(run, cache_dir=cache_dir)
    (run / "r1.jsonl").write_text(line(5))
    assert store.refresh() and store.steps == [0, 1, 5]
    (run / "r0.jsonl").unlink()
    assert store.refresh() and store.steps == [5]
    assert not store.refresh()  # nothing changed


def test_corrupt_manifest_is_rebuilt(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(4))
    RolloutStore.open(run, cache_dir=cache_dir)
    manifest = cache.run_cache_dir(cache_dir, run) / "manifest.json"
    manifest.write_text("{ not json")
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.report.rebuilt_cache and store.num_samples == 4


def test_foreign_version_is_rebuilt(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(4))
    RolloutStore.open(run, cache_dir=cache_dir)
    manifest = cache.run_cache_dir(cache_dir, run) / "manifest.json"
    data = json.loads(manifest.read_text())
    data["version"] = -1
    manifest.write_text(json.dumps(data))
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.report.rebuilt_cache and not store.report.from_cache and store.num_samples == 4


def test_damaged_segment_is_detected_and_rebuilt(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(50))
    RolloutStore.open(run, cache_dir=cache_dir)
    segment = next(cache.run_cache_dir(cache_dir, run).glob("seg-*.arrow"))
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one flipped byte
    segment.write_bytes(bytes(data))
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.report.rebuilt_cache
    assert store.samples()["reward"].tolist() == [1.0] * 50


def test_missing_segment_is_rebuilt(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(3))
    RolloutStore.open(run, cache_dir=cache_dir)
    next(cache.run_cache_dir(cache_dir, run).glob("seg-*.arrow")).unlink()
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.report.rebuilt_cache and store.num_samples == 3


def test_default_cache_dir_follows_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RL_BOARD_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.default_cache_dir() == tmp_path / "xdg" / "rl-board"
    monkeypatch.setenv("RL_BOARD_CACHE_DIR", str(tmp_path / "explicit"))
    assert cache.default_cache_dir() == tmp_path / "explicit"


def test_progress_reports_real_totals(train_run: Path, cache_dir: Path) -> None:
    seen: list[tuple[int, int]] = []
    RolloutStore.open(train_run, cache_dir=cache_dir, progress=lambda done, total: seen.append((done, total)))
    total = sum(p.stat().st_size for p in train_run.glob("*.jsonl"))
    assert seen and all(t == total for _, t in seen)
    assert seen[-1][0] == total


def test_following_a_run_all_day_keeps_few_segments(tmp_path: Path, cache_dir: Path) -> None:
    from rl_board.rollouts.cache import compact

    run = make_run(tmp_path, range(1))
    store = RolloutStore.open(run, cache_dir=cache_dir)
    for i in range(1, 60):  # one refresh per appended line: one small segment each
        with open(run / "r0.jsonl", "a") as f:
            f.write(line(i, reward=float(i)))
        assert store.refresh()
    segments = list(cache.run_cache_dir(cache_dir, run).glob("seg-*.arrow"))
    assert len(segments) <= compact.MAX_SMALL + 1
    frame = store.samples()
    assert frame["step"].tolist() == list(range(60))
    assert frame["line"].tolist() == list(range(1, 61))
    assert frame["reward"].tolist() == [1.0] + [float(i) for i in range(1, 60)]
    reopened = RolloutStore.open(run, cache_dir=cache_dir)
    assert reopened.report.from_cache and reopened.samples().equals(frame)


def _manifest(cache_dir: Path, run: Path) -> tuple[int, dict]:
    path = cache.run_cache_dir(cache_dir, run) / "manifest.json"
    return path.stat().st_mtime_ns, {e["name"]: e for e in json.loads(path.read_text())["files"]}


def test_an_open_writes_the_manifest_only_when_something_changed(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(10))
    (run / "r1.jsonl").write_text(line(3))
    RolloutStore.open(run, cache_dir=cache_dir)
    os.utime(cache.run_cache_dir(cache_dir, run) / "manifest.json", ns=(1, 1))  # any rewrite moves it
    RolloutStore.open(run, cache_dir=cache_dir)
    assert _manifest(cache_dir, run)[0] == 1  # nothing changed: not written
    os.utime(run / "r0.jsonl", ns=(5_000_000_000, 5_000_000_000))  # touched, same bytes: not read again
    again = RolloutStore.open(run, cache_dir=cache_dir)
    assert again.report.parsed_bytes == 0
    when, files = _manifest(cache_dir, run)
    assert when != 1 and files["r0.jsonl"]["mtime_ns"] == 5_000_000_000  # its new mtime kept
    (run / "r1.jsonl").unlink()
    RolloutStore.open(run, cache_dir=cache_dir)
    assert set(_manifest(cache_dir, run)[1]) == {"r0.jsonl"}  # a file gone: written
