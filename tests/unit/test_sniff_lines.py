"""The sniff reads a first line as the standard json module does, whichever parser answers."""

from __future__ import annotations

import json
import math

import pytest

from rl_board.sources import sniff

LINES = [
    b'{"step": 1, "prompt": "p", "reward": 0.5, "logprobs": [-0.1, -0.2]}',
    b'{"step": 2, "reward": NaN, "logprobs": [Infinity, -1.0]}',  # orjson refuses: json reads it
    b'{"step": 3, "id": 123456789012345678901234567890}',  # past 64 bits
    b'{"step": 3, "id": -9223372036854775809}',  # below -2**63
    b'{"step": 4, "response": "\\ud800 lone"}',  # a lone surrogate
    '{"step": 5, "response": "\u00e9"}'.encode("utf-16"),  # json detects UTF-16
    b'{"step": 6, "step": 7}',  # a key given twice: the last wins in both
    b"[" * 5000 + b"]" * 5000,  # too deep for either
    b"{broken",
]


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("raw", LINES)
def test_a_line_reads_as_json_reads_it(raw: bytes) -> None:
    try:
        expected = json.loads(raw)
    except (ValueError, RecursionError):
        expected = None
    assert _same(sniff._loaded(raw), expected)
