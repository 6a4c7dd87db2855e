"""Both parse paths agree line for line, and blocks run in workers stay in order."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rl_board import formats
from rl_board.rollouts.read import ingest
from rl_board.rollouts.store import RolloutStore

LINES = [
    json.dumps(
        {
            "step": 1,
            "prompt": "p",
            "response": "r",
            "reward": 0.5,
            "response_tokens": ["a", "b"],
            "logprobs": [-0.1, -0.2],
            "ref_logprobs": [-0.3, -0.1],
            "judge": "x",
        }
    ),
    '{"step": "2", "reward": NaN, "logprobs": [Infinity, -1.0], "ref_logprobs": [0, -1]}',
    "",
    '{"step": 3, "reward": "high"}',
    '{"step": 4, "logprobs": [0.1, "oops"]}',
    '{"step": 5, "logprobs": ["0.25", null], "values": [1, 2]}',
    '{"step": 6, "response_tokens": ["a", 1]}',
    "[1, 2]",
    "{broken",
    json.dumps({"step": 7, "reward": 1, "ground_truth": "42", "judge": 3}),
    '{"prompt": "no step"}',
]


def rows(table) -> list[dict]:
    out = []
    for row in table.to_pylist():
        out.append({k: _norm(v) for k, v in row.items()})
    return out


def _norm(value):
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


def test_bulk_and_arrow_paths_agree() -> None:
    data = ("\n".join(LINES) + "\n").encode()
    found = ingest.parse_paths(Path("r0.jsonl"), data, formats.Reading(formats.NATIVE))
    fast, long = found["arrow"], found["bulk"]
    assert sorted(fast.bad) == sorted(long.bad)
    assert [n for n, _ in long.bad] == [4, 5, 7, 8, 9, 11]
    assert fast.blank == long.blank == 1
    assert rows(fast.table.select(long.table.column_names)) == rows(long.table)
    assert long.table.column("step").to_pylist() == [1, 2, 5, 7]
    assert long.table.column("logprobs").to_pylist()[2][0] == 0.25


def test_plan_blocks_cut_at_newlines_and_skip_the_partial_tail(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    body = "".join(f'{{"step": {i}, "pad": "{"x" * (i % 7)}"}}\n' for i in range(200))
    path.write_text(body + '{"step": 999, "half')
    blocks = ingest.plan_blocks(path, 0, path.stat().st_size, block_bytes=100)
    assert blocks[0][0] == 0 and blocks[-1][1] == len(body.encode())
    raw = path.read_bytes()
    for (_, e), (s2, _) in zip(blocks, blocks[1:], strict=False):
        assert e == s2 and raw[e - 1 : e] == b"\n"
    assert all(raw[e - 1 : e] == b"\n" for _, e in blocks)


@pytest.mark.parametrize("pool", [False, True])
def test_many_blocks_keep_order_and_line_numbers(tmp_path: Path, set_sizes, pool: bool) -> None:
    set_sizes(block_bytes=4096, pool_min_bytes=1 if pool else 1 << 40)
    run = tmp_path / "run"
    run.mkdir()
    lines = []
    for i in range(300):
        lines.append(
            "not json"
            if i % 97 == 5
            else json.dumps({"step": i // 10, "reward": float(i), "logprobs": [-0.5] * 50})
        )
    (run / "a.jsonl").write_text("\n".join(lines) + "\n")
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    frame = store.samples(sort_by="reward")
    expected_lines = [i + 1 for i in range(300) if i % 97 != 5]
    assert frame["line"].tolist() == expected_lines
    assert frame["reward"].tolist() == [float(n - 1) for n in expected_lines]
    assert [b.line for b in store.report.bad_lines] == [i + 1 for i in range(300) if i % 97 == 5]
    assert store.report.files[0].lines == 300
