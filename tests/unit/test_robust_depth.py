"""A deeply nested line is a bad line, never a crash: no parser (pyarrow.json segfaults on a few thousand
levels), no recursive Python and no Arrow IPC segment (64 levels at most) ever sees one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rl_board import formats
from rl_board.metrics.stdout import read_text_metrics
from rl_board.rollouts.read import ingest, jsonl, records
from rl_board.rollouts.store import RolloutStore

DEEP = "nested deeper than 64 levels"


def ok(step: int, **extra: object) -> str:
    return json.dumps({"step": step, "prompt": "p", "response": "r", "reward": 1.0, **extra})


def lists(depth: int) -> str:
    """A line ``depth`` levels deep (its own object is one)."""
    return '{"step": 1, "x": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def objects(depth: int) -> str:
    return '{"step": 1, "x": ' + '{"a": ' * (depth - 1) + "1" + "}" * (depth - 1) + "}"


def apart(depth: int) -> str:
    """An item before every level: no run of brackets to spot."""
    return '{"step": 1, "x": ' + '[0, "]", ' * (depth - 1) + "0" + "]" * (depth - 1) + "}"


def block(line: str, good: int = 20) -> bytes:
    return ("".join(ok(i) + "\n" for i in range(good)) + line + "\n").encode()


def summary(run: Path, cache: Path, **env: str) -> subprocess.CompletedProcess:
    """The CLI in a subprocess: a segfault must show as an exit code, not take pytest down."""
    cmd = [sys.executable, "-m", "rl_board", "summary", str(run), "--json", "--cache-dir", str(cache)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, **env})


def test_red_team_repro_summary_survives_a_20000_level_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "r0.jsonl").write_bytes(block('{"step":1,"x":' + "[" * 20000 + "]" * 20000 + "}"))
    out = summary(run, tmp_path / "cache")
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    report = json.loads(out.stdout)
    assert report["samples"] == 20
    assert report["bad_lines"] == [{"file": "r0.jsonl", "line": 21, "reason": DEEP}]


@pytest.mark.parametrize("depth", [20_000, 200_000])
@pytest.mark.parametrize("shape", [lists, objects, apart])
def test_no_parse_path_crashes_on_any_depth(shape, depth: int) -> None:
    """Run in a subprocess: before the fix, pyarrow.json killed the process (SIGSEGV)."""
    code = (
        "import sys\n"
        "from tests.unit.test_robust_depth import all_paths, block\n"
        f"from tests.unit.test_robust_depth import {shape.__name__} as shape\n"
        f"for name, parsed in all_paths(block(shape({depth}))):\n"
        "    assert parsed.table.num_rows == 20, name\n"
        f"    assert parsed.bad == [(21, {DEEP!r})], (name, parsed.bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])


VERL_GOOD = json.dumps({"input": "p", "output": "r", "score": 1.0, "step": 1})


def all_paths(data: bytes) -> list[tuple[str, jsonl.ParsedBlock]]:
    """Every parse path a line can take: pyarrow.json, orjson + bulk, renamed tables, the careful paths."""
    verl_data = data.replace(
        b'"prompt": "p", "response": "r", "reward": 1.0', b'"input": "p", "output": "r", "score": 1.0'
    )
    out = [("ingest", ingest.parse_block(data, first_line=1))]
    for fmt, raw in ((formats.NATIVE, data), ("verl", verl_data)):
        found = ingest.parse_paths(Path("r0.jsonl"), raw, formats.Reading(fmt))
        out += [(f"{fmt} {name}", parsed) for name, parsed in found.items() if parsed is not None]
    return out


@pytest.mark.parametrize("shape", [lists, objects, apart])
@pytest.mark.parametrize("depth", [65, 100, 1_100])
def test_every_path_reports_a_line_deeper_than_64_levels(shape, depth: int) -> None:
    for name, parsed in all_paths(block(shape(depth))):
        assert parsed.table.num_rows == 20, name
        assert parsed.bad == [(21, DEEP)], (name, parsed.bad)


@pytest.mark.parametrize("shape", [lists, objects, apart])
def test_64_levels_are_kept_on_every_path(shape) -> None:
    for name, parsed in all_paths(block(shape(64))):
        assert parsed.table.num_rows == 21 and not parsed.bad, (name, parsed.bad)


def test_careful_path_refuses_before_parsing() -> None:
    with pytest.raises(records.BadLine, match=DEEP):
        records.parse_line(lists(65).encode())
    with pytest.raises(records.BadLine, match=DEEP):
        records.parse_line(("[" * 1_000_000).encode())  # not even closed
    assert records.parse_line(lists(64).encode())[0]["step"] == 1


def test_brackets_and_escapes_inside_strings_are_not_nesting() -> None:
    lines = [
        ok(1, response="[{" * 5_000),
        ok(2, response='\\"' * 100 + "[" * 100, prompt="]" * 300),
        ok(3, response="\\" * 101, ground_truth="{" * 70),
        json.dumps({"step": 4, "x": [["[" * 80, '"]]"']] * 50, "y": '"' * 65}),
    ]
    data = "".join(line + "\n" for line in lines).encode()
    assert records.deep_lines(data) == []
    for name, parsed in all_paths(data):
        assert parsed.table.num_rows == 4 and not parsed.bad, (name, parsed.bad)


def test_a_65_level_line_no_longer_breaks_the_run(tmp_path: Path) -> None:
    """Before: pyarrow read it, and the segment could not be written (Arrow IPC: "Max recursion depth")."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "r0.jsonl").write_bytes(block(objects(65)) + block(lists(64), good=0))
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    assert store.num_samples == 21
    assert [(b.line, b.reason) for b in store.report.bad_lines] == [(21, DEEP)]
    again = RolloutStore.open(run, cache_dir=tmp_path / "cache")  # from the cache: the 64-level column maps
    assert again.num_samples == 21
    assert len(again.samples()) == 21


