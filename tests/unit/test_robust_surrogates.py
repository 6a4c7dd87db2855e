"""Half a surrogate pair escaped in JSON (``"\\ud83d"`` alone) is valid JSON but no UTF-8: it becomes
U+FFFD with a note for its line, on every parse path, and in metric logs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rl_board import formats
from rl_board.metrics.stdout import read_text_metrics
from rl_board.rollouts.read import ingest, jsonl, records
from rl_board.rollouts.store import RolloutStore

NOTE = "lone surrogate replaced"
GOOD = b'{"step": 1, "prompt": "p", "response": "fine \\ud83d\\ude00", "reward": 1.0}'  # a whole pair
BAD = [
    b'{"step": 2, "prompt": "p", "response": "bad \\ud83d half", "reward": 1.0}',
    b'{"step": 2, "prompt": "\\udc00", "response": "r", "reward": 1.0, "response_tokens": ["\\ude00x"]}',
    b'{"step": 2, "response": "r", "reward": 1.0, "\\ud800key": ["\\uDBFF", {"\\udfff": "\\ud83d\\u0041"}]}',
    b'{"step": 2, "response": "\\ude00\\ud83d", "reward": NaN}',
]
TOKENS = (
    b', "response_tokens": '
    + json.dumps(["t"] * 600).encode()
    + b', "logprobs": '
    + json.dumps([-0.5] * 600).encode()
)


def paths(data: bytes) -> list[tuple[str, jsonl.ParsedBlock]]:
    verl_data = (
        data.replace(b'"response"', b'"output"')
        .replace(b'"reward"', b'"score"')
        .replace(b'"step": ', b'"input": "p", "step": ')
    )
    out = [("ingest", ingest.parse_block(data, first_line=1))]
    for fmt, raw in ((formats.NATIVE, data), ("verl", verl_data)):
        found = ingest.parse_paths(Path("r0.jsonl"), raw, formats.Reading(fmt))
        out += [(f"{fmt} {name}", parsed) for name, parsed in found.items() if parsed is not None]
    return out


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("long", [False, True])
def test_every_path_replaces_and_notes(bad: bytes, long: bool) -> None:
    lines = [GOOD, bad, GOOD]
    if long:
        lines = [line[:-1] + TOKENS + b"}" for line in lines]
    data = b"\n".join(lines) + b"\n"
    for name, parsed in paths(data):
        assert not parsed.bad, (name, parsed.bad)
        assert parsed.table.num_rows == 3, name
        assert [line for line, note in parsed.warnings if NOTE in note] == [2], (name, parsed.warnings)
        text = json.dumps(parsed.table.to_pylist(), ensure_ascii=False)
        assert "\ufffd" in text and "😀" in text, name
        text.encode("utf-8")  # no surrogate is left anywhere


def test_the_red_team_line_loads_in_a_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "r0.jsonl").write_bytes(GOOD + b"\n" + BAD[0] + b"\n")
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    assert store.num_samples == 2 and not store.report.bad_lines
    assert [(w.line, NOTE in w.reason) for w in store.report.warnings] == [(2, True)]
    assert store.sample(step=2, index=0).fields["response"] == "bad \ufffd half"


def test_invalid_utf8_and_a_lone_surrogate_on_one_line_give_both_notes() -> None:
    record, note = records.parse_line(b'{"step": 1, "response": "caf\xe9 \\ud83d"}')
    assert record["response"] == "caf\ufffd \ufffd"
    assert "invalid UTF-8" in note and NOTE in note


def test_escaped_backslash_before_u_is_not_a_surrogate() -> None:
    record, note = records.parse_line(b'{"step": 1, "response": "C:\\\\ud83d"}')
    assert record["response"] == "C:\\ud83d" and note is None


def test_metrics_log_with_lone_surrogates(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "metrics.jsonl").write_bytes(
        b'{"step": 1, "loss": 0.5}\n{"step": 2, "lo\\ud83dss": 0.4, "t": "x\\udc00"}\n'
    )
    read = read_text_metrics(folder / "metrics.jsonl", "run")
    assert set(read.committed.scalars["tag"]) == {"loss", "lo\ufffdss"}
    cmd = [
        sys.executable,
        "-m",
        "rl_board",
        "scalars",
        str(folder),
        "--json",
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "lo\ufffdss" in json.loads(out.stdout)["runs"][0]["tags"]
