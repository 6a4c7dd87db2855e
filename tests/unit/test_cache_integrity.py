"""The cache notices what it must: a same-length rewrite before growth, a manifest altered but still JSON."""

from __future__ import annotations

import json
import random
from pathlib import Path

from rl_board.rollouts.cache import sync as cache
from rl_board.rollouts.store import RolloutStore
from tests.unit.test_cache import line, make_run


def test_same_length_rewrite_then_append_is_read_again(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(500))  # the first line lies far before the last 4 KB
    f = next(run.glob("*.jsonl"))
    store = RolloutStore.open(run, cache_dir=cache_dir)
    text = f.read_text()
    edited = text.replace('"reward": 1.0', '"reward": 0.0', 1)  # the first line, same length
    assert len(edited) == len(text) and edited != text
    f.write_text(edited + line(500))
    store.refresh()
    rewards = store.samples(step=0, columns=["reward"])["reward"].tolist()
    assert rewards == [0.0] and store.num_samples == 501


def test_an_edit_in_the_middle_of_a_large_file_is_seen(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(20_000))
    f = next(run.glob("*.jsonl"))
    store = RolloutStore.open(run, cache_dir=cache_dir)
    data = bytearray(f.read_bytes())
    windows = cache._windows(len(data))
    start, length = windows[len(windows) // 2]
    pos = data.index(b'"reward": 1.0', start)  # a value inside a probed window
    assert pos < start + length
    data[pos + 10 : pos + 13] = b"0.0"
    f.write_bytes(bytes(data) + line(20_000).encode())
    store.refresh()
    assert store.num_samples == 20_001
    assert store.samples(columns=["reward"])["reward"].sum() == 20_000.0  # one 1.0 became 0.0, one added


def test_manifest_altered_but_still_json_is_rebuilt(tmp_path: Path, cache_dir: Path) -> None:
    run = make_run(tmp_path, range(30))
    RolloutStore.open(run, cache_dir=cache_dir)
    manifest = next(cache_dir.rglob("manifest.json"))
    rng = random.Random(0)
    for _ in range(40):
        data = json.loads(manifest.read_text())
        entry = data["files"][0]
        key = rng.choice(["samples", "lines", "consumed", "bad_count"])
        entry[key] = int(entry[key]) + rng.randint(1, 5)
        manifest.write_text(json.dumps(data))  # a valid manifest with one wrong count, old crc
        store = RolloutStore.open(run, cache_dir=cache_dir)
        assert store.report.rebuilt_cache and store.num_samples == 30 and store.report.samples == 30
