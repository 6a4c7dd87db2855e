"""The simdjson reader of the long-line path reads every line exactly as the orjson reader does.

simdjson only ever accepts lines in bulk.py; what it refuses or might read differently falls to orjson (then
the careful path). These properties compare the whole block both ways: same rows (values, types, NaN and
-0.0 included), same bad lines with the same reasons, same warnings, same blank count.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rl_board.rollouts.read import bulk, jsonl, string_arrays

pytestmark = pytest.mark.skipif(bulk.simdjson is None, reason="the simdjson package is not installed")

EXAMPLES = int(os.environ.get("RL_BOARD_FUZZ_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

numbers = st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | st.text(max_size=12) | st.text(alphabet="[]{},x", max_size=6),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
float_arrays = st.lists(
    numbers | st.none() | st.sampled_from(["1.5", "x", True, [1.0], [], [[2]]]), max_size=8
)
keys = st.sampled_from(
    [
        "step",
        "prompt",
        "response",
        "reward",
        "logprobs",
        "ref_logprobs",
        "values",
        "token_rewards",
        "response_tokens",
        "ref_reward",
        "extra",
        "_line",
        "\x00",
        "a\x00b",
    ]
)
samples = st.dictionaries(keys, json_values | float_arrays, max_size=8)


def _both(data: bytes) -> tuple[jsonl.ParsedBlock, jsonl.ParsedBlock]:
    old = bulk.USE_SIMD
    try:
        bulk.USE_SIMD = True
        simd = bulk.parse_long_lines(data, 1)
        bulk.USE_SIMD = False
        plain = bulk.parse_long_lines(data, 1)
    finally:
        bulk.USE_SIMD = old
    return simd, plain


def assert_same(data: bytes) -> None:
    simd, plain = _both(data)
    assert repr(simd.table.to_pylist()) == repr(plain.table.to_pylist())
    assert simd.table.schema == plain.table.schema
    assert simd.bad == plain.bad
    assert simd.warnings == plain.warnings
    assert simd.blank == plain.blank


@SETTINGS
@given(st.lists(samples, min_size=1, max_size=5))
def test_sample_shaped_lines_read_the_same(records: list[dict]) -> None:
    assert_same("".join(json.dumps(r) + "\n" for r in records).encode())


token_text = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from('"\\/[],\n\t\x00\x1f\x7f'), max_size=4
)


@SETTINGS
@given(
    st.lists(st.lists(token_text, max_size=6) | st.none() | st.just([None]) | st.just([1, "a"]), max_size=6),
    st.booleans(),
)
def test_token_lists_read_the_same(lists: list, ascii_only: bool) -> None:
    """Token arrays of any text (escapes, quotes, controls, emoji), null lists and lists that are not of
    strings: the block's column read from simdjson's texts of them, as the orjson reader reads them."""
    assert_same(
        "".join(
            json.dumps({"step": 1, "response_tokens": tokens}, ensure_ascii=ascii_only) + "\n"
            for tokens in lists
        ).encode("utf-8")
    )


@SETTINGS
@given(st.lists(st.binary(max_size=120), min_size=1, max_size=4))
def test_arbitrary_bytes_read_the_same(lines: list[bytes]) -> None:
    assert_same(b"".join(line.replace(b"\n", b" ") + b"\n" for line in lines))


@SETTINGS
@given(
    st.lists(
        st.text(alphabet='{}[]":,0123456789.-+eE \\u\ud83d\ude00abNaIfity', max_size=60),
        min_size=1,
        max_size=4,
    )
)
def test_json_like_text_reads_the_same(lines: list[str]) -> None:
    assert_same(
        "".join('{"step": 1, "logprobs": [' + t + "\n" for t in lines).encode("utf-8", "surrogatepass")
    )


@pytest.mark.parametrize(
    "line",
    [
        b'{"step": 1, "a": 1, "a": 2}',  # a key twice: orjson keeps the last
        b'\xef\xbb\xbf{"step": 1}',  # a BOM: simdjson would skip it
        b'{"step": 1, "x\\u0000": 1, "x": 2}',  # a NUL in a key
        b'{"step": 18446744073709551616}',  # an integer past 64 bits
        b'{"step": 1, "logprobs": [1, 2.5, -0.0, 1e-400]}',  # ints, -0.0 and an underflow in a float array
        b'{"step": 1, "logprobs": [NaN, 1]}',  # NaN: the careful path
        b'{"step": 1, "logprobs": [null, "2", 3]}',  # null and a numeric string
        b'{"step": 1, "logprobs": [true, 1]}',
        b'{"step": 1, "logprobs": [[1]]}',
        b'{"step": 1, "logprobs": [[1], [2]]}',  # flattened to as many numbers as items
        b'{"step": 1, "logprobs": [[1], [2]], "s": "\\u005b\\u005B"}',  # escaped "[" to hide the nesting
        (
            b'{"step": 1, "logprobs": [1, 2], "response": "a [b] [[c]]", '
            b'"response_tokens": ["[", "]"], "x": {"[k": ["["]}}'
        ),
        b'{"step": 1, "logprobs": 3}',
        b'{"step": 1, "x": {"a": "[", "a": "y"}, "l": [{"b": 1, "b": "["}]}',  # a key twice, nested
        b'{"step": 1, "x": {"a": "[", "a": "y"}, "logprobs": [[1], [2]]}',  # ... beside a nested array
        b'{"step": 1, "x": {"a": "\\u005b"}, "logprobs": [[1], [2]]}',  # an escaped "[" beside one
        b'{"step": 1, "response": "\\ud83d"}',  # a lone surrogate
        b'{"step": 1, "response": "\\ud83d\\ude00", "s\\"k": {"a": [1]}}',
        b'{"step": 1, "response": "\xff"}',  # bad UTF-8
        b'{"step": "3", "reward": 1.5, "_line": 7}',
        b"[1, 2]",
        b'{"step": 1, "logprobs": [1e400]}',
    ],
)
def test_edge_lines_read_the_same(line: bytes) -> None:
    assert_same(line + b"\n" + b'{"step": 2, "logprobs": [0.5, -1.25], "response_tokens": ["a", "b"]}\n')


def test_demo_lines_take_the_simd_reader(tmp_path) -> None:
    from rl_board.rollouts.demo import DemoSpec, write_run

    data = write_run(tmp_path, DemoSpec(steps=2, samples=4, ranks=1, tokens=50))[0].read_bytes()
    line = data.split(b"\n")[0]
    read = bulk.simd_read(bulk.simdjson.Parser(), line, line, 0)
    assert read is not None and read[2]  # the usual line: its "[" counted with the block's
    record = read[0]
    assert type(record["logprobs"]).__name__ == "ndarray"
    assert type(record["response_tokens"]) is string_arrays.JsonText
    assert_same(data)


@SETTINGS
@given(st.binary(max_size=300), st.integers(min_value=1, max_value=64))
def test_a_blocks_brackets_counted_in_passes(data: bytes, step: int) -> None:
    from rl_board import config

    os.environ["RL_BOARD_BRACKET_COUNT_BYTES"] = str(step)  # a pass boundary anywhere
    config.reset()
    try:
        assert config.sizes().bracket_count_bytes == step
        assert bulk._squares(data) == data.count(b"[")
    finally:
        del os.environ["RL_BOARD_BRACKET_COUNT_BYTES"]
        config.reset()
