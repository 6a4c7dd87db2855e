"""Text files (.log/.txt/.out/.err) are metric sources only when their first lines hold metric lines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rl_board.metrics.reader import metric_catalogue as catalogue
from rl_board.sources.catalogue import METRICS
from tests.helpers.metric_fixtures import write_roll_stdout_log, write_verl_console_log
from tests.unit.test_cli import rl_board

NO_METRICS = "a text file with no metric lines rl-board knows"


def noise(rng: np.random.Generator, lines: int) -> str:
    """Start-up chatter of a trainer: words, numbers, even the word 'step', but no metric line."""
    words = ["loading", "shard", "step", "of", "ray", "worker", "ready", "warning:", "cuda", "init"]
    return "".join(
        f"[{k:06d}] " + " ".join(rng.choice(words, size=8)) + f" {rng.integers(0, 99)}\n"
        for k in range(lines)
    )


def write_root(root: Path, seed: int) -> dict[str, bool]:
    """Text files of each kind; returns file name -> whether it holds metric lines."""
    rng = np.random.default_rng(seed)
    logs = root / "logs"
    logs.mkdir(parents=True)
    verl = write_verl_console_log(logs / "verl.log", steps=5)
    verl.write_text(noise(rng, 3000) + verl.read_text())  # its first metric line comes after ~200 KB
    write_roll_stdout_log(logs / "roll.out", steps=4)
    (logs / "notes.txt").write_text("step 1: download the data\nstep 2: run it\n" + noise(rng, 20))
    (logs / "worker.err").write_text(
        "Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'a'\n"
    )
    (logs / "pending.log").write_text("")
    return {"verl.log": True, "roll.out": True, "notes.txt": False, "worker.err": False, "pending.log": False}


def test_text_files_without_metric_lines_are_skipped_with_why(tmp_path: Path) -> None:
    holds = write_root(tmp_path / "root", seed=1)
    found = catalogue(tmp_path / "root")
    assert {s.path.name for s in found.of_role(METRICS)} == {n for n, yes in holds.items() if yes}
    skipped = {s.path.name: s.reason for s in found.skipped}
    assert {n: skipped.get(n) for n, yes in holds.items() if not yes} == dict.fromkeys(
        [n for n, yes in holds.items() if not yes], NO_METRICS
    )


def test_a_text_file_becomes_a_source_once_a_metric_line_arrives(tmp_path: Path) -> None:
    holds = write_root(tmp_path / "root", seed=2)
    notes = tmp_path / "root" / "logs" / "notes.txt"
    assert not holds[notes.name] and notes in [s.path for s in catalogue(tmp_path / "root").skipped]
    with notes.open("a") as f:  # the answer is remembered by size and mtime: growth asks again
        f.write("(TaskRunner pid=1) step:1 - actor/kl_loss:0.01 - critic/score/mean:0.5\n")
    assert notes in [s.path for s in catalogue(tmp_path / "root").of_role(METRICS)]


def test_runs_and_scalars_do_not_list_text_files_without_metrics(tmp_path: Path, cache_dir: Path) -> None:
    holds = write_root(tmp_path / "root", seed=3)
    out = rl_board("runs", str(tmp_path / "root"), "--json", cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert sorted(m["path"] for m in data["metrics"]) == sorted(
        f"logs/{n}" for n, yes in holds.items() if yes
    )
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    for name in (n for n, yes in holds.items() if not yes):
        assert skipped[f"logs/{name}"] == NO_METRICS
    out = rl_board("scalars", str(tmp_path / "root"), "--json", cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    assert sorted(r["run"] for r in json.loads(out.stdout)["runs"]) == sorted(
        f"logs/{n}" for n, yes in holds.items() if yes
    )


def test_a_pipe_named_like_a_log_is_never_opened(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "stdout.log")  # opening it to look for metric lines would wait for a writer
    [source] = catalogue(tmp_path).sources
    assert source.role == "skipped" and "not a regular file" in source.reason
