"""verl 0.9.1's own dump and metric-logging code, run on CPU (``trainers/verl_dump.py``), read back with
rl-board.

Expectations come from the JSONL verl wrote (read with json), the batch facts the runner kept
(``batch_uids.json``) and verl's own metrics (``compute_data_metrics`` through its file logger).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from rl_board.api import RolloutStore
from rl_board.metrics.reader import load_metrics
from tests.real import expected as E
from tests.real.conftest import REPO
from tests.real.trainers import specs

ROWS = specs.VERL_PROMPTS_PER_STEP * specs.VERL_N
CLASSIC_KEYS = ["input", "output", "gts", "score", "step", "acc", "pred"]
V1_KEYS = ["input", "output", "gts", "score", "step", "uid"]


@pytest.fixture(scope="module")
def roots(verl_root: Path, verl_v1_root: Path) -> dict[str, Path]:
    return {"classic": verl_root, "v1": verl_v1_root}


@pytest.fixture(scope="module")
def stores(roots: dict[str, Path], real_cache: Path) -> dict[str, RolloutStore]:
    return {name: RolloutStore.open(root / "rollout", cache_dir=real_cache) for name, root in roots.items()}


def dumped(root: Path) -> dict[int, list[dict]]:
    """verl's ``rollout/{step}.jsonl`` files, by step."""
    return {
        int(p.stem): E.jsonl(p) for p in sorted((root / "rollout").glob("*.jsonl"), key=lambda p: int(p.stem))
    }


def metric_lines(verl_root: Path) -> list[dict]:
    return E.jsonl(verl_root / "metrics" / specs.VERL_PROJECT / f"{specs.VERL_EXPERIMENT}.jsonl")


def uid_key(uid: str) -> tuple[str, int, int]:
    sample, session, index = uid.rsplit("_", 2)
    return sample, int(session), int(index)


# --------------------------------------------------------------------------- what verl wrote (fixture checks)


def test_verl_wrote_dumps_and_metrics(roots: dict[str, Path]) -> None:
    for name, root in roots.items():
        steps = dumped(root)
        assert sorted(steps) == list(specs.VERL_STEPS), name
        for step, rows in steps.items():
            assert len(rows) == ROWS
            assert all(list(r) == (CLASSIC_KEYS if name == "classic" else V1_KEYS) for r in rows), list(
                rows[0]
            )
            assert all(r["step"] == step and r["score"] in (1.0, -1.0) for r in rows)
    classic = [r for rows in dumped(roots["classic"]).values() for r in rows]
    assert all(r["acc"] == (r["score"] > 0) for r in classic)
    assert {r["acc"] for r in classic} == {True, False} and any(r["pred"] == "[INVALID]" for r in classic)
    for rows in dumped(roots["v1"]).values():
        keys = [uid_key(r["uid"]) for r in rows]
        assert keys == sorted(keys), "the v1 trainer writes rows sorted by uid key"
    lines = metric_lines(roots["classic"])
    assert [line["step"] for line in lines] == list(specs.VERL_STEPS)
    assert all(set(line) == {"step", "data"} and "critic/score/mean" in line["data"] for line in lines)


# --------------------------------------------------------------------------- rows, text, rewards


@pytest.mark.parametrize("name", ["classic", "v1"])
def test_every_line_read(stores: dict[str, RolloutStore], name: str) -> None:
    report = stores[name].report
    assert report.format == "verl"
    assert report.bad_line_count == 0, [(b.file, b.line, b.reason) for b in report.bad_lines[:3]]


@pytest.mark.parametrize("name", ["classic", "v1"])
def test_rows_text_and_score(roots: dict[str, Path], stores: dict[str, RolloutStore], name: str) -> None:
    """Per step the same rows in file order: input -> prompt, output -> response, gts -> ground truth,
    score -> reward."""
    store = stores[name]
    steps = dumped(roots[name])
    assert store.samples_per_step() == {s: len(rows) for s, rows in steps.items()}
    for step, rows in steps.items():
        got = store.samples(step=step, columns=["prompt", "response", "ground_truth", "reward"]).sort_values(
            "sample"
        )
        assert got["prompt"].tolist() == [r["input"] for r in rows]
        assert got["response"].tolist() == [r["output"] for r in rows]
        assert got["ground_truth"].astype(str).tolist() == [r["gts"] for r in rows]
        assert got["reward"].tolist() == [r["score"] for r in rows]


def test_reward_extras_kept(roots: dict[str, Path], stores: dict[str, RolloutStore]) -> None:
    """math_dapo's ``acc`` and ``pred`` (reward extras verl dumps) stay columns with verl's values."""
    store = stores["classic"]
    assert {"acc", "pred"} <= set(store.fields)
    for step, rows in dumped(roots["classic"]).items():
        got = store.samples(step=step, columns=["acc", "pred"]).sort_values("sample")
        assert [bool(v) for v in got["acc"]] == [r["acc"] for r in rows]
        assert got["pred"].tolist() == [r["pred"] for r in rows]


