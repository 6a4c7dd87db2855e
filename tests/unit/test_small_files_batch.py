"""Many small files (AReaL writes one per task) are parsed together but read as if each were read alone.

A run read with batches must equal the same run read file by file
(``batch_block_bytes`` 1: no file is small enough), in process and through the
worker pool: the same samples, line numbers, problems naming file and line,
and the cache's answers to a file that changed and to files that appeared.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rl_board.rollouts.read import ingest, pool
from rl_board.rollouts.store import RolloutStore
from tests.helpers import trainer_dumps as T
from tests.helpers.same import assert_frames_same, same

FILE_BY_FILE = {"batch_block_bytes": 1}


def _edit(path: Path, change: Callable[[list], list]) -> None:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    lines = [r if isinstance(r, str) else json.dumps(r) for r in change(records)]
    path.write_text("".join(line + "\n" for line in lines))


def _areal(out: Path, *, odd: bool) -> Path:
    """An AReaL run of 32 task files; with ``odd``, files whose keys, types and lines differ from the rest."""
    dump = T.write_areal(out, steps=2, prompts=16, group=4, seed=3)
    f = dump.files
    if odd:
        _edit(f[1], lambda rs: [dict(r, note="x") for r in rs])  # a key one file has
        _edit(f[2], lambda rs: [dict(r, pred=None) for r in rs])  # logged as null here, text elsewhere
        _edit(f[3], lambda rs: [dict(r, pred="5") for r in rs])
        _edit(f[4], lambda rs: rs[:2] + ['{"task_id": 1, "broken'] + rs[2:])  # a broken line mid-file
        _edit(f[5], lambda rs: [dict(r, group=f"g{i % 2}") for i, r in enumerate(rs)])  # its own groups
        _edit(f[6], lambda rs: rs[:1] + [""] + rs[1:])  # a blank line
        _edit(
            f[7],
            lambda rs: [
                {k: v for k, v in r.items() if k != "tail_version"} if i == 1 else r for i, r in enumerate(rs)
            ],
        )  # a line without its step: the folder says it
        _edit(f[9], lambda rs: [dict(r, seqlen="long") for r in rs])  # a number elsewhere
        _edit(f[10], lambda rs: [dict(r, advantage=0.0) for r in rs])  # a group of zero advantage
        _edit(f[11], lambda rs: [dict(r, n_tokens=3) for r in rs])  # named like a derived column
        _edit(f[12], lambda rs: [dict(r, finish_reason="length") for r in rs])
        _edit(f[13], lambda rs: [dict(r, reward=None) for r in rs])
        _edit(f[14], lambda rs: [dict(r, extra={"a": 1}) for r in rs])  # objects with other fields
        _edit(f[15], lambda rs: [dict(r, extra={"b": [1.5]}) for r in rs])
        _edit(f[16], lambda rs: [dict(r, note='the key "note" in a text') for r in rs])
        _edit(f[17], lambda rs: [dict(r, seqlen=r["seqlen"] + 0.5) for r in rs])  # numbers widen
    return out / "rollout"


def _own(run: Path) -> Path:
    """rl-board's own format, 24 files of 8 lines; one line without a step, one key in one file only."""
    for k in range(24):
        lines = [
            {
                "step": k // 4,
                "prompt": f"p{k} {i}",
                "response": "r" * (1 + (k * 7 + i) % 40),
                "reward": ((k * 8 + i) % 5) / 4,
                "uid": f"u{k}_{i % 2}",
            }
            for i in range(8)
        ]
        if k == 5:
            lines[3].pop("step")
        if k == 9:
            lines[2]["kl"] = 0.5
        folder = run / f"step_{k // 4}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"rank_{k % 4}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run


def _read(store: RolloutStore) -> dict[str, Any]:
    frame = store.samples()
    report = store.report
    step = store.steps[-1]
    detail = store.sample(step=step, index=store.samples_per_step()[step] - 1)
    return {
        "frame": frame,
        "fields": store.fields,
        "bad": [(b.file, b.line, b.reason) for b in report.bad_lines],
        "warnings": [(w.file, w.line, w.reason) for w in report.warnings],
        "files": sorted((f.name, f.samples) for f in report.files),
        "turns": (report.turns_how, report.turns_whole),
        "sample": (detail.fields, detail.line, str(detail.file)),
    }


def _assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert_frames_same(a.pop("frame"), b.pop("frame"))
    for key in a:
        assert same(a[key], b[key]), key


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many shared parses were taken and refused."""
    calls = {"together": 0, "alone": 0}
    parsed_together = ingest._parsed_together

    def counted(*args: Any) -> Any:
        out = parsed_together(*args)
        calls["together" if out is not None else "alone"] += 1
        return out

    monkeypatch.setattr(ingest, "_parsed_together", counted)
    return calls


@pytest.mark.parametrize("kind", ["areal", "areal odd", "rl-board"])
def test_batched_run_equals_the_run_read_file_by_file(
    kind: str, tmp_path: Path, set_sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _own(tmp_path / "own") if kind == "rl-board" else _areal(tmp_path / "out", odd=kind == "areal odd")
    calls = _counting(monkeypatch)
    batched = _read(RolloutStore.open(run, cache_dir=tmp_path / "cache-batched"))
    assert calls["together"] >= 1  # the odd files are read alone, the others still together
    set_sizes(**FILE_BY_FILE)
    alone = _read(RolloutStore.open(run, cache_dir=tmp_path / "cache-alone"))
    _assert_same(batched, alone)
    if kind == "areal odd":
        assert [(line, "not valid JSON" in reason) for _, line, reason in alone["bad"]] == [(3, True)]


def test_batches_through_the_pool_equal_the_run_read_file_by_file(tmp_path: Path, set_sizes) -> None:
    run = _areal(tmp_path / "out", odd=True)
    pool.shutdown()
    try:
        set_sizes(batch_bytes=20_000, pool_min_bytes=1)  # several batches, each a worker's request
        pooled = _read(RolloutStore.open(run, cache_dir=tmp_path / "cache-pool"))
        assert pool.running() is not None
    finally:
        pool.shutdown()
    set_sizes(**FILE_BY_FILE, pool_min_bytes=1 << 40)
    _assert_same(pooled, _read(RolloutStore.open(run, cache_dir=tmp_path / "cache-alone")))


def test_a_changed_file_and_new_files_are_read_again_in_a_batch(tmp_path: Path, set_sizes) -> None:
    run = _areal(tmp_path / "out", odd=False)
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    files = sorted(run.rglob("*.jsonl"), key=lambda p: (int(p.parent.name), int(p.stem)))
    _edit(files[3], lambda rs: [dict(r, reward=0.25) for r in rs[:-1]])  # rewritten, one line shorter
    _edit(files[8], lambda rs: rs + [dict(rs[0], sample_idx=99, reward=0.75)])  # a line appended
    for n, source in enumerate(files[:3]):  # new task files, in a new version folder
        new = run / "7" / f"{900 + n}.jsonl"
        new.parent.mkdir(exist_ok=True)
        _edit(source, lambda rs: rs)
        new.write_text(source.read_text().replace('"tail_version": 0', '"tail_version": 7'))
    assert store.refresh()
    set_sizes(**FILE_BY_FILE)
    fresh = RolloutStore.open(run, cache_dir=tmp_path / "cache-fresh")
    _assert_same(_read(store), _read(fresh))
    assert 7 in store.steps and store.num_samples == fresh.num_samples == 32 * 4 - 1 + 1 + 3 * 4
