"""CLI text output keeps escape sequences from names and logs off the terminal (red-team finding).

A folder, file or tag named with an ANSI or OSC sequence (``ESC]0;title BEL``,
``ESC[2J``) must print as visible ``\\x1b`` text in ``runs``, ``summary``,
``scalars`` and ``check``, never as a control character the terminal obeys.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rl_board.cli import main
from rl_board.cli.common import terminal_lines, terminal_safe
from rl_board.rollouts.demo import DemoSpec, write_run
from tests.helpers.metric_fixtures import write_tensorboard_run

OSC = "\x1b]0;pwned\x07"
CSI = "\x1b[2J\x1b[31m"
NAME = f"run{OSC}{CSI}"
CONTROL = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0), 0x202E, 0x2066)]


def _clean(text: str) -> None:
    body = text[:-1] if text.endswith("\n") else text
    lines = body.split("\n")
    for line in lines:
        assert not any(ch in line for ch in CONTROL), repr(line)


def test_terminal_safe_writes_every_control_as_an_escape():
    assert terminal_safe(f"a{OSC}b") == "a\\x1b]0;pwned\\x07b"
    assert terminal_safe("x\r\ny\tz\x9b\x7f\u202e") == "x\\x0d\\x0ay\\x09z\\x9b\\x7f\\u202e"
    assert terminal_safe("plain – ünïcode ✓") == "plain – ünïcode ✓"
    assert terminal_lines(["a\x1b", "b\nc"]) == "a\\x1b\nb\\x0ac"
    for ch in CONTROL:
        assert ch not in terminal_safe(f"[{ch}]")


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A root whose run folder, rollout file, event-file run and metric tags carry escape sequences."""
    root = tmp_path / "root"
    run = root / NAME
    write_run(run, DemoSpec(steps=2, samples=2, ranks=1, tokens=4, seed=1))
    first = next(run.glob("*.jsonl"))
    first.rename(run / f"r{CSI}.jsonl")
    with (run / f"r{CSI}.jsonl").open("a") as handle:
        handle.write(f"not json {OSC}\n")
    (root / f"notes{OSC}.md").write_text("skipped")
    write_tensorboard_run(root / f"tb{OSC}", steps=20, unstable=True, extra_tags=[f"loss{CSI}"])
    rows = [{"step": s, f"acc{OSC}": s / 10} for s in range(4)]
    (root / f"m{CSI}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _run(capsys, *args: str) -> str:
    main(list(args))
    out = capsys.readouterr().out
    _clean(out)
    assert "\\x1b" in out
    return out


def test_runs_text_shows_escapes(hostile, tmp_path, capsys):
    out = _run(capsys, "runs", str(hostile), "--cache-dir", str(tmp_path / "c"))
    assert "run\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31m" in out and "notes\\x1b]0;pwned\\x07.md" in out


def test_summary_text_shows_escapes(hostile, tmp_path, capsys):
    out = _run(capsys, "summary", str(hostile / NAME), "--cache-dir", str(tmp_path / "c"))
    assert "bad: r\\x1b[2J\\x1b[31m.jsonl:" in out


def test_scalars_text_shows_escapes(hostile, tmp_path, capsys):
    out = _run(capsys, "scalars", str(hostile), "--cache-dir", str(tmp_path / "c"))
    assert "loss\\x1b[2J\\x1b[31m" in out and "acc\\x1b]0;pwned\\x07" in out


def test_check_text_shows_escapes(hostile, tmp_path, capsys):
    main(["check", str(hostile), "--cache-dir", str(tmp_path / "c")])
    out = capsys.readouterr().out
    _clean(out)
    assert "tb\\x1b]0;pwned\\x07" in out


def test_json_output_is_unchanged(hostile, tmp_path, capsys):
    """--json already escapes controls (JSON strings); the names come back exactly."""
    main(["scalars", str(hostile), "--json", "--cache-dir", str(tmp_path / "c")])
    data = json.loads(capsys.readouterr().out)
    assert f"tb{OSC}" in {r["run"] for r in data["runs"]}