@pytest.mark.parametrize("name", ["classic", "v1"])
def test_step_mean_reward_matches_verl_metric(
    roots: dict[str, Path], stores: dict[str, RolloutStore], name: str
) -> None:
    """rl-board's per-step mean reward == verl's own ``critic/score/mean`` (float32) for the same samples."""
    logged = {line["step"]: line["data"]["critic/score/mean"] for line in metric_lines(roots["classic"])}
    summary = stores[name].step_summary().set_index("step")
    for step, value in logged.items():
        assert E.close(summary.at[step, "reward_mean"], value), (step, summary.at[step, "reward_mean"], value)


# --------------------------------------------------------------------------- groups


def expected_groups(rows: list[dict], uids: list[str]) -> dict[str, list[float]]:
    by_uid: dict[str, list[float]] = defaultdict(list)
    for row, uid in zip(rows, uids, strict=True):
        by_uid[uid].append(row["score"])
    return by_uid


def test_classic_groups_are_the_uid_groups(roots: dict[str, Path], stores: dict[str, RolloutStore]) -> None:
    """The classic dump has no ``uid``: grouping by prompt gives exactly verl's uid groups of ``n``
    responses."""
    uids = {int(k): v for k, v in E.read_json_file(roots["classic"] / "batch_uids.json").items()}
    store = stores["classic"]
    stats = store.group_stats().set_index("step")
    for step, rows in dumped(roots["classic"]).items():
        by_uid = expected_groups(rows, uids[step])
        table = store.groups(step=step)
        assert (
            sorted(table["samples"].tolist()) == sorted(len(v) for v in by_uid.values()) == [specs.VERL_N] * 3
        )
        prompt_of = {uid: rows[uids[step].index(uid)]["input"] for uid in by_uid}
        for uid, scores in by_uid.items():
            group = table[table["prompt"] == prompt_of[uid]]
            assert len(group) == 1 and E.close(group["reward_mean"].iloc[0], float(np.mean(scores))), uid
        zero = np.mean([max(v) == min(v) for v in by_uid.values()])
        assert float(stats.at[step, "zero_variance_share"]) == pytest.approx(zero), step


def test_v1_groups_by_uid_prefix(roots: dict[str, Path], stores: dict[str, RolloutStore]) -> None:
    """The v1 dump's ``uid`` is ``{prompt uid}_{session}_{index}``: samples sharing the prompt part form a
    group."""
    store = stores["v1"]
    assert "uid" in store.fields
    for step, rows in dumped(roots["v1"]).items():
        got = store.samples(step=step, columns=["uid", "group"]).sort_values("sample")
        assert got["uid"].tolist() == [r["uid"] for r in rows]
        assert got["group"].tolist() == [uid_key(r["uid"])[0] for r in rows]
        table = store.groups(step=step)
        assert len(table) == specs.VERL_PROMPTS_PER_STEP
        assert table["samples"].tolist() == [specs.VERL_N] * specs.VERL_PROMPTS_PER_STEP
        assert set(table["group"]) == {uid_key(r["uid"])[0] for r in rows}


# --------------------------------------------------------------------------- the file logger's metrics


def test_file_logger_metrics_read_with_verl_names(verl_root: Path, real_cache: Path) -> None:
    """``trainer.logger=file`` lines ``{"step", "data": {...}}``: tags are verl's metric names, no ``data/``
    prefix."""
    lines = metric_lines(verl_root)
    bundle = load_metrics(verl_root / "metrics", cache_dir=real_cache)
    assert len(bundle.runs) == 1, [r.run for r in bundle.runs]
    run = bundle.runs[0].run
    tags = set(bundle.scalars.loc[bundle.scalars["run"] == run, "tag"])
    names = {key for line in lines for key in line["data"]}
    assert tags == names, f"tags not named as verl logs them: {sorted(tags - names)[:6]} ..."
    for key in ("critic/score/mean", "critic/advantages/max", "response_length/mean"):
        series = bundle.series(run, key)
        assert dict(zip(series["step"].astype(int), series["value"], strict=True)) == pytest.approx(
            {line["step"]: line["data"][key] for line in lines}
        ), key


# --------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("name", ["classic", "v1"])
def test_cli_summary_json(roots: dict[str, Path], tmp_path: Path, name: str) -> None:
    run = roots[name] / "rollout"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rl_board",
            "summary",
            str(run),
            "--json",
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["format"] == "verl"
    steps = dumped(roots[name])
    assert data["samples_per_step"] == {str(s): len(rows) for s, rows in steps.items()}
    means = {row["step"]: row["reward_mean"] for row in data["step_stats"]}
    assert means == pytest.approx(
        {s: float(np.mean([r["score"] for r in rows])) for s, rows in steps.items()}
    )
