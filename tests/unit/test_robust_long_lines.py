"""A line longer than the limit is never read into memory: it is planned as a block of its own, reported
with its length, and every other line of the file is still read. Memory stays bounded by the limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rl_board.metrics import stdout
from rl_board.rollouts.read import ingest
from rl_board.rollouts.store import RolloutStore

MB = 1 << 20


def ok(step: int) -> bytes:
    return json.dumps({"step": step, "prompt": "p", "response": "r" * 50, "reward": 1.0}).encode() + b"\n"


def with_long_line(path: Path, size: int, *, before: int = 30, after: int = 30, sparse: bool = False) -> int:
    """Good lines, one line of ``size`` bytes (newline included), good lines; returns the long line's
    start."""
    head = b"".join(ok(i) for i in range(before))
    opening = b'{"step": 999, "response": "'
    with open(path, "wb") as f:
        f.write(head + opening)
        body = size - len(opening) - 3
        if sparse:
            f.seek(f.tell() + body)
        else:
            f.write(b"x" * body)
        f.write(b'"}\n' + b"".join(ok(before + i) for i in range(after)))
    return len(head)


def test_plan_blocks_give_the_long_line_a_block_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "r0.jsonl"
    start = with_long_line(path, 5 * MB)
    blocks = ingest.plan_blocks(path, 0, path.stat().st_size, max_line=MB)
    assert (start, start + 5 * MB) in blocks
    assert blocks[0][0] == 0 and blocks[-1][1] == path.stat().st_size
    assert all(e == s2 for (_, e), (s2, _) in zip(blocks, blocks[1:], strict=False))
    assert all(e - s <= MB for s, e in blocks if s != start)


@pytest.mark.parametrize("planned", [True, False])
def test_ingest_reports_the_long_line_and_keeps_the_others(tmp_path: Path, planned: bool) -> None:
    path = tmp_path / "r0.jsonl"
    with_long_line(path, 5 * MB)
    size = path.stat().st_size
    blocks = ingest.plan_blocks(path, 0, size, max_line=MB) if planned else [(0, size)]
    (tmp_path / "seg").mkdir()
    results = [ingest.ingest_block(str(path), s, e, str(tmp_path / "seg"), max_line=MB) for s, e in blocks]
    bad, offset = [], 0
    for result in results:
        bad += [(offset + n, reason) for n, reason in result.bad]
        offset += result.lines
    assert offset == 61 and sum(r.samples for r in results) == 60
    assert bad == [(31, f"line of {5 * MB:,} bytes is longer than the 1 MB limit (not read)")]


def test_store_with_a_small_limit(tmp_path: Path, set_sizes) -> None:
    set_sizes(max_line_bytes=MB)
    run = tmp_path / "run"
    run.mkdir()
    with_long_line(run / "r0.jsonl", 3 * MB)
    unfinished = b'{"step": 5, "response": "' + b"y" * (2 * MB)
    with open(run / "r0.jsonl", "ab") as f:  # and a long line still being written: pending, not bad
        f.write(unfinished)
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    assert store.num_samples == 60
    assert [(b.line, b.reason) for b in store.report.bad_lines] == [
        (31, f"line of {3 * MB:,} bytes is longer than the 1 MB limit (not read)")
    ]
    assert store.report.files[0].pending_bytes == len(unfinished)


RSS_SCRIPT = textwrap.dedent("""
    import resource, sys
    from pathlib import Path
    from rl_board.rollouts.read import ingest
    from tests.unit.test_robust_long_lines import ok, with_long_line

    tmp, size, cap = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    warm = tmp / "warm.jsonl"
    warm.write_bytes(b"".join(ok(i) for i in range(2000)))
    ingest.ingest_block(str(warm), 0, warm.stat().st_size, str(tmp))  # imports and pools warmed up
    path = tmp / "r0.jsonl"
    with_long_line(path, size, sparse=True)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kw = {} if cap == 0 else {"max_line": cap}
    blocks = ingest.plan_blocks(path, 0, path.stat().st_size, **kw)
    results = [ingest.ingest_block(str(path), s, e, str(tmp), **kw) for s, e in blocks]
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(grew * 1024, sum(r.samples for r in results), [b for r in results for b in r.bad])
""")


def peak_growth(tmp_path: Path, size: int, cap: int) -> tuple[int, int, list]:
    """Peak RSS growth (bytes) of planning and ingesting a file with one ``size``-byte line, in a fresh
    process."""
    out = subprocess.run(
        [sys.executable, "-c", RSS_SCRIPT, str(tmp_path), str(size), str(cap)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parents[2],
    )
    assert out.returncode == 0, out.stderr[-2000:]
    grew, samples, bad = out.stdout.split(" ", 2)
    return int(grew), int(samples), eval(bad)  # a printed list of (line, reason) tuples


def test_memory_stays_bounded_by_the_limit(tmp_path: Path) -> None:
    """A 64 MB line under a 1 MB limit: before, reading it grew the process by ~320 MB."""
    grew, samples, bad = peak_growth(tmp_path, 64 * MB, MB)
    assert samples == 60 and bad == [
        (1, f"line of {64 * MB:,} bytes is longer than the 1 MB limit (not read)")
    ]
    assert grew < 2 * MB + 12 * MB, f"peak RSS grew {grew / MB:.1f} MB"


def test_a_1_gb_line_is_not_read(tmp_path: Path) -> None:
    """The red team's repro (a sparse file costs no disk): before, peak RSS 5.3 GB."""
    grew, samples, bad = peak_growth(tmp_path, (1 << 30) + 2, 0)
    assert samples == 60
    assert bad == [(1, "line of 1,073,741,826 bytes is longer than the 256 MB limit (not read)")]
    assert grew < 64 * MB, f"peak RSS grew {grew / MB:.1f} MB"


def test_the_limit_comes_from_the_environment(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with_long_line(run / "r0.jsonl", 2 * MB)
    cmd = [
        sys.executable,
        "-m",
        "rl_board",
        "summary",
        str(run),
        "--json",
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    env = {**os.environ, "RL_BOARD_MAX_LINE_BYTES": str(MB)}
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["samples"] == 60
    assert [b["line"] for b in report["bad_lines"]] == [31]
    assert "longer than the 1 MB limit" in report["bad_lines"][0]["reason"]


def test_metrics_log_skips_a_long_line(tmp_path: Path, set_sizes) -> None:
    set_sizes(max_line_bytes=MB)
    log = tmp_path / "metrics.jsonl"
    lines = [
        json.dumps({"step": 1, "loss": 0.5}),
        '{"step": 2, "x": "' + "z" * (3 * MB) + '"}',
        json.dumps({"step": 3, "loss": 0.3}),
    ]
    log.write_text("\n".join(lines) + "\n" + '{"step": 4, "x": "' + "z" * (2 * MB))  # the last unfinished
    read = stdout.read_text_metrics(log, "run")
    assert [(p.line, "longer than the 1 MB limit" in p.reason) for p in read.committed.problems] == [
        (2, True)
    ]
    assert read.committed.scalars["step"].tolist() == [1, 3]
    assert read.progress.lines == 3 and read.progress.offset == sum(len(line) + 1 for line in lines)
    assert not read.tail.problems