def test_long_token_lines_with_a_deep_line_take_the_bulk_path(tmp_path: Path) -> None:
    """Lines long enough for orjson's path; orjson takes 1,024 levels, so the scan must send it away."""
    tokens = {"response_tokens": ["t"] * 600, "logprobs": [-0.5] * 600, "ref_logprobs": [-0.6] * 600}
    data = "".join(ok(i, **tokens) + "\n" for i in range(5)).encode() + lists(500).encode() + b"\n"
    assert len(data) / data.count(b"\n") >= ingest.LONG_LINE
    parsed = ingest.parse_block(data, first_line=1)
    assert parsed.table.num_rows == 5 and parsed.bad == [(6, DEEP)]


def test_verl_dump_with_a_deep_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    body = "".join(VERL_GOOD + "\n" for _ in range(10))
    (run / "3.jsonl").write_text(
        body + '{"input": "p", "output": "r", "score": 1, "x": ' + "[" * 20000 + "]" * 20000 + "}\n"
    )
    out = summary(run, tmp_path / "cache")
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    report = json.loads(out.stdout)
    assert report["format"] == "verl" and report["samples"] == 10
    assert report["bad_lines"] == [{"file": "3.jsonl", "line": 11, "reason": DEEP}]


@pytest.mark.parametrize(
    "line",
    [
        '{"step": 3, "x": ' + "[" * 20000 + "]" * 20000 + "}",
        '{"step": 3, "x": ' + '{"a": ' * 900 + "1" + "}" * 900 + "}",
        '{"step": 3, "x": ' + '{"a": ' * 65 + "1" + "}" * 65 + "}",
    ],
)
def test_metrics_log_with_a_deep_line(tmp_path: Path, line: str) -> None:
    log = tmp_path / "metrics.jsonl"
    log.write_text(
        json.dumps({"step": 1, "loss": 0.5})
        + "\n"
        + line
        + "\n"
        + json.dumps({"step": 2, "loss": 0.4})
        + "\n"
    )
    read = read_text_metrics(log, "run")
    assert [(p.line, p.reason) for p in read.committed.problems] == [(2, DEEP)]
    assert sorted(read.committed.scalars["step"].tolist()) == [1, 2]


