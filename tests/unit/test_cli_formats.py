"""`runs`, `summary` and `check` on trainers' dumps and on folders with nothing to read, as subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import trainer_dumps as T
from tests.unit.test_cli import rl_board


def test_runs_names_every_run_with_its_format_and_every_skipped_file(tmp_path: Path, cache_dir: Path) -> None:
    verl = T.write_verl(tmp_path / "verl")
    trl = T.write_trl(tmp_path / "trl")
    junk = T.write_junk(tmp_path / "junk")
    out = rl_board("runs", str(tmp_path), "--json", cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    runs = {r["run"]: r for r in data["runs"]}
    assert runs["verl"] == {
        "run": "verl",
        "format": "verl",
        "files": len(verl.files),
        "samples": verl.samples,
        "steps": len(verl.steps),
    }
    assert runs["trl/completions"]["format"] == "trl" and runs["trl/completions"]["samples"] == trl.samples
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    for path, _ in junk:
        if path.suffix != ".txt":  # a text log goes to the metrics reader, which says if it holds metrics
            assert f"junk/{path.name}" in skipped


def test_summary_of_a_trainer_dump_says_how_it_was_read(tmp_path: Path, cache_dir: Path) -> None:
    dump = T.write_verl(tmp_path / "verl")
    out = rl_board("summary", str(dump.run_dir), "--json", cache_dir=cache_dir)
    data = json.loads(out.stdout)
    assert data["format"] == "verl" and data["samples"] == dump.samples
    assert data["field_map"] == {
        "prompt": "input",
        "response": "output",
        "reward": "score",
        "ground_truth": "gts",
    }
    assert {f["format"] for f in data["files"]} == {"verl"}
    means = {row["step"]: row["reward_mean"] for row in data["step_stats"]}
    assert means.keys() == dump.reward_means.keys()
    assert all(abs(means[s] - m) < 1e-9 for s, m in dump.reward_means.items())


def test_summary_takes_a_single_file(tmp_path: Path, cache_dir: Path) -> None:
    dump = T.write_verl(tmp_path / "verl")
    one = dump.files[0]
    out = rl_board("summary", str(one), "--json", cache_dir=cache_dir)
    data = json.loads(out.stdout)
    assert out.returncode == 0 and [f["name"] for f in data["files"]] == [one.name]
    assert data["samples"] == sum(1 for line in one.read_text().splitlines() if line.strip())


def test_nothing_readable_exits_2_with_one_line_naming_what_was_skipped(
    tmp_path: Path, cache_dir: Path
) -> None:
    T.write_junk(tmp_path / "junk")
    for command in ("summary", "check"):
        out = rl_board(command, str(tmp_path / "junk"), cache_dir=cache_dir)
        assert out.returncode == 2 and out.stdout == "", (command, out.stdout)
        assert out.stderr.count("\n") == 1 and "README.md" in out.stderr and "pickle" in out.stderr


def test_summary_of_a_root_points_at_its_runs(tmp_path: Path, cache_dir: Path) -> None:
    T.write_verl(tmp_path / "a")
    T.write_areal(tmp_path / "b")
    out = rl_board("summary", str(tmp_path), cache_dir=cache_dir)
    assert out.returncode == 2 and "a, b/rollout" in out.stderr


def test_serve_refuses_a_tokenizer_it_cannot_read(tmp_path: Path, cache_dir: Path) -> None:
    out = rl_board(
        "serve", str(tmp_path), "--tokenizer", str(tmp_path / "nope"), "--port", "1", cache_dir=cache_dir
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "tokenizer.json" in out.stderr
