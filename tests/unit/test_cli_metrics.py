"""`scalars` and `check` through the CLI's entry point (in-process) and as subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rl_board.cli import main
from rl_board.rollouts.demo import DemoSpec, write_run
from tests.helpers.metric_fixtures import write_demo_tree, write_di_engine_folder, write_tensorboard_run

REAL = Path(__file__).parents[2].parent / "shared/real-logs/di-engine-mappo-ant"


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_scalars_json_shape(tmp_path, capsys):
    write_demo_tree(tmp_path)
    code, out, _ = run_cli(["scalars", str(tmp_path), "--json"], capsys)
    assert code == 0
    runs = {r["run"]: r for r in json.loads(out)["runs"]}
    assert runs["tb/trl_run"]["kind"] == "tensorboard"
    assert runs["tb/trl_run"]["tags"]["env/reward_mean"] == {"points": 40, "first_step": 0, "last_step": 39}
    assert runs["tb/trl_run"]["histograms"] == ["objective/kl_dist", "ppo/policy/ratio"]
    assert runs["logs/roll.log"]["problems"][0]["file"] == "logs/roll.log"
    assert {r["kind"] for r in runs.values()} == {"tensorboard", "di-engine", "stdout", "jsonl"}


def test_scalars_damaged_files_still_exit_zero(tmp_path, capsys):
    write_tensorboard_run(tmp_path / "run", steps=3, truncate_last=True)
    code, out, _ = run_cli(["scalars", str(tmp_path), "--json"], capsys)
    [run] = json.loads(out)["runs"]
    assert code == 0 and len(run["problems"]) == 1


def test_scalars_table_output(tmp_path, capsys):
    write_di_engine_folder(tmp_path / "exp")
    code, out, _ = run_cli(["scalars", str(tmp_path)], capsys)
    assert code == 0 and "exp  [di-engine]" in out and "learner/value_loss_avg" in out


def test_missing_path_is_a_one_line_usage_error(tmp_path, capsys):
    for command in ("scalars", "check"):
        code, out, err = run_cli([command, str(tmp_path / "nope")], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and "not found" in err


def test_check_exit_codes(tmp_path, capsys):
    write_tensorboard_run(tmp_path / "good", steps=30)
    code, out, _ = run_cli(["check", str(tmp_path / "good"), "--json"], capsys)
    assert code == 0 and json.loads(out)["findings"] == []
    write_tensorboard_run(tmp_path / "bad", steps=30, unstable=True)
    code, out, _ = run_cli(["check", str(tmp_path / "bad"), "--json"], capsys)
    findings = json.loads(out)["findings"]
    fired = {f["rule"] for f in findings}
    assert code == 1 and {"non_finite", "value_loss_spike", "kl_negative", "early_entropy_collapse"} <= fired
    assert set(findings[0]) >= {"rule", "severity", "run", "steps", "message"}


def test_check_set_downgrades_error_and_bad_set_is_usage_error(tmp_path, capsys):
    # the unstable run's entropy (2 e^(-t/4)) is also an early entropy collapse, an error since issue 33
    write_tensorboard_run(tmp_path, steps=30, unstable=True)
    code, _, _ = run_cli(["check", str(tmp_path), "--set", "non_finite.severity=warning"], capsys)
    assert code == 1
    downgrade = ["--set", "non_finite.severity=warning", "--set", "early_entropy_collapse.severity=warning"]
    code, _, _ = run_cli(["check", str(tmp_path), *downgrade], capsys)
    assert code == 0
    code, _, err = run_cli(["check", str(tmp_path), "--set", "non_finite.bogus=1"], capsys)
    assert code == 2 and "allowed: severity, enabled" in err


def test_check_reads_rl_board_toml(tmp_path, capsys):
    write_tensorboard_run(tmp_path, steps=30, unstable=True)
    (tmp_path / "rl-board.toml").write_text(
        "[rules.non_finite]\nenabled = false\n[rules.early_entropy_collapse]\nenabled = false\n"
    )
    code, out, _ = run_cli(["check", str(tmp_path), "--json"], capsys)
    assert code == 0 and "non_finite" not in {f["rule"] for f in json.loads(out)["findings"]}


@pytest.mark.skipif(
    not REAL.is_dir(),
    reason=(
        "needs the real DI-engine folder ../shared/real-logs/di-engine-mappo-ant beside the project "
        "(generated DI-engine folders cover the same code)"
    ),
)
def test_real_logs(capsys):
    code, out, _ = run_cli(["scalars", str(REAL), "--json"], capsys)
    [run] = json.loads(out)["runs"]
    assert code == 0 and run["run"] == "." and run["kind"] == "di-engine"
    assert run["tags"]["learner_iter/total_loss_avg"] == {"points": 283, "first_step": 0, "last_step": 28200}
    assert len(run["tags"]) == 83 + 17 + 11 + 15
    code, out, _ = run_cli(["check", str(REAL), "--json"], capsys)
    assert code == 0 and json.loads(out)["findings"] == []


# --------------------------------------------------------------------------- the real command, with rollouts


def rl_board(*args: str, cache: Path) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "rl_board", *args, "--cache-dir", str(cache)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stdout, proc.stderr


def nan_token_run(folder: Path) -> None:
    folder.mkdir(parents=True)
    record = {
        "step": 0,
        "prompt": "p",
        "response": "r",
        "reward": 1.0,
        "logprobs": [float("nan"), -1.0],
        "ref_logprobs": [-1.0, -1.0],
    }
    (folder / "rollouts.jsonl").write_text(json.dumps(record) + "\n")


def test_check_command_runs_rollout_rules_with_exit_codes(tmp_path):
    write_tensorboard_run(tmp_path / "root" / "tb", steps=30)
    write_run(tmp_path / "root" / "ppo_math", DemoSpec(steps=30, samples=24, tokens=48, seed=0))
    code, out, err = rl_board("check", str(tmp_path / "root"), "--json", cache=tmp_path / "cache")
    assert code == 0, err
    found = {f["rule"]: f for f in json.loads(out)["findings"]}
    # the demo's reward hacking (long, repetitive "Great question! Indeed..." answers from mid-run) is seen
    # three ways: length paid for, a template spreading, and loops
    assert set(found) == {"length_hacking", "template_spreading", "loops"}
    assert all((f["severity"], f["run"]) == ("warning", "ppo_math") for f in found.values())
    finding = found["length_hacking"]
    assert finding["steps"][0] >= 15 and finding["link"]["step"] in finding["steps"]

    nan_token_run(tmp_path / "root" / "broken")
    code, out, _ = rl_board("check", str(tmp_path / "root"), "--json", cache=tmp_path / "cache")
    errors = [f for f in json.loads(out)["findings"] if f["severity"] == "error"]
    assert code == 1 and [(f["rule"], f["run"], f["steps"]) for f in errors] == [
        ("nonfinite_tokens", "broken", [0])
    ]

    code, out, _ = rl_board(
        "check",
        str(tmp_path / "root"),
        "--set",
        "nonfinite_tokens.severity=warning",
        cache=tmp_path / "cache",
    )
    assert code == 0 and "WARNING nonfinite_tokens" in out and "broken" in out


def test_check_command_usage_errors_exit_2(tmp_path):
    code, out, err = rl_board("check", str(tmp_path / "missing"), "--json", cache=tmp_path / "cache")
    assert code == 2 and out == "" and "not found" in err
    code, _, err = rl_board(
        "check", str(tmp_path), "--set", "length_hacking.nope=1", cache=tmp_path / "cache"
    )
    assert code == 2 and "allowed: window, limit, min_samples" in err


def _copied_wandb_folder(root: Path) -> Path:
    """A W&B folder as it is copied off a training machine: its links point at the machine's home."""
    run = root / "wandb" / "run-20261125_101010-abc123"
    (run / "logs").mkdir(parents=True)
    (run / "files").mkdir()
    (run / "logs" / "debug-core.log").symlink_to("/home/someone/.cache/wandb/logs/core-debug.log")
    (root / "wandb" / "latest-run").symlink_to(run.name)
    (root / "wandb" / "debug.log").symlink_to(run / "logs" / "debug.log")
    (root / "loop-a").symlink_to(root / "loop-b")
    (root / "loop-b").symlink_to(root / "loop-a")
    return run


def test_a_dangling_link_never_takes_down_the_root(tmp_path, capsys):
    """`scalars` and `check` on a root holding a copied W&B folder (dangling and looping links) beside a
    TensorBoard run: the run is read, the links are named as skipped, and neither command exits 1."""
    from tests.helpers.metric_fixtures import write_tensorboard_run

    write_tensorboard_run(tmp_path / "tb", steps=5)
    _copied_wandb_folder(tmp_path)
    code, out, err = run_cli(["scalars", str(tmp_path), "--json"], capsys)
    assert code == 0, err
    runs = {r["run"]: r for r in json.loads(out)["runs"]}
    assert "tb" in runs and runs["tb"]["tags"]
    code, out, err = run_cli(["check", str(tmp_path), "--json"], capsys)
    assert code in (0, 2) and "Traceback" not in err, err
    code, out, err = run_cli(["runs", str(tmp_path), "--json"], capsys)
    skipped = {s["path"]: s["reason"] for s in json.loads(out)["skipped"]}
    assert "broken or looping" in skipped["wandb/debug.log"]
    assert "broken or looping" in skipped["loop-a"] and "broken or looping" in skipped["loop-b"]
