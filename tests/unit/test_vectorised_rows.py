"""NeMo-RL's and prime-rl's per-token rows read as numpy arrays give exactly what the per-value rules give.

The per-value rules (``pick``) are the reference: forcing every row down them
(``arrays.plain`` answering None, no block read together) must read the same
store, sample for sample, token for token, on the trainer dumps and on lines
whose rows hold nulls, text, booleans, nested lists, infinities and integers
past 64 bits, with a broken line in the middle of each file. A NeMo-RL block
read together (``token_rows``) gives what its records read one by one give.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rl_board.formats import arrays, nested, token_rows
from rl_board.formats.nested import NEMO_RL, PRIME_RL_TOKENS
from rl_board.rollouts.store import RolloutStore
from tests.helpers import trainer_dumps as T
from tests.helpers.same import assert_frames_same, rows_as_lists, same

BROKEN = '{"content": [["broken"]], "rewards": [1.0], "token_ids": [[1, 2,'


def _odd(record: dict[str, Any], k: int) -> dict[str, Any]:
    """Line ``k`` of a NeMo-RL file with one of the odd values real logs hold (or none)."""
    r = json.loads(json.dumps(record))
    answer = [i for i, m in enumerate(r["token_loss_mask"][0]) if m == 1]  # the response's positions
    case = k % 12
    if case == 1:
        r["generation_logprobs"][0][5] = None
        r["generation_logprobs"][0][answer[1]] = None
        r["advantages"][0][answer[0]] = None
    elif case == 2:
        r["token_ids"][0][3] = "12"
    elif case == 3:
        r["token_loss_mask"][0] = [float(x) for x in r["token_loss_mask"][0]]
    elif case == 4:
        r["token_loss_mask"][0] = [bool(x) for x in r["token_loss_mask"][0]]
    elif case == 5:
        del r["token_loss_mask"]
    elif case == 6:
        r["token_loss_mask"][0][2] = [1]
    elif case == 7:
        r["prev_logprobs"][0][-1] = math.inf
        r["generation_logprobs"][0][-3] = math.nan
        r["prev_logprobs"][0][answer[2]] = -math.inf
        r["generation_logprobs"][0][answer[3]] = math.nan
    elif case == 8:
        r["token_ids"][0][1] = 2**70
        r["sample_loss_mask"] = [0.0]
    elif case == 9:
        r["token_ids"][0] = [float(x) for x in r["token_ids"][0]]
        r["advantages"] = [1.5]
    elif case == 10:
        r["token_loss_mask"][0][4] = "1"
        r["advantages"][0][0] = None
    elif case == 0 and k:
        r["token_loss_mask"][0][answer[4]] = 0  # a position inside the answer not trained on
        r["generation_logprobs"][0][answer[-1]] = 1e308
        r["prev_logprobs"][0][answer[-1]] = -1e308
    elif case == 11:
        r["generation_logprobs"][0] = r["generation_logprobs"][0][:20]
        r["token_ids"][0][0] = True
    return r


def _nemo_dump(out: Path, *, odd: bool) -> Path:
    """A NeMo-RL run (odd values on most lines and a broken line mid-file when ``odd``); its run folder."""
    dump = T.write_nemo_rl(out, steps=3, prompts=4, group=4, seed=5)
    if odd:
        for path in dump.files:
            lines = [
                json.dumps(_odd(json.loads(line), k)) for k, line in enumerate(path.read_text().splitlines())
            ]
            lines.insert(len(lines) // 2, BROKEN)
            path.write_text("\n".join(lines) + "\n")
    return dump.files[0].parent


def _step_files(run: Path) -> list[Path]:
    return sorted(run.glob("train_data_step*.jsonl"))


def _lines(run: Path) -> list[str]:
    """Every line of a NeMo-RL run's training files, file after file."""
    return [line for path in _step_files(run) for line in path.read_text().splitlines()]


def _open(run: Path, cache: Path) -> RolloutStore:
    return RolloutStore.open(run, cache_dir=cache)