def test_roll_metrics_tag_with_a_deep_payload(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    payload = '{"step": 1, "metrics": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}"
    log.write_text("x metrics_tag: " + payload + '\ny metrics_tag: {"step": 2, "metrics": {"loss": 0.1}}\n')
    read = read_text_metrics(log, "run")
    assert [p.line for p in read.committed.problems] == [1]
    assert DEEP in read.committed.problems[0].reason
    assert read.committed.scalars["step"].tolist() == [2]


def test_scalars_cli_survives_the_red_team_line(tmp_path: Path) -> None:
    run = tmp_path / "m"
    run.mkdir()
    (run / "metrics.jsonl").write_text(
        json.dumps({"step": 1, "loss": 0.5}) + "\n" + '{"step":1,"x":' + "[" * 20000 + "]" * 20000 + "}\n"
    )
    cmd = [
        sys.executable,
        "-m",
        "rl_board",
        "scalars",
        str(run),
        "--json",
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    problems = json.loads(out.stdout)["runs"][0]["problems"]
    assert [p["reason"] for p in problems] == [DEEP]


def test_roll_dump_with_deep_json_in_a_string(tmp_path: Path) -> None:
    """ROLL's ``messages`` column holds JSON text that its adapter parses: a deep one costs that row its
    prompt, never the run (nor the other rows of the file, which is one record)."""
    run = tmp_path / "run"
    run.mkdir()
    record = {
        "responses": ["a", "b"],
        "scores": [1.0, 0.5],
        "messages": ["[" * 20000, json.dumps([{"role": "user", "content": "hi"}])],
    }
    (run / "rollout_dump_data.step_3.jsonl").write_text(json.dumps(record) + "\n")
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    assert store.num_samples == 2 and store.report.bad_line_count == 0
    prompts = store.samples(columns=["prompt"])["prompt"].tolist()
    assert not isinstance(prompts[0], str) and "hi" in prompts[1]


def _nest(depth: int, shape: str) -> str:
    """A value ``depth - 1`` levels deep: a line holding it under a top-level key is ``depth`` deep."""
    if shape == "lists":
        return "[" * (depth - 1) + "]" * (depth - 1)
    if shape == "objects":
        return '{"a": ' * (depth - 1) + "1" + "}" * (depth - 1)
    return '[{"a": ' * ((depth - 1) // 2) + "1" + "}]" * ((depth - 1) // 2) + ("" if depth % 2 else "")


@pytest.mark.parametrize("key", ["x", "messages", "response_tokens", "logprobs", "values"])
@pytest.mark.parametrize("shape", ["lists", "objects", "mixed"])
@pytest.mark.parametrize("depth", [64, 65, 101, 1_100])
def test_the_long_line_readers_find_depth_under_any_key(key: str, shape: str, depth: int) -> None:
    """simdjson reads values down to 1,023 levels: the long-line path finds a value past 64 under any key
    (a packed float array, the token texts, the turns, a key of the log's own) as its line scan did, with
    simdjson and without it."""
    from rl_board.rollouts.read import bulk

    value = _nest(depth, shape)
    deep_enough = records.too_deep(('{"k": ' + value + "}").encode())
    tokens = {"response_tokens": ["t"] * 600, "logprobs": [-0.5] * 600, "ref_logprobs": [-0.6] * 600}
    lines = [ok(i, **tokens) for i in range(5)]
    lines.insert(2, ok(9, **{**tokens, key: "@"}).replace('"@"', value))
    data = "".join(line + "\n" for line in lines).encode()
    old = bulk.USE_SIMD
    try:
        read = {}
        for simd in (True, False):
            bulk.USE_SIMD = simd
            read[simd] = bulk.parse_long_lines(data, 1)
    finally:
        bulk.USE_SIMD = old
    for parsed in read.values():
        if deep_enough:
            assert parsed.bad == [(3, DEEP)] and parsed.table.num_rows == 5
        else:  # kept, or bad for what the value is (lists where numbers or texts belong), not for its depth
            assert all(reason != DEEP for _, reason in parsed.bad)
    assert read[True].bad == read[False].bad
    assert repr(read[True].table.to_pylist()) == repr(read[False].table.to_pylist())
