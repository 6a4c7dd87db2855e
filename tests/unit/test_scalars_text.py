"""ROLL stdout, verl console and plain JSONL metric logs, plus the cache and discovery."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rl_board.errors import NotFoundError
from rl_board.metrics.reader import load_metrics
from rl_board.metrics.stdout import read_text_metrics
from tests.helpers.metric_fixtures import (
    write_demo_tree,
    write_jsonl_metrics,
    write_roll_stdout_log,
    write_rollout_jsonl,
    write_verl_console_log,
    write_verl_file_log,
)


def test_roll_lines_behind_any_prefix(tmp_path):
    path = write_roll_stdout_log(tmp_path / "roll.log", steps=6)
    read = read_text_metrics(path, "r")
    scalars = read.committed.scalars
    assert set(scalars["tag"]) == {
        "critic/score/mean",
        "actor/kl_loss",
        "actor/pg_loss",
        "critic/loss",
        "actor/clipfrac",
        "critic/entropy/mean",
    }
    assert "actor/pg_loss@sum" not in set(scalars["tag"])  # reducer suffix stripped
    assert sorted(set(scalars["step"])) == list(range(6))
    assert read.committed.texts["text"].tolist()[:2] == ["warmup", "ok"]
    [problem] = read.committed.problems  # the broken metrics_tag line at the end
    assert problem.line == 8 and "metrics_tag" in problem.reason


def test_verl_lines_with_ansi_codes_and_numpy_reprs(tmp_path):
    path = write_verl_console_log(tmp_path / "verl.log", steps=4)
    scalars = read_text_metrics(path, "r").committed.scalars
    assert sorted(set(scalars["step"])) == [1, 2, 3, 4]
    assert scalars.query("tag == 'timing_s/gen'")["value"].tolist() == [3.5] * 4
    assert scalars.query("tag == 'response_length/mean' and step == 2")["value"].item() == 202.0


def test_verl_line_parsing_edge_cases(tmp_path):
    path = tmp_path / "v.log"
    path.write_text(
        "(WorkerDict pid=1) loading step:abc\n"
        "\x1b[36m(TaskRunner pid=7)\x1b[0m step:3 - a/b:1.5 - c:nan - d:[1, 2] - e:inf\n"
    )
    scalars = read_text_metrics(path, "r").committed.scalars
    values = dict(zip(scalars["tag"], scalars["value"], strict=True))
    assert values["a/b"] == 1.5 and math.isnan(values["c"]) and values["e"] == math.inf
    assert "d" not in values and set(scalars["step"]) == {3}


def test_plain_jsonl_with_step_and_nested_fields(tmp_path):
    path = write_jsonl_metrics(tmp_path / "m.jsonl", steps=3)
    scalars = read_text_metrics(path, "r").committed.scalars
    assert set(scalars["tag"]) == {"loss", "eval/acc"}
    assert scalars["wall_time"].tolist()[:2] == [1000.0, 1000.0]


def test_rollout_jsonl_is_not_a_metric_log(tmp_path):
    write_rollout_jsonl(tmp_path / "rollouts.jsonl")
    bundle = load_metrics(tmp_path)
    assert bundle.runs == [] and len(bundle.scalars) == 0


def test_bad_jsonl_line_is_a_problem_with_its_line_number(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 0, "loss": 1}\n{not json\n{"step": 1, "loss": 2}\n')
    read = read_text_metrics(path, "r")
    assert read.committed.scalars["value"].tolist() == [1.0, 2.0]
    assert [(p.line, p.reason.split(":")[0]) for p in read.committed.problems] == [(2, "invalid JSON")]


def test_half_written_last_line_is_not_committed(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 0, "loss": 1}\n{"step": 1, "lo')
    read = read_text_metrics(path, "r")
    assert read.progress.offset == len('{"step": 0, "loss": 1}\n')
    assert read.committed.problems == [] and read.tail.problems == []


def test_cache_appends_what_a_growing_log_gained(tmp_path):
    logs, cache = tmp_path / "logs", tmp_path / "cache"
    logs.mkdir()
    path = logs / "m.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": s}) + "\n" for s in range(3)) + '{"step": 3, "lo')
    first = load_metrics(logs, cache_dir=cache)
    assert first.scalars["step"].tolist() == [0, 1, 2]
    with path.open("a") as handle:
        handle.write('ss": 3}\n{"step": 4, "loss": 4}\n')
    second = load_metrics(logs, cache_dir=cache)
    assert second.scalars["step"].tolist() == [0, 1, 2, 3, 4]
    assert second.problems == []


def test_cache_hit_gives_the_same_tables(tmp_path):
    root, cache = write_demo_tree(tmp_path / "logs"), tmp_path / "cache"
    fresh = load_metrics(root)
    load_metrics(root, cache_dir=cache)
    cached = load_metrics(root, cache_dir=cache)
    key = ["run", "source", "tag", "step"]
    assert (
        fresh.scalars.sort_values(key)
        .reset_index(drop=True)
        .equals(cached.scalars.sort_values(key).reset_index(drop=True))
    )
    assert cached.histograms["count"].map(type).eq(list).all()
    assert [r.kind for r in cached.runs] == [r.kind for r in fresh.runs]


def test_demo_tree_kinds(tmp_path):
    bundle = load_metrics(write_demo_tree(tmp_path))
    assert {r.run: r.kind for r in bundle.runs} == {
        "di/exp1": "di-engine",
        "logs/metrics.jsonl": "jsonl",
        "logs/roll.log": "stdout",
        "logs/verl.log": "stdout",
        "tb/trl_run": "tensorboard",
    }


def test_missing_path_is_a_not_found_error(tmp_path):
    with pytest.raises(NotFoundError):
        load_metrics(tmp_path / "absent")


def test_single_file_path(tmp_path):
    path = write_verl_console_log(tmp_path / "verl.log", steps=2)
    bundle = load_metrics(path)
    assert [(r.run, r.kind) for r in bundle.runs] == [("verl.log", "stdout")]


def test_data_layer_does_not_import_streamlit():
    import subprocess
    import sys

    code = (
        "import sys, rl_board.metrics.reader, rl_board.health.engine, rl_board.metrics.glossary, "
        "rl_board.cli.check, rl_board.cli.scalars; print('streamlit' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert out.stdout.strip() == "False"


def test_metrics_signature_changes_when_a_log_grows(tmp_path):
    from rl_board.metrics.reader import metrics_signature

    log = write_jsonl_metrics(tmp_path / "metrics.jsonl", steps=3)
    first = metrics_signature(tmp_path)
    assert metrics_signature(tmp_path) == first
    with log.open("a") as f:
        f.write(json.dumps({"step": 9, "loss": 1.0}) + "\n")
    assert metrics_signature(tmp_path) != first
    with pytest.raises(NotFoundError):
        metrics_signature(tmp_path / "nope")


def test_verl_file_logger_tags_are_the_keys_of_data(tmp_path):
    from rl_board.api import Settings, check_metrics, explain

    path = write_verl_file_log(tmp_path / "file_logger", steps=12, negative_kl_from=8)
    logged = [json.loads(line) for line in path.read_text().splitlines()]
    bundle = load_metrics(tmp_path / "file_logger")
    [info] = bundle.runs
    assert info.run == "gsm8k_grpo/qwen_run1.jsonl" and info.kind == "jsonl"
    assert set(bundle.scalars["tag"]) == set(logged[0]["data"]), "no 'data/' prefix: verl's own names"
    kl = bundle.series(info.run, "actor/kl_loss")
    assert kl["step"].tolist() == [r["step"] for r in logged]
    assert kl["value"].tolist() == pytest.approx([r["data"]["actor/kl_loss"] for r in logged])
    entry = explain("actor/kl_loss")
    assert entry is not None and entry.pattern == "actor/kl_loss"  # the glossary knows the tag as read
    fired = [f for f in check_metrics(bundle, Settings()) if f.rule == "kl_negative"]
    assert [f.run for f in fired] == [info.run] and "actor/kl_loss" in fired[0].message
    assert fired[0].steps == [r["step"] for r in logged if r["data"]["actor/kl_loss"] < -1e-3]
