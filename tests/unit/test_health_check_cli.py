"""`rl-board check` from a subprocess on generated runs (issue 33): it exits 1 when GRPO learns nothing, when
the entropy collapses early and when the rollout-correction weights collapse, so a training job can stop
itself; on the clean twins it finds nothing and exits 0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.health_runs import HealthRun, health_runs

BY_NAME = {r.name: r for r in health_runs(seed=0)}


def check(root: Path, cache: Path) -> tuple[int, list[dict]]:
    proc = subprocess.run(
        [sys.executable, "-m", "rl_board", "check", str(root), "--json", "--cache-dir", str(cache)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def write(run: HealthRun, root: Path) -> None:
    run.write(root / run.name.replace("/", "-"))  # as the trainer writes it (see HealthRun.write)


@pytest.mark.parametrize(
    "name",
    [
        "trl/learns-nothing-from-start",  # TRL's trainer_state.json
        "trl/learns-nothing-tensorboard",  # TRL's names as transformers' TensorBoard callback logs them
        "prime-rl/entropy-collapse",  # metrics.jsonl
        "verl/is-weights-collapse",
    ],
)
def test_check_exits_1_on_the_collapse_and_learns_nothing_cases(tmp_path, name):
    run = BY_NAME[name]
    write(run, tmp_path / "root")
    code, findings = check(tmp_path / "root", tmp_path / "cache")
    errors = [f for f in findings if f["severity"] == "error"]
    assert code == 1 and [f["rule"] for f in errors] == [run.rule]
    assert errors[0]["steps"][0] <= run.deadline and errors[0]["group"] in (
        "no learning signal",
        "training is diverging",
    )


def test_check_is_quiet_on_the_clean_twins(tmp_path):
    for run in BY_NAME.values():
        if run.clean:
            write(run, tmp_path / "root")
    code, findings = check(tmp_path / "root", tmp_path / "cache")
    assert code == 0 and findings == []