def _read(run: Path, cache: Path) -> tuple[pd.DataFrame, list, list, dict]:
    store = _open(run, cache)
    report = store.report
    detail = store.sample(step=store.steps[0], index=3)
    tokens = detail.tokens.to_dict("list")
    return (
        store.samples(),
        [(b.file, b.line, b.reason) for b in report.bad_lines],
        [(w.file, w.line, w.reason) for w in report.warnings],
        {"fields": detail.fields, "tokens": tokens},
    )


@pytest.mark.parametrize("odd", [False, True], ids=["as written", "odd values and a broken line"])
def test_nemo_rl_store_equals_the_per_value_rules(
    odd: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _nemo_dump(tmp_path / "out", odd=odd)
    fast = _read(run, tmp_path / "cache-arrays")
    with monkeypatch.context() as m:
        m.setattr(arrays, "plain", lambda values, *, bools=True: None)
        m.setattr(token_rows, "read", lambda rows, *, bools=True: None)
        slow = _read(run, tmp_path / "cache-per-value")
    assert_frames_same(fast[0], slow[0])
    assert fast[1:3] == slow[1:3]
    assert same(fast[3], slow[3])
    assert fast[3]["tokens"]["token"] and "response_token_ids" in fast[3]["fields"]
    if odd:  # the broken line is named by file and line, and every other line of its file loads
        assert [(f, n) for f, n, _ in fast[1]] == [(f"train_data_step{s}.jsonl", 9) for s in (1, 2, 3)]
        assert all("not valid JSON" in reason for _, _, reason in fast[1])
        assert len(fast[0]) == 3 * 16


def test_each_odd_nemo_line_reads_as_by_the_per_value_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adapter level: the same sample dict (keys in the same order, values and types) for every line; a row
    the fast path keeps as an array holds the items (and their Python types) the per-value list holds."""
    run = _nemo_dump(tmp_path / "out", odd=True)
    records = [json.loads(line) for line in _lines(run) if line != BROKEN]
    fast = [NEMO_RL.nested(r) for r in records]  # type: ignore[misc]
    monkeypatch.setattr(arrays, "plain", lambda values, *, bools=True: None)
    slow = [NEMO_RL.nested(r) for r in records]  # type: ignore[misc]
    assert len(fast) == len(slow) == 48
    for k, (a, b) in enumerate(zip(fast, slow, strict=True)):
        assert same([rows_as_lists(s) for s in a], b), k
    assert any(type(v) is np.ndarray for s in fast for v in s[0].values())  # kept as arrays
    assert any("token_loss_mask" in s[0] for s in fast)  # the fast path did hit every branch it has
    assert any("response_token_ids" not in s[0] for s in fast)


def test_prime_rl_token_exports_equal_the_per_value_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    T.write_prime_rl_token_exports(tmp_path / "out", steps=3, prompts=4, group=4)
    run = tmp_path / "out" / "token_exports"
    path = sorted(run.rglob("rank_0.jsonl"))[0]
    lines = path.read_text().splitlines()
    odd = json.loads(lines[0])
    odd["entropy"] = [None] * len(odd["entropy"])  # an optional stream written as nulls
    odd["inference_logprobs"][-1] = None
    lines[0] = json.dumps(odd)
    path.write_text("\n".join(lines) + "\n")
    records = [json.loads(line) for p in sorted(run.rglob("*.jsonl")) for line in p.read_text().splitlines()]
    fast = _read(run, tmp_path / "cache-arrays")
    fast_samples = [PRIME_RL_TOKENS.nested(r) for r in records]  # type: ignore[misc]
    monkeypatch.setattr(arrays, "plain", lambda values, *, bools=True: None)
    slow = _read(run, tmp_path / "cache-per-value")
    slow_samples = [PRIME_RL_TOKENS.nested(r) for r in records]  # type: ignore[misc]
    assert_frames_same(fast[0], slow[0])
    assert fast[1:3] == slow[1:3]
    assert same(fast[3], slow[3])
    assert same([[rows_as_lists(x) for x in s] for s in fast_samples], slow_samples)


@pytest.mark.parametrize("values", [[1, 2.5, True, None], [], [math.inf, -math.inf, 0], [2**62, 3]])
def test_plain_rows_are_floats_with_missing_as_nan(values: list) -> None:
    row = arrays.plain(values)
    assert row is not None and row.dtype == np.float64 and len(row) == len(values)
    for got, value in zip(row.tolist(), values, strict=True):
        finite = value is not None and math.isfinite(float(value))
        assert (got == float(value)) if finite else math.isnan(got)


@pytest.mark.parametrize("values", [[1, "2"], [1, [2]], [{"a": 1}], [10**400], "123", None])
def test_rows_holding_more_than_numbers_are_left_to_the_per_value_rules(values: Any) -> None:
    assert arrays.plain(values) is None


def test_a_boolean_is_no_token_id() -> None:
    assert arrays.plain([True, 3], bools=False) is None
    assert arrays.plain([True, 3]) is not None


_PLAIN_CASES = (0, 1, 3, 4, 5, 7, 8, 9)  # ``_odd``'s lines whose rows hold only numbers, nulls and booleans


def _one_by_one(records: list[Any], monkeypatch: pytest.MonkeyPatch) -> tuple[list, list]:
    """Each record's samples through the per-record reader, and through the per-value rules."""
    vectorised = [NEMO_RL.nested(r) for r in records]  # type: ignore[misc]
    with monkeypatch.context() as m:
        m.setattr(arrays, "plain", lambda values, *, bools=True: None)
        per_value = [NEMO_RL.nested(r) for r in records]  # type: ignore[misc]
    return vectorised, per_value


def _read_together(records: list[Any], monkeypatch: pytest.MonkeyPatch) -> list:
    """The block through ``nested_many``, failing if it fell back to reading records one by one."""

    def refused(record: Any) -> list:
        raise AssertionError("the block was read record by record")

    with monkeypatch.context() as m:
        m.setattr(nested, "_nemo_samples", refused)
        return NEMO_RL.nested_many(records)  # type: ignore[misc]


def test_a_nemo_block_read_together_reads_as_its_records_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _nemo_dump(tmp_path / "out", odd=False)
    lines = _lines(run)
    records: list[Any] = [_odd(json.loads(line), k) for k, line in enumerate(lines) if k % 12 in _PLAIN_CASES]
    records.insert(3, ["not", "a", "record"])  # a line that is no object: no sample, as one by one
    together = _read_together(records, monkeypatch)
    vectorised, per_value = _one_by_one(records, monkeypatch)
    assert len(together) == len(records) and together[3] == []
    for k, (a, b, c) in enumerate(zip(together, vectorised, per_value, strict=True)):
        assert same(a, b), k
        assert same([rows_as_lists(s) for s in a], c), k
    assert any("token_loss_mask" in s[0] for s in together if s)  # every branch was taken
    assert any("response_token_ids" not in s[0] for s in together if s)
    assert any("gen_logprob_mean" not in s[0] for s in together if s)


def test_a_block_with_a_row_of_text_is_read_record_by_record(tmp_path: Path) -> None:
    run = _nemo_dump(tmp_path / "out", odd=False)
    records = [json.loads(line) for line in _step_files(run)[0].read_text().splitlines()]
    records[2]["token_ids"][0][3] = "12"
    together = NEMO_RL.nested_many(records)  # type: ignore[misc]
    assert same(together, [NEMO_RL.nested(r) for r in records])  # type: ignore[misc]


@pytest.mark.parametrize("seed", range(6))
def test_random_nemo_blocks_read_together_as_one_by_one(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of random lengths (none, shorter or longer than the mask), masks with several runs or none set,
    nulls, infinities, ids past 64 bits or not whole, advantages as one number, rows with and without
    their batch dimension."""
    rng = np.random.default_rng(seed)

    def row(n: int, kind: str) -> list:
        values: list = rng.normal(0, 10.0 ** rng.integers(-3, 17), n).tolist()
        if kind == "ids":
            values = rng.integers(0, 1000, n).tolist()
            if rng.random() < 0.15 and n:
                values[int(rng.integers(n))] = 2**63 + int(rng.integers(1, 2**40))
            if rng.random() < 0.15 and n:
                values[int(rng.integers(n))] = 3.5
        for _ in range(int(rng.integers(0, 3))):
            if n:
                values[int(rng.integers(n))] = [None, math.inf, -math.inf, math.nan, 0][int(rng.integers(5))]
        return [values] if rng.random() < 0.7 else values

    records: list[Any] = []
    for _ in range(60):
        n = int(rng.integers(0, 40))
        mask = (
            [int(x) for x in rng.random(n) < 0.5]
            if rng.random() < 0.5
            else [0] * (n // 2) + [1] * (n - n // 2)
        )
        if rng.random() < 0.1 and n:
            mask[int(rng.integers(n))] = [True, 0.5, None][int(rng.integers(3))]
        record: dict[str, Any] = {
            "content": [[f"m{j}" for j in range(7)]],
            "rewards": [float(rng.random())],
            "idx": 7,
        }
        if rng.random() < 0.9:
            record["token_loss_mask"] = [mask]
        for key, kind in (
            ("token_ids", "ids"),
            ("advantages", ""),
            ("generation_logprobs", ""),
            ("prev_logprobs", ""),
        ):
            if rng.random() < 0.9:
                record[key] = row(max(n + int(rng.integers(-5, 6)), 0), kind)
        if rng.random() < 0.1:
            record["advantages"] = [0.25]
        records.append(record)
    together = _read_together(records, monkeypatch)
    vectorised, per_value = _one_by_one(records, monkeypatch)
    for k, (a, b, c) in enumerate(zip(together, vectorised, per_value, strict=True)):
        assert same(a, b), k
        assert same([rows_as_lists(s) for s in a], c), k


def _in_order(values: list[float]) -> float:
    total = 0.0
    for x in values:
        total += x
    return total


def test_a_mean_adds_its_values_left_to_right() -> None:
    """A pairwise sum of these values (numpy's ``sum``) and a compensated one (Python's ``sum`` from 3.12)
    are not the sum every path takes: left to right."""
    values = [1e16, 1.0, -1e16, 1.0, 3.0, 1e-3, 7.0, -2.5, 1e15, 1.0, -1e15, 0.1, 0.2, 0.3, 5e15, 1.0, 1.0]
    rows = token_rows.read([values, values[::-1], [], values[:3]])
    mask = token_rows.read([[1] * len(values), [1] * len(values), [], [1, 1, 1]])
    assert rows is not None and mask is not None
    got = token_rows.means(rows, token_rows.positions(mask))
    expected = [_in_order(values) / 17, _in_order(values[::-1]) / 17, None, _in_order(values[:3]) / 3]
    assert got == expected
    assert expected[0] != float(np.sum(values)) / 17  # the test tells a pairwise sum apart
    assert arrays.mean(np.array(values)) == expected[0] == nested._mean(values)
    with np.errstate(over="raise"):  # a sum past the largest float is inf, silently, as in Python
        huge = token_rows.read([[1e308, 1e308]])
        assert huge is not None
        assert token_rows.means(huge, token_rows.positions(token_rows.read([[1, 1]]))) == [math.inf]  # type: ignore[arg-type]


def _odd_lines(record: dict[str, Any]) -> list[str]:
    """Lines simdjson must leave to the careful path, or read exactly as it does."""
    text = json.dumps(record)
    mask = record["token_loss_mask"][0]
    lines = [text, json.dumps({**record, "token_ids": record["token_ids"][0]})]  # a row without its batch
    nested = {**record, "token_loss_mask": [[*mask[:3], [1], *mask[4:]]]}
    lines.append(json.dumps(nested))  # an array inside a row: as_buffer would flatten it
    escaped = json.dumps({**nested, "content": [["a \\u005b b"]]}).replace("\\\\u005b", "\\u005b")
    lines.append(escaped)  # ... and a "[" escaped in a string, which a count of "[" would miss
    lines.append(json.dumps({**record, "content": [["smile \U0001f600"]]}))  # a surrogate pair, escaped
    lines.append(text.replace('"content": [["', '"content": [["\\ud800', 1))  # a lone surrogate
    lines.append(text.replace("[[", "[[NaN, ", 1))  # a literal NaN
    lines.append(text.replace('"token_ids": [[', '"token_ids": [[18446744073709551616, ', 1))  # past 64 bits
    lines.append("\ufeff" + text)  # a BOM
    lines.append(text[:-1] + ', "token_ids": [[1, 2, 3]]}')  # a key given twice
    lines.append(text[:-1] + ', "deep": ' + "[" * 70 + "]" * 70 + "}")  # deeper than a sample may be
    for key, value in (
        ("advantages", [[1.0], [2.0]]),  # a batch of two: no row
        ("generation_logprobs", [[]]),
        ("prev_logprobs", [None, 1.5, True, 2]),
        ("token_ids", [[1, True, 3]]),
        ("token_loss_mask", [[True, False, 1, 1.0]]),
    ):
        lines.append(json.dumps({**record, key: value}))
    return lines


def test_nemo_lines_packed_by_simdjson_read_as_by_ujson(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rl_board.formats import Reading
    from rl_board.rollouts.read import adapted, bulk, simd_rows

    run = _nemo_dump(tmp_path / "out", odd=False)
    lines = _lines(run)
    body = [*lines[:5], *_odd_lines(json.loads(lines[5])), *lines[6:12]]
    data = ("\n".join(body) + "\n").encode()
    path, reading = run / "train_data_step1.jsonl", Reading(NEMO_RL.name)
    packed = simd_rows.read_lines(data.splitlines(), NEMO_RL.row_keys)
    assert [k for k, p in enumerate(packed) if p is None] == list(
        range(7, 17)
    )  # the odd lines above, no more
    fast = adapted.parse_lines(data, first_line=1, path=path, fmt=NEMO_RL, reading=reading)
    monkeypatch.setattr(bulk, "USE_SIMD", False)
    slow = adapted.parse_lines(data, first_line=1, path=path, fmt=NEMO_RL, reading=reading)
    assert fast.bad == slow.bad and fast.warnings == slow.warnings and fast.blank == slow.blank
    assert [n for n, _ in fast.bad] == [16] and [n for n, _ in fast.warnings] == [
        11
    ]  # too deep; a lone surrogate
    assert fast.table.schema == slow.table.schema
    assert same(fast.table.to_pylist(), slow.table.to_pylist())


def test_a_packed_nemo_block_is_read_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows simdjson packed go through the block reader as they are: no record is read one by one."""
    from rl_board.formats import Reading
    from rl_board.rollouts.read import adapted, bulk, simd_rows

    run = _nemo_dump(tmp_path / "out", odd=False)
    path = _step_files(run)[0]
    data, reading = path.read_bytes(), Reading(NEMO_RL.name)
    packed = simd_rows.read_lines(data.splitlines(), NEMO_RL.row_keys)
    assert all(p is not None and type(p["token_ids"]) is np.ndarray for p in packed)
    with monkeypatch.context() as m:
        m.setattr(nested, "_nemo_samples", lambda record: pytest.fail("a record was read one by one"))
        together = NEMO_RL.nested_many(packed)  # type: ignore[misc]
        fast = adapted.parse_lines(data, first_line=1, path=path, fmt=NEMO_RL, reading=reading)
    assert same(together, [NEMO_RL.nested(json.loads(line)) for line in data.splitlines()])  # type: ignore[misc]
    monkeypatch.setattr(bulk, "USE_SIMD", False)
    slow = adapted.parse_lines(data, first_line=1, path=path, fmt=NEMO_RL, reading=reading)
    assert fast.table.num_rows == 16 and fast.table.schema == slow.table.schema
    assert same(fast.table.to_pylist(), slow.table.to_pylist())


def test_a_reward_past_any_float_is_a_bad_line_not_a_crash(tmp_path: Path) -> None:
    from rl_board.formats import Reading
    from rl_board.rollouts.read import adapted

    run = _nemo_dump(tmp_path / "out", odd=False)
    path = _step_files(run)[0]
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    record["rewards"] = [int("1" * 400)]
    lines[1] = json.dumps(record)
    data = ("\n".join(lines) + "\n").encode()
    parsed = adapted.parse_lines(data, first_line=1, path=path, fmt=NEMO_RL, reading=Reading(NEMO_RL.name))
    assert [(n, "OverflowError" in reason) for n, reason in parsed.bad] == [(2, True)]
    assert parsed.table.num_rows == len(lines) - 1
