"""A logged key named like a column rl-board adds (derived metrics; the step browser's sample / file /
line; the ``_line`` bookkeeping) is kept as ``<name>_logged`` with one note per file, on every parse
path, instead of making the run unopenable or its rows ambiguous."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rl_board.formats import schema as S
from rl_board.rollouts.read import ingest
from rl_board.rollouts.store import RolloutStore

NAMES = [*S.DERIVED_SAMPLE_FIELDS, "sample", "file", "line", "_line"]
NOTE = "kept as '<name>_logged'"
TOKENS = {"response_tokens": ["t"] * 400, "logprobs": [-0.5] * 400, "ref_logprobs": [-0.6] * 400}


def write(run: Path, lines: list[dict], name: str = "r0.jsonl") -> None:
    run.mkdir(parents=True, exist_ok=True)
    (run / name).write_text("".join(json.dumps(r) + "\n" for r in lines))


def sample(step: int, **extra: object) -> dict:
    return {"step": step, "prompt": "p", "response": "r", "reward": 1.0, **extra}


def check_opened(store: RolloutStore, name: str, values: list) -> None:
    frame = store.samples()
    assert frame.columns.is_unique, list(frame.columns)
    assert frame[f"{name}_logged"].tolist() == values
    notes = [w for w in store.report.warnings if NOTE in w.reason]
    assert len(notes) == 1, store.report.warnings
    assert f"'{name}' → '{name}_logged'" in notes[0].reason


@pytest.mark.parametrize("name", NAMES)
def test_short_lines_pyarrow_path(name: str, tmp_path: Path) -> None:
    write(tmp_path / "run", [sample(i, **{name: i * 10}) for i in range(3)])
    store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    assert store.num_samples == 3
    check_opened(store, name, [0, 10, 20])
    if name == "_line":
        assert store.samples()["line"].tolist() == [1, 2, 3]  # the real line numbers
    detail = store.sample(step=1, index=0)
    assert detail.fields[f"{name}_logged"] == 10


@pytest.mark.parametrize("name", ["kl_mean", "n_tokens", "line", "_line", "sample"])
def test_long_lines_bulk_path(name: str, tmp_path: Path) -> None:
    write(tmp_path / "run", [sample(i, **TOKENS, **{name: str(i)}) for i in range(3)])
    store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    check_opened(store, name, ["0", "1", "2"])
    assert store.samples()["kl_mean"].notna().all()  # the derived column is rl-board's own


@pytest.mark.parametrize("name", ["kl_mean", "_line", "file"])
def test_careful_path(name: str, tmp_path: Path) -> None:
    """NaN sends the lines through ujson, record by record."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "r0.jsonl").write_text(
        "".join(f'{{"step": {i}, "reward": NaN, "{name}": {i}}}\n' for i in range(3))
    )
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    check_opened(store, name, [0, 1, 2])


@pytest.mark.parametrize("name", ["kl_mean", "_line", "line"])
def test_verl_dump_tables_and_adapter_paths(name: str, tmp_path: Path) -> None:
    rows = [{"input": "p", "output": "r", "score": 1.0, name: i} for i in range(3)]
    write(tmp_path / "fast", rows, "5.jsonl")
    write(tmp_path / "careful", [*rows[:2], {**rows[2], "score": float("nan")}], "5.jsonl")  # NaN: adapter
    for run in ("fast", "careful"):
        store = RolloutStore.open(tmp_path / run, cache_dir=tmp_path / f"cache_{run}")
        assert store.report.format == "verl"
        check_opened(store, name, [0, 1, 2])


def test_a_name_already_logged_with_the_suffix(tmp_path: Path) -> None:
    write(tmp_path / "run", [sample(1, kl_mean=1.0, kl_mean_logged="mine")])
    store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    frame = store.samples()
    assert frame["kl_mean_logged"].tolist() == ["mine"]
    assert frame["kl_mean_logged_logged"].tolist() == [1.0]


def test_several_names_one_note_naming_each(tmp_path: Path) -> None:
    write(tmp_path / "run", [sample(1), sample(2, kl_mean=1.0, line=4, reward_gap=None)])
    store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    notes = [w for w in store.report.warnings if NOTE in w.reason]
    assert len(notes) == 1 and notes[0].line == 2
    for name in ("kl_mean", "line", "reward_gap"):
        assert f"'{name}' → '{name}_logged'" in notes[0].reason


def test_one_note_per_file_over_many_blocks(tmp_path: Path) -> None:
    path = tmp_path / "r0.jsonl"
    write(tmp_path, [sample(i, kl_mean=i, pad="x" * 200) for i in range(400)])
    blocks = ingest.plan_blocks(path, 0, path.stat().st_size, block_bytes=8 * 1024)
    assert len(blocks) > 5
    jobs = [(path, s, e) for s, e in blocks]
    (tmp_path / "seg").mkdir()
    results = list(ingest.run_blocks(jobs, tmp_path / "seg", lambda n: None))
    notes = [w for r in results for w in r.warnings if NOTE in w[1]]
    assert len(notes) == 1 and notes[0][0] == 1
    assert sum(r.samples for r in results) == 400
