"""What a load does to the files: each classified once, each Parquet file read once, a failed block read
again at the next look, and nothing outside the served folders opened, not even to be classified."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rl_board.rollouts.read import ingest
from rl_board.rollouts.store import RolloutStore
from rl_board.sources import catalogue as catalogue_module
from rl_board.sources import sniff
from rl_board.sources.catalogue import catalogue


def _lines(path: Path, step: int, n: int = 4) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({"step": step, "prompt": f"p{i}", "response": "r", "reward": 1.0}) + "\n"
            for i in range(n)
        )
    )
    return path


def test_each_file_is_classified_once_per_load(tmp_path: Path, monkeypatch) -> None:
    run = tmp_path / "run"
    for rank in range(3):
        _lines(run / f"rollout_data_rank_{rank}.jsonl", 1)
    calls: Counter[str] = Counter()
    real = catalogue_module._classify_file

    def counting(path: Path, *args, **kwargs):
        calls[path.name] += 1
        return real(path, *args, **kwargs)

    monkeypatch.setattr(catalogue_module, "_classify_file", counting)
    RolloutStore.open(run, cache_dir=tmp_path / "cache")
    assert calls == {f"rollout_data_rank_{r}.jsonl": 1 for r in range(3)}


def test_a_parquet_file_is_read_once(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "run" / "completions" / "completions_00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "step": [1, 1],
                "prompt": ["a", "a"],
                "completion": ["x", "y"],
                "accuracy_reward": [1.0, 0.0],
                "advantage": [0.7, -0.7],
            }
        ),
        path,
    )
    opened: Counter[str] = Counter()
    real_open = open

    def counting_open(file, *args, **kwargs):
        if str(file) == str(path):
            opened["open"] += 1
        return real_open(file, *args, **kwargs)

    real_parquet = pq.ParquetFile

    def counting_parquet(source, *args, **kwargs):
        if str(source) == str(path):
            opened["parquet by path"] += 1
        return real_parquet(source, *args, **kwargs)

    (tmp_path / "seg").mkdir()
    monkeypatch.setattr("builtins.open", counting_open)
    monkeypatch.setattr(pq, "ParquetFile", counting_parquet)
    result = ingest.ingest_block(
        str(path),
        0,
        path.stat().st_size,
        str(tmp_path / "seg"),
        catalogue(path.parent).of_role("rollout")[0].reading,
    )
    assert result.samples == 2
    assert opened == {"open": 1}  # the bytes read for the block are the ones parsed


def test_a_block_that_cannot_be_read_is_read_at_the_next_look(tmp_path: Path, monkeypatch) -> None:
    run = tmp_path / "run"
    _lines(run / "r0.jsonl", 1)
    real = ingest.ingest_block
    failing = {"on": True}

    def flaky(file: str, start: int, end: int, *args, **kwargs):
        if failing["on"]:
            return ingest.BlockResult(error="cannot read: Input/output error")
        return real(file, start, end, *args, **kwargs)

    monkeypatch.setattr(ingest, "ingest_block", flaky)
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    assert store.num_samples == 0 and store.report.files[0].error.startswith("cannot read")
    failing["on"] = False
    assert store.stale()  # nothing changed on disk, but the file is still to be read
    store.refresh()
    assert store.num_samples == 4 and not store.report.files[0].error
    assert not store.stale()


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_file_linked_from_outside_the_served_roots_is_never_opened(
    tmp_path: Path, monkeypatch, suffix: str
) -> None:
    served, outside = tmp_path / "served", tmp_path / "outside"
    secret = outside / f"secret{suffix}"
    if suffix == ".jsonl":
        secret.parent.mkdir(parents=True)
        secret.write_text(
            json.dumps({"step": 1, "prompt": "p", "response": "r", "reward": 1.0, "api_key_column": "x"})
            + "\n"
        )
    else:
        secret.parent.mkdir(parents=True)
        pq.write_table(pa.table({"prompt": ["p"], "response": ["r"], "api_key_column": ["x"]}), secret)
    (served / "run").mkdir(parents=True)
    (served / "run" / f"linked{suffix}").symlink_to(secret)
    _lines(served / "run" / "r0.jsonl", 1)
    sniffed: list[str] = []
    for name in ("json_lines", "parquet"):
        real = getattr(sniff, name)
        monkeypatch.setattr(
            sniff,
            name,
            lambda path, *a, _real=real, **k: (sniffed.append(path.name), _real(path, *a, **k))[1],
        )
    found = catalogue(served, allowed=[served])
    linked = next(s for s in found.sources if s.path.name == f"linked{suffix}")
    assert linked.role == "skipped" and "outside the served folders" in linked.reason
    assert f"linked{suffix}" not in sniffed
    runs = RolloutStore.list_runs(served, cache_dir=tmp_path / "cache", allowed=[served])
    assert runs["files"].tolist() == [1]
    store = RolloutStore.open(served / "run", cache_dir=tmp_path / "cache", allowed_roots=[served])
    assert "api_key_column" not in store.fields
    assert any("outside the served folders" in f.error for f in store.report.files)
