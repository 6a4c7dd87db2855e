"""The line parser: fast path, quirks real trainers write, and bad lines with reasons."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from rl_board.rollouts.read import jsonl, records


def block(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def good(step: int = 1, **extra: object) -> str:
    return json.dumps({"step": step, "prompt": "p", "response": "r", "reward": 0.5, **extra})


def test_clean_block_keeps_every_line_with_its_number() -> None:
    parsed = jsonl.parse_block(block(good(1), good(2), good(3)), first_line=10)
    assert parsed.table.num_rows == 3
    assert parsed.table.column("_line").to_pylist() == [10, 11, 12]
    assert parsed.bad == []


def test_nan_and_infinity_are_accepted() -> None:
    text = block('{"step": 1, "reward": NaN, "logprobs": [Infinity, -Infinity, 0.5]}')
    parsed = jsonl.parse_block(text, first_line=1)
    assert parsed.bad == []
    reward = parsed.table.column("reward").to_pylist()[0]
    assert reward != reward  # NaN
    assert parsed.table.column("logprobs").to_pylist()[0] == [float("inf"), float("-inf"), 0.5]


@pytest.mark.parametrize("raw, expected", [('"12"', 12), ("12.0", 12), ('" 7 "', 7), ("-3", -3)])
def test_step_variants_that_real_logs_write(raw: str, expected: int) -> None:
    parsed = jsonl.parse_block(block(good(0), f'{{"step": {raw}, "reward": 1}}'), first_line=1)
    assert parsed.bad == []
    assert parsed.table.column("step").to_pylist() == [0, expected]


@pytest.mark.parametrize(
    "line, reason",
    [
        ("not json at all", "not valid JSON"),
        ("[1, 2, 3]", "not a JSON object (found a list)"),
        ('"text"', "not a JSON object (found a string)"),
        ('{"prompt": "no step", "reward": 1}', "missing 'step'"),
        ('{"step": "abc", "reward": 1}', "'step' is not an integer"),
        ('{"step": 1.5, "reward": 1}', "'step' is not an integer"),
        ('{"step": true}', "'step' is a boolean"),
        ('{"step": 1, "reward": "high"}', "'reward' is a string, not a number"),
        ('{"step": 1, "reward": [1]}', "'reward' is a list, not a number"),
        ('{"step": 1, "logprobs": "0.1 0.2"}', "'logprobs' is a string, not a list of numbers"),
        ('{"step": 1, "logprobs": [0.1, "x"]}', "'logprobs[1]' is a string, not a number"),
        ('{"step": 1, "values": [[0.1]]}', "'values[0]' is a list, not a number"),
        ('{"step": 1, "response_tokens": ["a", 3]}', "'response_tokens[1]' is a number, not a string"),
        ('{"step": 1, "prompt": 42}', "'prompt' is a number, not text"),
    ],
)
def test_bad_line_is_reported_with_reason_and_the_rest_kept(line: str, reason: str) -> None:
    parsed = jsonl.parse_block(block(good(1), line, good(2)), first_line=1)
    assert parsed.table.column("step").to_pylist() == [1, 2]
    assert parsed.table.column("_line").to_pylist() == [1, 3]
    assert len(parsed.bad) == 1
    number, message = parsed.bad[0]
    assert number == 2
    assert message.startswith(reason)


def test_blank_lines_are_counted_not_reported() -> None:
    parsed = jsonl.parse_block(block(good(1), "", "   ", good(2)), first_line=1)
    assert parsed.blank == 2
    assert parsed.bad == []
    assert parsed.table.column("_line").to_pylist() == [1, 4]


def test_bom_and_crlf() -> None:
    data = b"\xef\xbb\xbf" + good(1).encode() + b"\r\n" + good(2).encode() + b"\r\n"
    parsed = jsonl.parse_block(data, first_line=1)
    assert parsed.bad == []
    assert parsed.table.column("step").to_pylist() == [1, 2]


def test_invalid_utf8_is_repaired_and_noted() -> None:
    data = b'{"step": 1, "response": "caf\xe9"}\n'
    parsed = jsonl.parse_block(data, first_line=1)
    assert parsed.bad == []
    assert parsed.table.column("response").to_pylist() == ["caf\ufffd"]
    assert parsed.warnings and "UTF-8" in parsed.warnings[0][1]


def test_extra_fields_are_kept_even_with_mixed_types() -> None:
    lines = [good(1, judge="gpt"), good(2, judge=3), good(3, score=0.1)]
    parsed = jsonl.parse_block(block(*lines), first_line=1)
    assert parsed.bad == []
    assert parsed.table.column("judge").to_pylist() == ["gpt", "3", None]
    assert parsed.table.column("score").to_pylist() == [None, None, 0.1]


def test_tables_with_different_extras_unify() -> None:
    a = jsonl.parse_block(block(good(1, judge="x")), first_line=1).table
    b = jsonl.parse_block(block(good(2, judge=5)), first_line=2).table
    c = jsonl.parse_block(block(good(3)), first_line=3).table
    merged = records.unify_tables([a, b, c])
    assert merged.column("judge").to_pylist() == ["x", "5", None]
    assert merged.column("step").type == pa.int64()


def test_lines_that_crash_pyarrow_never_reach_it() -> None:
    """pyarrow.json segfaults on a line like " null"; run it in a child so a regression shows."""
    import subprocess
    import sys

    code = (
        "from rl_board.rollouts.read import jsonl\n"
        "p = jsonl.parse_block(b'{\"step\": 1}\\n null\\nnull\\n', first_line=1)\n"
        "print(p.table.num_rows, [n for n, _ in p.bad])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.split() == ["1", "[2,", "3]"]
