"""The CLI, run as a user runs it: a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def rl_board(*args: str, cache_dir: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "RL_BOARD_CACHE_DIR": str(cache_dir)}
    return subprocess.run(
        [sys.executable, "-m", "rl_board", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def test_demo_then_summary_json(tmp_path: Path, cache_dir: Path) -> None:
    out = rl_board(
        "demo", str(tmp_path / "logs"), "--steps", "5", "--samples", "6", "--ranks", "3", cache_dir=cache_dir
    )
    assert out.returncode == 0, out.stderr
    run = tmp_path / "logs" / "ppo_math"
    assert sorted(p.name for p in run.glob("*.jsonl")) == [f"rollout_data_rank_{r}.jsonl" for r in range(3)]
    with open(run / "rollout_data_rank_0.jsonl", "a") as f:
        f.write("this is not json\n")

    first = rl_board("summary", str(run), "--json", cache_dir=cache_dir)
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["samples"] == 30 and data["steps"] == [0, 1, 2, 3, 4]
    assert data["samples_per_step"] == {str(s): 6 for s in range(5)}
    assert {"prompt", "response", "reward", "logprobs", "ref_reward"} <= set(data["fields"])
    assert data["fields"] == sorted(data["fields"])
    assert data["bad_lines"] == [
        {"file": "rollout_data_rank_0.jsonl", "line": 11, "reason": data["bad_lines"][0]["reason"]}
    ]
    assert data["bad_lines"][0]["reason"].startswith("not valid JSON")
    assert [f["name"] for f in data["files"]] == [f"rollout_data_rank_{r}.jsonl" for r in range(3)]
    assert data["files"][0]["lines"] == 11 and data["files"][0]["bytes"] > 0
    stats = data["step_stats"][0]
    assert {"step", "samples", "reward_mean", "reward_std", "kl_mean", "ref_reward_mean"} <= set(stats)
    assert data["from_cache"] is False and data["load_seconds"] >= 0

    second = json.loads(rl_board("summary", str(run), "--json", cache_dir=cache_dir).stdout)
    assert second["from_cache"] is True
    assert second["step_stats"] == data["step_stats"]


def test_summary_text(tmp_path: Path, cache_dir: Path, eval_run: Path) -> None:
    out = rl_board("summary", str(eval_run), cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    assert "samples 65" in out.stdout and "1000" in out.stdout


@pytest.mark.parametrize("args", [["summary", "/no/such/run"], ["serve", "/no/such/root"]])
def test_missing_path_is_a_one_line_message(args: list[str], cache_dir: Path) -> None:
    out = rl_board(*args, cache_dir=cache_dir)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "/no/such" in out.stderr


def test_usage_error_exits_2(cache_dir: Path) -> None:
    out = rl_board("summary", cache_dir=cache_dir)
    assert out.returncode == 2 and "usage" in out.stderr


def test_console_script_is_installed() -> None:
    exe = Path(sys.executable).parent / "rl-board"
    out = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "summary" in out.stdout and "serve" in out.stdout


def test_serve_warns_when_binding_all_interfaces(tmp_path: Path, cache_dir: Path) -> None:
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "RL_BOARD_CACHE_DIR": str(cache_dir)}
    (tmp_path / "root").mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rl_board",
            "serve",
            str(tmp_path / "root"),
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        first = proc.stderr.readline()
    finally:
        time.sleep(0.5)
        proc.terminate()
        proc.wait(timeout=30)
    assert first.startswith("warning: binding 0.0.0.0") and "reverse proxy" in first


def test_summary_of_a_run_with_no_readable_line_exits_1_and_says_why(tmp_path: Path, cache_dir: Path) -> None:
    """Every line refused: the summary is still printed, but the exit status says nothing could be read."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "r0.jsonl").write_text('{"step": 1, "prompt": 5, "response": "r", "reward": 1}\n' * 3)
    out = rl_board("summary", str(run), "--json", cache_dir=cache_dir)
    assert out.returncode == 1, out.stderr
    assert json.loads(out.stdout)["samples"] == 0
    assert "r0.jsonl:1: 'prompt' is a number, not text" in out.stderr
