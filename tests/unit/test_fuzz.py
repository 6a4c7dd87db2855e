"""Property tests: arbitrary bytes and JSON values never escape the parser as exceptions.

Every complete line ends up loaded, reported bad, or counted blank. Examples
per property: $RL_BOARD_FUZZ_EXAMPLES (default 150; try 20000 for a long run).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rl_board import formats
from rl_board.rollouts.read import ingest, jsonl, records

EXAMPLES = int(os.environ.get("RL_BOARD_FUZZ_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)
field_names = st.sampled_from(
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
        "ground_truth",
        "extra",
    ]
)
samples = st.dictionaries(field_names, json_values, max_size=8)


def accounted(data: bytes, parsed: jsonl.ParsedBlock) -> bool:
    lines = data.count(b"\n")
    return parsed.table.num_rows + len(parsed.bad) + parsed.blank == lines


def both_paths(data: bytes) -> list[jsonl.ParsedBlock]:
    """rl-board's own lines through pyarrow.json and through the bulk path, each finished as a load does,
    and through the path a load would choose."""
    found = ingest.parse_paths(Path("r0.jsonl"), data, formats.Reading(formats.NATIVE))
    return [
        found["arrow"],
        found["bulk"],
        ingest.parse_any(Path("r0.jsonl"), data, formats.Reading(formats.NATIVE))[0],
    ]


def every_path(data: bytes) -> list[jsonl.ParsedBlock]:
    """Both native paths, the renamed-table path (None = it refused) and the careful adapter path."""
    found = ingest.parse_paths(Path("r0.jsonl"), data, formats.Reading(formats.NATIVE))
    return [*both_paths(data), *(parsed for parsed in found.values() if parsed is not None)]


@SETTINGS
@given(st.binary(max_size=400))
def test_arbitrary_bytes(raw: bytes) -> None:
    data = raw if raw.endswith(b"\n") else raw + b"\n"
    for parsed in both_paths(data):
        assert accounted(data, parsed)
        assert all(isinstance(reason, str) and reason for _, reason in parsed.bad)


@SETTINGS
@given(st.lists(json_values, min_size=1, max_size=6))
def test_arbitrary_json_values(values: list) -> None:
    data = "".join(json.dumps(v) + "\n" for v in values).encode()
    for parsed in both_paths(data):
        assert accounted(data, parsed)


@SETTINGS
@given(st.lists(samples, min_size=1, max_size=6))
def test_sample_shaped_objects(records: list[dict]) -> None:
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    results = both_paths(data)
    for parsed in results:
        assert accounted(data, parsed)
    fast, long, _ = results
    # Both paths reject the same lines for the same reason (the quoted value may print
    # differently: orjson reads integers past 64 bits as floats).
    assert sorted(_gist(fast.bad)) == sorted(_gist(long.bad))
    assert fast.table.column("step").to_pylist() == long.table.column("step").to_pylist()


def _gist(bad: list[tuple[int, str]]) -> list[tuple[int, str]]:
    return [(line, reason.split(" (")[0]) for line, reason in bad]


# -- deep nesting: around the 64-level limit and far past it -----------------------------------------------

leaves = st.sampled_from(["1", "null", '"]]}"', '"\\\\"', '"\\"[{"', "[]", "{}", '"x"'])
siblings = st.sampled_from(["", "0, ", '"]", ', '{"k": "["}, ', "[[]], "])


@st.composite
def nested_values(draw: st.DrawFn) -> str:
    """A JSON value: a leaf wrapped in lists / objects, sometimes with items beside it."""
    levels = draw(st.one_of(st.integers(0, 5), st.integers(60, 68), st.integers(60, 3000)))
    text = draw(leaves)
    kinds = draw(st.lists(st.booleans(), min_size=levels, max_size=levels))
    before = draw(siblings)
    for is_list in kinds:
        text = f"[{before}{text}]" if is_list else f'{{"a\\"[": {text}}}'
    return text


def _depth(text: str) -> int:
    """A slow, obviously right depth: a character walk that knows strings and escapes."""
    level = deepest = 0
    inside = escaped = False
    for ch in text:
        if inside:
            escaped, inside = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            inside = True
        elif ch in "[{":
            level += 1
            deepest = max(deepest, level)
        elif ch in "]}":
            level -= 1
    return deepest


@SETTINGS
@given(st.lists(nested_values(), min_size=1, max_size=4), st.booleans())
def test_deep_values_on_every_path(values: list[str], long: bool) -> None:
    pad = ', "logprobs": [' + ", ".join(["-0.5"] * 400) + "]" if long else ""
    lines = [f'{{"step": {i}, "x": {text}{pad}}}' for i, text in enumerate(values)]
    data = "".join(line + "\n" for line in lines).encode()
    too_deep = [i + 1 for i, line in enumerate(lines) if _depth(line) > records.MAX_DEPTH]
    assert [i - 1 for i in too_deep] == records.deep_lines(data)
    for parsed in every_path(data):
        assert accounted(data, parsed)
        assert parsed.bad == [(n, records.DEPTH_REASON) for n in too_deep]


@SETTINGS
@given(st.lists(st.text(alphabet='[]{}"\\ ,:a1', max_size=200), min_size=1, max_size=6))
def test_depth_scan_matches_a_character_walk_on_valid_json(texts: list[str]) -> None:
    lines = [json.dumps({"step": 1, "s": t, t: [t, {"k": [t]}]}) for t in texts]
    lines += [
        f'{{"x": {"[" * (records.MAX_DEPTH + len(t) % 3 - 2)}{json.dumps(t)}'
        f"{']' * (records.MAX_DEPTH + len(t) % 3 - 2)}}}"
        for t in texts
    ]
    expected = [i for i, line in enumerate(lines) if _depth(line) > records.MAX_DEPTH]
    assert records.deep_lines("\n".join(lines).encode()) == expected


# -- lone surrogates: escaped halves of pairs, whole pairs, escaped backslashes before "u" -------------------

pieces = st.sampled_from(
    [
        "a",
        "\\ud83d",
        "\\ude00",
        "\\uDBFF",
        "\\udc00",
        "\\\\ud83d",
        "\\\\",
        "\\u0041",
        "\\ud800\\udfff",
        "😀",
        "\\n",
        '\\"',
    ]
)
json_strings = st.lists(pieces, max_size=12).map(lambda p: '"' + "".join(p) + '"')


@SETTINGS
@given(st.lists(st.tuples(json_strings, json_strings, json_strings), min_size=1, max_size=5), st.booleans())
def test_surrogates_on_every_path(triples: list[tuple[str, str, str]], long: bool) -> None:
    pad = ', "response_tokens": [' + ", ".join(['"t"'] * 400) + "]" if long else ""
    lines = [
        f'{{"step": {i}, "response": {a}, "extra {i}": [{b}], {c}: 1{pad}}}'
        for i, (a, b, c) in enumerate(triples)
    ]
    data = "".join(line + "\n" for line in lines).encode()
    lone = [i + 1 for i, line in enumerate(lines) if _has_lone_surrogate(json.loads(line))]
    for parsed in every_path(data):
        assert accounted(data, parsed)
        assert not parsed.bad, parsed.bad
        assert [n for n, note in parsed.warnings if records.SURROGATE_NOTE in note] == lone
        json.dumps(parsed.table.to_pylist(), ensure_ascii=False).encode("utf-8")  # nothing unencodable left
        parsed.table.schema.to_string().encode("utf-8")  # nor in a column name


def _has_lone_surrogate(record: dict) -> bool:
    text = json.dumps(record, ensure_ascii=False)
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)
