"""The Python API as a notebook uses it, on the bundled runs, a TensorBoard run and an ``s3://`` root (a real
S3-compatible server, moto): every answer equals what the CLI prints for the same question (the CLI run as a
subprocess, its JSON read back)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import rl_board
from rl_board.errors import NotFoundError, RLBoardError
from tests.helpers import s3
from tests.helpers.metric_fixtures import write_tensorboard_run

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "rollout_samples"
PER_STEP = "SELECT step, count(*) AS n, avg(reward) AS reward FROM samples GROUP BY step ORDER BY step"


def cli(*args: str, env: dict[str, str] | None = None) -> dict | list:
    proc = subprocess.run(
        [sys.executable, "-m", "rl_board", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=None if env is None else {**os.environ, **env},
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def same_rows(frame: pd.DataFrame, rows: list[dict]) -> None:
    """A frame equal to the CLI's JSON rows (NaN as null, floats to the last digit JSON keeps)."""
    assert list(frame.columns) == list(rows[0]) and len(frame) == len(rows)
    for mine, theirs in zip(frame.to_dict("records"), rows, strict=True):
        for key, value in theirs.items():
            got = mine[key]
            if isinstance(value, float) or isinstance(got, float):
                assert (value is None and math.isnan(got)) or math.isclose(got, value, rel_tol=1e-12), key
            else:
                assert got == value, key


def test_a_bundled_run_as_a_notebook_reads_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run = rl_board.open(SAMPLES / "ppo_math", cache_dir=cache)
    summary = cli("summary", str(SAMPLES / "ppo_math"), "--json", "--cache-dir", str(cache))
    assert run.steps == summary["steps"] and run.num_samples == summary["samples"]
    same_rows(
        run.sql(PER_STEP),
        cli("query", str(SAMPLES / "ppo_math"), PER_STEP, "--json", "--cache-dir", str(cache)),
    )

    step = run.steps[3]
    frame = run.samples(step=step, columns=["reward", "response"])
    assert len(frame) == summary["samples_per_step"][str(step)]
    assert {"step", "sample", "file", "line", "reward", "response"} <= set(frame.columns)
    assert len(run.samples()) == run.num_samples

    tokens = run.tokens(step, 0)
    lengths = run.sql(f"SELECT len(response_tokens) FROM samples WHERE step = {step} AND sample = 0")
    assert len(tokens) == int(lengths.iloc[0, 0]) and {"token", "logp", "ref_logp", "kl"} <= set(
        tokens.columns
    )
    assert "rl_board.Run(" in repr(run)


def test_turns_of_an_agent_run_through_sql(tmp_path: Path) -> None:
    """The views `rl-board query` has are the views `run.sql` has."""
    from rl_board.rollouts.demo_agent import AgentSpec, write_agent_run

    write_agent_run(tmp_path / "agent", AgentSpec(steps=2, trajectories=4, turns=6, seed=1))
    cache = tmp_path / "cache"
    run = rl_board.open(tmp_path / "agent", cache_dir=cache)
    ask = "SELECT role, count(*) AS n FROM turns GROUP BY role ORDER BY role"
    same_rows(run.sql(ask), cli("query", str(tmp_path / "agent"), ask, "--json", "--cache-dir", str(cache)))


def test_scalars_and_checks_of_a_tensorboard_run(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_tensorboard_run(logs / "tb_run", steps=30, unstable=True)
    shutil.copytree(SAMPLES / "grpo_math", logs / "grpo_math")
    cache = tmp_path / "cache"
    points = rl_board.scalars(logs, cache_dir=cache)
    assert {"run", "source", "tag", "step", "value", "wall_time"} <= set(points.columns)
    listed = cli("scalars", str(logs), "--json", "--cache-dir", str(cache))
    by_tag = points.groupby(["run", "tag"])["step"].agg(["count", "min", "max"])
    for run in listed["runs"]:
        for tag, summary in run["tags"].items():
            count, first, last = by_tag.loc[(run["run"], tag)]
            assert (count, first, last) == (summary["points"], summary["first_step"], summary["last_step"]), (
                tag
            )
    assert sum(len(r["tags"]) for r in listed["runs"]) == len(by_tag)
    index = rl_board.metrics_index(logs, cache_dir=cache)
    assert sorted(info.run for info in index.runs) == sorted(r["run"] for r in listed["runs"])

    report = rl_board.check(logs, cache_dir=cache)
    assert report.to_dict() == cli("check", str(logs), "--json", "--cache-dir", str(cache))
    assert report.findings and {"rule", "run", "severity", "message", "steps"} <= set(report.frame().columns)
    loose = rl_board.check(logs, cache_dir=cache, settings=["policy_ratio.enabled=false"])
    assert len(loose.findings) <= len(report.findings)


def test_errors_are_rl_boards_own(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotFoundError, match="no rollout files"):
        rl_board.open(tmp_path / "empty", cache_dir=tmp_path / "cache")
    with pytest.raises(RLBoardError):
        rl_board.check(tmp_path / "empty", cache_dir=tmp_path / "cache")
    with pytest.raises(AttributeError):
        rl_board.nothing_here  # noqa: B018


def test_import_rl_board_stays_light() -> None:
    code = "import sys, rl_board; print(any(m in sys.modules for m in ('pandas', 'pyarrow', 'streamlit')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


@pytest.fixture(scope="module")
def bucket(tmp_path_factory):
    """The GRPO sample run and a TensorBoard run in a bucket of a real S3-compatible server."""
    local = tmp_path_factory.mktemp("bucket") / "logs"
    shutil.copytree(SAMPLES / "grpo_math", local / "grpo_math")
    write_tensorboard_run(local / "tb_run", steps=20)
    import s3fs

    with s3.s3_server() as endpoint:
        url = "s3://notebook-logs/team"
        s3.upload(endpoint, local, url)
        yield url, local, s3.s3_env(endpoint)
    s3fs.S3FileSystem.clear_instance_cache()  # fsspec keeps a client per options: not one for a dead server


def test_an_s3_root_from_a_notebook(bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, local, env = bucket
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    cache = tmp_path / "cache"
    run = rl_board.open(f"{url}/grpo_math", cache_dir=cache)
    same_rows(
        run.sql(PER_STEP),
        cli(
            "query",
            f"{url}/grpo_math",
            PER_STEP,
            "--json",
            "--cache-dir",
            str(tmp_path / "cli-cache"),
            env=env,
        ),
    )
    assert run.num_samples == rl_board.open(local / "grpo_math", cache_dir=tmp_path / "local").num_samples
    points = rl_board.scalars(url, cache_dir=cache)
    assert set(points["run"]) >= {"tb_run"}
    listed = cli("scalars", url, "--json", "--cache-dir", str(tmp_path / "cli-cache"), env=env)
    assert sorted(set(points["run"])) == sorted(r["run"] for r in listed["runs"])
