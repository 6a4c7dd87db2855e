"""Token arrays read from simdjson's texts of them, a block at a time (rollouts/read/string_arrays.py)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from rl_board.rollouts.read import bulk
from rl_board.rollouts.read.string_arrays import JsonText, as_list, from_texts

pytestmark = pytest.mark.skipif(bulk.simdjson is None, reason="the simdjson package is not installed")


def _text(tokens: list) -> JsonText:
    """The array as simdjson writes it back (what the long-line reader hands over)."""
    doc = bulk.simdjson.Parser().parse(json.dumps({"t": tokens}).encode())
    return JsonText(doc["t"].mini)


def test_escapes_and_null_lists_read_as_the_strings_they_stand_for() -> None:
    tokens = [['a"b', "c\\d", "\n", "\t\r\b\f", "\x00\x1f\x7f", "é😀", "[x]", '","', "", "\\"], [], ["only"]]
    texts = [_text(tokens[0]), None, _text(tokens[1]), _text(tokens[2])]
    read = from_texts(texts)
    assert read is not None
    read.validate(full=True)
    assert read.to_pylist() == [tokens[0], None, [], ["only"]]
    assert read.type == pa.list_(pa.string())


@pytest.mark.parametrize("items", [[1], [1, "a"], ["a", None], [["a"]], ["a", True], [{}], [[]], ["a", 1.5]])
def test_an_array_not_all_of_strings_is_left_to_the_lists(items: list) -> None:
    assert from_texts([_text(["x"]), _text(items)]) is None
    assert as_list(_text(items)) == items  # the caller reads it as Python values instead


@pytest.mark.parametrize(
    "text",
    [
        b'["\\u2028"]',  # an escape simdjson writes as UTF-8
        b'["\\u00e9"]',  # a code point past ASCII
        b'["\\ud83d\\ude00"]',  # a surrogate pair
        b'["\\x"]',  # no such escape
        b'["a", "b"]',  # a space: not minified
        b'"a"',  # not an array
    ],
)
def test_text_simdjson_would_not_write_is_refused(text: bytes) -> None:
    assert from_texts([JsonText(text)]) is None


def test_escapes_it_would_not_write_but_that_read_plainly_are_read() -> None:
    assert from_texts([JsonText(b'["\\u0041\\/"]')]).to_pylist() == [["A/"]]
