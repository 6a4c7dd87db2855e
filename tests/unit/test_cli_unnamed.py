"""Files beside or instead of a run that rl-board does not read are named, with why, by the CLI and the start
page."""

from __future__ import annotations

import gzip
import json
import pickle
from pathlib import Path

import numpy as np

from rl_board.rollouts.demo import DemoSpec, write_run
from tests.unit.test_cli import rl_board

PICKLE = "a pickle (slime's rollout dump?): never loaded, unpickling runs code; convert it to JSONL"


def write_slime_dumps(root: Path, ids: range, seed: int) -> list[Path]:
    """slime's ``rollout_data/{id}.pt``: a pickled dict of lists (written with pickle: torch is not
    needed)."""
    rng = np.random.default_rng(seed)
    folder = root / "rollout_data"
    folder.mkdir(parents=True)
    paths = []
    for rollout_id in ids:
        data = {"tokens": rng.integers(0, 1000, size=(4, 16)).tolist(), "rewards": rng.random(4).tolist()}
        path = folder / f"{rollout_id}.pt"
        path.write_bytes(pickle.dumps(data))
        paths.append(path)
    return paths


def test_summary_names_a_compressed_log_beside_the_run(tmp_path: Path, cache_dir: Path) -> None:
    run = tmp_path / "run"
    [plain, other] = write_run(run, DemoSpec(steps=3, samples=4, ranks=2, tokens=6, seed=1))
    packed = other.with_name(other.name + ".gz")
    packed.write_bytes(gzip.compress(other.read_bytes()))
    other.unlink()
    out = rl_board("summary", str(run), "--json", cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [f["name"] for f in data["files"]] == [plain.name]
    assert data["samples"] == len(plain.read_text().splitlines())
    [skipped] = data["skipped"]
    assert skipped["path"] == packed.name
    assert "compressed" in skipped["reason"] and "gunzip" in skipped["reason"]
    text = rl_board("summary", str(run), cache_dir=cache_dir)
    assert f"skipped: {packed.name}: {skipped['reason']}" in text.stdout.splitlines()


def test_a_root_of_pickled_rollouts_says_what_they_are(tmp_path: Path, cache_dir: Path) -> None:
    dumps = write_slime_dumps(tmp_path / "slime", range(3), seed=2)
    names = [p.relative_to(tmp_path / "slime").as_posix() for p in dumps]
    out = rl_board("runs", str(tmp_path / "slime"), "--json", cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["runs"] == [] and {s["path"]: s["reason"] for s in data["skipped"]} == dict.fromkeys(
        names, PICKLE
    )
    out = rl_board("summary", str(tmp_path / "slime"), "--json", cache_dir=cache_dir)
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1
    assert names[0] in out.stderr and PICKLE in out.stderr and "Traceback" not in out.stderr


def test_pickles_beside_a_run_are_named_too(tmp_path: Path, cache_dir: Path) -> None:
    """A root that holds a readable run still names every torch pickle it does not read: slime's dumps
    beside another run are the run the user may have come for."""
    write_run(tmp_path / "root" / "run", DemoSpec(steps=2, samples=2, ranks=1, tokens=4, seed=3))
    dumps = write_slime_dumps(tmp_path / "root" / "slime", range(2), seed=4)
    data = json.loads(rl_board("runs", str(tmp_path / "root"), "--json", cache_dir=cache_dir).stdout)
    assert [r["run"] for r in data["runs"]] == ["run"]
    named = {s["path"]: s["reason"] for s in data["skipped"]}
    assert named == {p.relative_to(tmp_path / "root").as_posix(): PICKLE for p in dumps}, data["skipped"]
