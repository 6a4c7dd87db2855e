"""Both parse paths agree line for line, and blocks run in workers stay in order."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pytest

from rl_board import formats
from rl_board.formats import Reading
from rl_board.formats import schema as S
from rl_board.rollouts.read import heap, ingest
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


def test_a_load_of_big_jobs_ends_on_blocks(tmp_path: Path, set_sizes, monkeypatch) -> None:
    """Jobs are claimed biggest first: the load's smallest jobs bigger than a block (two per process) are cut
    back into blocks, which every process shares at the end; the rest stay as they were."""
    set_sizes(block_bytes=1000)
    monkeypatch.setattr(ingest.os, "cpu_count", lambda: 2)
    files = []
    for name, lines in (("a", 600), ("b", 300)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(f'{{"step": {i}, "pad": "{"x" * (i % 13)}"}}\n' for i in range(lines)))
        files.append((path, ingest.plan_blocks(path, 0, path.stat().st_size, block_bytes=5000)))
    out = ingest.ending_in_blocks(files)
    jobs = sorted((e - s, k, j) for k, (_, js) in enumerate(files) for j, (s, e) in enumerate(js))
    split = {(k, j) for _, k, j in [x for x in jobs if x[0] > 1000][:4]}
    for k, ((path, before), after) in enumerate(zip(files, out, strict=True)):
        expected = [
            c
            for j, (s, e) in enumerate(before)
            for c in (ingest.plan_blocks(path, s, e) if (k, j) in split else [(s, e)])
        ]
        assert after == expected
        assert after[0][0] == 0 and after[-1][1] == path.stat().st_size
        assert all(e == s2 for (_, e), (s2, _) in zip(after, after[1:], strict=False))
    assert sum(map(len, out)) > sum(len(js) for _, js in files)
    assert sum(e - s <= 1040 for js in out for s, e in js) >= 4 * 4  # four jobs of ~5 KB, now in blocks
    assert ingest.ending_in_blocks([(files[1][0], [(0, 900)])]) == [[(0, 900)]]  # a block already


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


def test_a_big_load_is_cut_into_fewer_bigger_jobs(set_sizes, monkeypatch) -> None:
    set_sizes(block_bytes=4096, segment_bytes=4 * 4096)
    monkeypatch.setattr(ingest.os, "cpu_count", lambda: 2)
    assert ingest.processes() == 2
    assert ingest.job_bytes(10 * 4096) == 4096  # a small load keeps its blocks: every core gets some
    assert ingest.job_bytes(2 * ingest.JOBS_PER_PROCESS * 8192) == 8192  # a share for each of two processes
    assert ingest.job_bytes(10**12) == 4 * 4096  # never past the segment size
    assert ingest.job_bytes(2 * ingest.JOBS_PER_PROCESS * 12000) == 8192  # whole blocks
    monkeypatch.setattr(ingest.os, "cpu_count", lambda: 64)
    assert ingest.processes() == ingest.MOST_PROCESSES
    assert ingest.job_bytes(ingest.JOBS_PER_PROCESS * ingest.MOST_PROCESSES * 8192) == 8192


def _mixed_run(run: Path) -> list[int]:
    """~600 lines: bad and blank ones, a column that appears late, lines longer than a block (one longer
    than the longest line read); the bad lines' numbers."""
    lines, bad = [], []
    for i in range(600):
        record = {"step": i // 20, "reward": float(i), "logprobs": [-0.25] * 40, "response": "r" * (i % 50)}
        if i > 450:
            record["judge"] = f"j{i}"
        if i == 200:
            record["response"] = "long " * 500  # ~2.5 KB: more than a block, less than the longest line
        line = json.dumps(record)
        if i % 113 == 7:
            line, _ = "{broken", bad.append(i + 1)
        elif i == 300:
            line = ""
        elif i == 400:
            line, _ = (
                json.dumps({"step": 1, "response": "x" * 10_000}),
                bad.append(i + 1),
            )  # too long: not read
        lines.append(line)
    (run / "a.jsonl").write_text("\n".join(lines) + "\n")
    return bad


def test_jobs_of_many_blocks_read_as_one_block_each_does(tmp_path: Path, set_sizes, monkeypatch) -> None:
    monkeypatch.setattr(ingest.os, "cpu_count", lambda: 1)  # the jobs' size, whatever the machine
    run = tmp_path / "run"
    run.mkdir()
    bad = _mixed_run(run)
    found = {}
    for name, segment_bytes in (("blocks", 1024), ("jobs", 1 << 20)):
        set_sizes(block_bytes=1024, segment_bytes=segment_bytes, max_line_bytes=8192, compact_small_bytes=1)
        store = RolloutStore.open(run, cache_dir=tmp_path / name)
        found[name] = (
            rows(store._view.table),
            [b.line for b in store.report.bad_lines],
            store.report.files[0].lines,
            len(list((tmp_path / name).rglob("seg-*"))),
        )
    (table, lines, count, segs), (table2, lines2, count2, segs2) = found["blocks"], found["jobs"]
    assert table == table2 and len(table) == 600 - len(bad) - 1
    assert lines == lines2 == bad and count == count2 == 600
    assert [r[S.LINE] for r in table2 if r.get("judge")][0] == 452  # the late column, on its own line
    assert ingest.job_bytes((run / "a.jsonl").stat().st_size) > 2 * 1024  # the bigger jobs: fewer segments
    assert segs2 * 2 < segs, (segs, segs2)
    for path in (tmp_path / "jobs").rglob(
        "seg-*"
    ):  # each job one record batch: fewer arrays to build per open
        assert pa.ipc.open_file(pa.memory_map(str(path))).num_record_batches == 1


def test_a_job_is_parsed_a_block_at_a_time(tmp_path: Path, set_sizes) -> None:
    set_sizes(block_bytes=1024)
    _mixed_run(tmp_path)
    path = tmp_path / "a.jsonl"
    raw = path.read_bytes()
    parts = ingest._parts(path, 0, len(raw), 8192, 1024)
    assert parts[0][0] == 0 and parts[-1][1] == len(raw)
    assert all(
        e == s2 and raw[e - 1 : e] == b"\n" for (_, e, _), (s2, _, _) in zip(parts, parts[1:], strict=False)
    )
    assert all(e - s <= 1024 + 256 for s, e, _ in parts if raw.count(b"\n", s, e) > 1)  # a block, a bit over
    alone = [(e - s, long) for s, e, long in parts if e - s > 1024 and raw.count(b"\n", s, e) == 1]
    assert alone == [(len(raw.splitlines()[200]) + 1, False), (len(raw.splitlines()[400]) + 1, True)]


def test_rl_boards_own_format_is_parsed_a_job_at_a_time_others_a_block(set_sizes) -> None:
    """rl-board's own readers keep arrays as arrays: within a load that keeps its heap, a whole job is one
    piece. A trainer's format, or a field map, goes through readers that hold Python records, and a pool's
    worker keeps no heap: a block at a time."""
    set_sizes(block_bytes=1024, segment_bytes=8192)
    with heap.kept():
        assert ingest._piece_bytes(Reading(formats.NATIVE)) == (8192 if heap._LIBC is not None else 1024)
        assert ingest._piece_bytes(Reading("verl")) == 1024
        assert ingest._piece_bytes(Reading(formats.NATIVE, {"reward": "score"})) == 1024
    assert ingest._piece_bytes(Reading(formats.NATIVE)) == 1024


def test_a_job_lists_at_most_a_files_share_of_bad_lines(tmp_path: Path, set_sizes) -> None:
    set_sizes(block_bytes=4096, segment_bytes=4096)  # many pieces in one job, each with its broken lines
    run = tmp_path / "run"
    run.mkdir()
    cap = ingest.MAX_REPORTED_PER_FILE
    (run / "a.jsonl").write_text("{broken\n" * (cap + 2000) + '{"step": 1, "reward": 1}\n')
    path = run / "a.jsonl"
    result = ingest.ingest_block(str(path), 0, path.stat().st_size, str(tmp_path))
    assert len(result.bad) == cap and result.unlisted == 2000 and result.samples == 1
    assert [n for n, _ in result.bad] == list(range(1, cap + 1))
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    assert store.report.files[0].bad == cap + 2000 and len(store.report.bad_lines) == cap
