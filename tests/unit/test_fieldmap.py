"""Field maps: rl-board.toml [fields], --field on the CLI, and what they change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rl_board.errors import InvalidArgumentError
from rl_board.formats import fieldmap
from rl_board.rollouts.store import RolloutStore
from rl_board.sources.catalogue import catalogue
from tests.helpers import trainer_dumps as T
from tests.unit.test_cli import rl_board

ODD = [{"global_step": i // 3, "question": f"q{i}", "completion": f"c{i}", "score": i / 10} for i in range(6)]
MAP = '[fields]\nprompt = "question"\nresponse = "completion"\nreward = "score"\nstep = "global_step"\n'


def write_odd(run: Path) -> Path:
    run.mkdir(parents=True)
    (run / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ODD))
    return run


def test_unknown_shape_is_skipped_with_a_hint_until_its_keys_are_named(
    tmp_path: Path, cache_dir: Path
) -> None:
    run = write_odd(tmp_path / "odd")
    [source] = catalogue(tmp_path).sources
    assert source.role == "skipped" and "rl-board.toml [fields]" in source.reason
    (tmp_path / "rl-board.toml").write_text(MAP)  # in the logs root: applies to every run below it
    [folder] = catalogue(tmp_path).rollout_folders()
    store = RolloutStore.open(folder.path, cache_dir=cache_dir)
    assert store.num_samples == 6 and store.steps == [0, 1] and store.report.bad_line_count == 0
    rows = store.samples(step=1, columns=["prompt", "response", "reward"])
    assert list(rows["prompt"]) == ["q3", "q4", "q5"] and list(rows["reward"]) == [0.3, 0.4, 0.5]
    assert store.report.field_map == {
        "prompt": "question",
        "response": "completion",
        "reward": "score",
        "step": "global_step",
    }
    assert "question → prompt" in store.report.read_as
    assert run == folder.path


def test_a_callers_map_wins_and_gets_its_own_cache(tmp_path: Path, cache_dir: Path) -> None:
    dump = T.write_verl(tmp_path / "verl")
    plain = RolloutStore.open(dump.run_dir, cache_dir=cache_dir)
    by_acc = RolloutStore.open(dump.run_dir, cache_dir=cache_dir, fields={"reward": "acc"})
    step = dump.steps[0]
    acc = plain.samples(step=step, columns=["acc"])["acc"].astype(float).tolist()
    assert by_acc.samples(step=step, columns=["reward"])["reward"].tolist() == acc
    assert plain.samples(step=step, columns=["reward"])["reward"].tolist() == pytest.approx(
        dump.rewards[step]
    )
    assert by_acc.report.field_map["reward"] == "acc"


def test_apply_keeps_what_a_mapping_displaces() -> None:
    out = fieldmap.apply({"score": 1.0, "reward": 0.0, "x": 1}, {"reward": "score"})
    assert out == {"reward": 1.0, "reward_logged": 0.0, "x": 1}


def test_bad_field_options_are_usage_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="fields that can be mapped"):
        fieldmap.parse_option("colour=red")
    with pytest.raises(InvalidArgumentError, match="field=key"):
        fieldmap.parse_option("reward")
    assert fieldmap.parse_option(" reward = score ") == ("reward", "score")


def test_cli_field_option(tmp_path: Path, cache_dir: Path) -> None:
    run = write_odd(tmp_path / "odd")
    args = [
        "--field",
        "prompt=question",
        "--field",
        "response=completion",
        "--field",
        "reward=score",
        "--field",
        "step=global_step",
    ]
    out = rl_board("summary", str(run), "--json", *args, cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["samples"] == 6 and data["field_map"]["reward"] == "score"
    listed = json.loads(rl_board("runs", str(tmp_path), "--json", *args, cache_dir=cache_dir).stdout)
    assert [r["samples"] for r in listed["runs"]] == [6]
    bad = rl_board("summary", str(run), "--field", "colour=red", cache_dir=cache_dir)
    assert bad.returncode == 2 and "fields that can be mapped" in bad.stderr
