"""A file's first lines are read for sniffing exactly as ``json`` reads them, whichever reader took them.

simdjson reads what it can (a cached run's open sniffs every file's first line, and those are long lines
of float arrays); everything it would read otherwise goes to ``json``. ``repr`` tells apart what ``==``
would not: 1 from 1.0, -0.0 from 0.0, NaN from a missing value, key order.
"""

from __future__ import annotations

import json

import pytest
import simdjson  # noqa: F401  # a dependency: without it these tests would compare json with itself
from hypothesis import given, settings
from hypothesis import strategies as st

from rl_board.sources import sniff

PARSER = sniff._simd_parser()

numbers = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, -0.0])
)
texts = st.text(max_size=8) | st.sampled_from(["\ud800", "a\udfffb", "\ud83d\ude00", "\x00", "[{", "é"])
values = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=16,
)


def _both(raw: bytes) -> tuple[str, str]:
    try:
        expected = repr(json.loads(raw))
    except (ValueError, RecursionError) as exc:
        expected = type(exc).__name__
    try:
        got = repr(sniff._loads(raw, PARSER))
    except (ValueError, RecursionError) as exc:
        got = type(exc).__name__
    return got, expected


@settings(max_examples=300, deadline=None)
@given(values, st.booleans())
def test_any_value_reads_as_json_reads_it(value: object, ascii_only: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    got, expected = _both(raw)
    assert got == expected


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": NaN, "b": Infinity, "c": -Infinity}',  # json's own words, refused by simdjson
        b'{"a": 123456789012345678901234567890}',  # past 64 bits: an exact int, not a float
        b'{"a": 18446744073709551615, "b": -9223372036854775808}',
        b'{"a": 1e400}',  # inf for json
        b'{"a": "\\ud800"}',  # a lone surrogate json keeps
        b'{"a": "\xed\xa0\x80"}',  # UTF-8 bytes of a surrogate: json decodes them (surrogatepass)
        '{"a": 1}'.encode("utf-16"),  # json detects UTF-16
        b'\xef\xbb\xbf{"a": 1}',  # a BOM
        b'{"a": 1, "a": 2}',  # the last one kept
        b'{"a": [1.5, -0.0, 2, 1E5, 0.1]}',
        b"[" * 2000 + b"]" * 2000,  # deeper than either reads
        b'{"a": 1',  # broken
        b'{"a": 1} x',
    ],
)
def test_edges_read_as_json_reads_them(raw: bytes) -> None:
    got, expected = _both(raw)
    assert got == expected


def test_first_objects_of_a_head() -> None:
    """Objects only, blank lines skipped, a line cut short at the end of the head left out."""
    head = b'{"step": 1, "x": NaN}\n\n[1, 2]\n{"step": 2, "big": 123456789012345678901234567890}\n{"step": 3'
    whole = [line for line in head.split(b"\n")[:4] if line.startswith(b"{")]
    assert repr(sniff._first_objects(head)) == repr([json.loads(line) for line in whole])
