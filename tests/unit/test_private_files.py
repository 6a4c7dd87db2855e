"""What rl-board writes is its user's alone: every file 0600 and every folder 0700, whatever the umask.

A rollout run is opened, grown and opened again (Arrow segments, manifest, lock, summary), the metrics index
and tables are built (index file, cache entries) and a label is written (SQLite file), in a child process
with a umask of 022 and of 000; then every file and folder under the cache and data folders is checked."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rl_board import private

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "rollout_samples"

WORK = """
import os, sys
from pathlib import Path
os.umask(int(sys.argv[1], 8))
logs, cache, data = (Path(p) for p in sys.argv[2:5])
import rl_board
from rl_board import api
from rl_board.rollouts.labels import LabelStore

run = rl_board.open(logs / "ppo_math", cache_dir=cache)
assert run.num_samples > 0
with open(logs / "ppo_math" / "rollout_data_rank_0.jsonl", "a") as f:  # the run grows: a new segment
    f.write(open(logs / "ppo_math" / "rollout_data_rank_1.jsonl").readline())
grown = rl_board.open(logs / "ppo_math", cache_dir=cache)
assert grown.num_samples == run.num_samples + 1
api.list_runs(logs, api.Served(cache))  # the runs' summaries
rl_board.open(logs / "grpo_math", cache_dir=cache)
assert rl_board.metrics_index(logs / "grpo_math", cache_dir=cache).runs
assert len(rl_board.scalars(logs / "grpo_math", cache_dir=cache))
store = LabelStore(data / "rl-board" / "labels.sqlite")
store.put(run="ppo_math", step=1, file="f", line=1, sample_digest="d", tag="loop", note="n")
assert store.put(run="ppo_math", step=1, file="f", line=2, sample_digest="e", tag="good").tag == "good"
"""


def modes(*roots: Path) -> dict[str, str]:
    """Every file and folder under the roots (the roots too) with its permission bits."""
    out = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            out[str(path)] = oct(stat.S_IMODE(path.lstat().st_mode))
    return out


@pytest.mark.parametrize("umask", ["022", "000"])
def test_every_file_is_0600_and_every_folder_0700(tmp_path: Path, umask: str) -> None:
    logs = tmp_path / "logs"
    for name in ("ppo_math", "grpo_math"):
        shutil.copytree(SAMPLES / name, logs / name)
    cache, data = tmp_path / "home" / ".cache" / "rl-board", tmp_path / "home" / ".local" / "share"
    out = subprocess.run(
        [sys.executable, "-c", WORK, umask, str(logs), str(cache), str(data)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    found = modes(tmp_path / "home")
    files = {p: m for p, m in found.items() if Path(p).is_file()}
    folders = {p: m for p, m in found.items() if Path(p).is_dir() and Path(p) != tmp_path / "home"}
    names = {Path(p).name for p in files}
    assert {"manifest.json", ".lock", "summary.json", "labels.sqlite", "meta.json"} <= names, names
    assert any(n.startswith("seg-") and n.endswith(".arrow") for n in names), names
    assert sum(Path(p).parent.name == "index" for p in files) == 1, files  # the metrics index file
    assert {p: m for p, m in files.items() if m != "0o600"} == {}
    assert {p: m for p, m in folders.items() if m != "0o700"} == {}
    assert not list(logs.parent.glob("home/**/*.tmp"))


def test_the_helpers_under_umask_000(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        folder = private.make_dir(tmp_path / "a" / "b")
        private.write_text(folder / "t.txt", "x")
        with private.open_file(folder / "l", "a+b") as handle:
            handle.write(b"1")
        private.touch(folder / "touched")
        assert private.sqlite_file(folder / "db.sqlite") and not private.sqlite_file(folder / "db.sqlite")
        (tmp_path / "open").mkdir()  # made by someone else: left as it is, and said to be open
        assert private.open_to_others(tmp_path / "open") and not private.open_to_others(folder)
    finally:
        os.umask(old)
    assert set(modes(tmp_path / "a").values()) | {"0o700"} == {"0o600", "0o700"}
    assert oct(stat.S_IMODE((tmp_path / "a").stat().st_mode)) == "0o700"
    assert oct(stat.S_IMODE((folder / "t.txt").stat().st_mode)) == "0o600"
    shared = tmp_path / "shared.sqlite"  # a labels file a team shares: its mode is kept
    shared.write_bytes(b"")
    shared.chmod(0o664)
    assert not private.sqlite_file(shared) and oct(stat.S_IMODE(shared.stat().st_mode)) == "0o664"
    with pytest.raises(FileExistsError):
        private.make_dir(folder / "t.txt")
