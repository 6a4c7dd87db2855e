"""A cached run's summary answered from its cache (``opening.summary_kept``) is the one the opened run gives,
and is never used once a file changed."""

from __future__ import annotations

from pathlib import Path

from rl_board.cli.summary import kept_dict, summary_dict
from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.opening import summary_kept
from rl_board.rollouts.store import RolloutStore

TIMING = ("load_seconds", "from_cache")


def _kept_json(run: Path, cache: Path, fields: dict[str, str] | None = None) -> dict | None:
    kept = summary_kept(run, cache_dir=cache, fields=fields)
    return None if kept is None else kept_dict(kept)


def _without_timing(data: dict) -> dict:
    return {k: v for k, v in data.items() if k not in TIMING}


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    write_run(run, DemoSpec(steps=3, samples=4, ranks=2, tokens=12))
    with open(next(iter(sorted(run.glob("*.jsonl")))), "a") as f:
        f.write("not json\n")  # a bad line: reported alike both ways
    (run / "notes.txt").write_text("not a log\n")  # a file left out: named alike both ways
    return run


def test_the_kept_summary_is_the_opened_runs(tmp_path: Path) -> None:
    run, cache = _run(tmp_path), tmp_path / "cache"
    assert _kept_json(run, cache) is None  # nothing cached yet
    RolloutStore.open(run, cache_dir=cache)
    assert _kept_json(run, cache) is None  # cached, but no summary worked out yet
    opened = summary_dict(RolloutStore.open(run, cache_dir=cache))
    kept = _kept_json(run, cache)
    assert kept is not None and kept["from_cache"] is True
    assert _without_timing(kept) == _without_timing(opened)
    assert kept["bad_line_count"] == 1 and [s["path"] for s in kept["skipped"]] == ["notes.txt"]


def test_a_field_map_keeps_a_summary_of_its_own(tmp_path: Path) -> None:
    run, cache = _run(tmp_path), tmp_path / "cache"
    fields = {"reward": "ref_reward"}
    opened = summary_dict(RolloutStore.open(run, cache_dir=cache, fields=fields))
    assert _kept_json(run, cache) is None  # the run read without the map has no summary kept
    kept = _kept_json(run, cache, fields)
    assert kept is not None and _without_timing(kept) == _without_timing(opened)


def test_a_grown_file_is_not_answered_from_the_kept_summary(tmp_path: Path) -> None:
    run, cache = _run(tmp_path), tmp_path / "cache"
    summary_dict(RolloutStore.open(run, cache_dir=cache))
    assert _kept_json(run, cache) is not None
    path = sorted(run.glob("*.jsonl"))[-1]
    with open(path, "a") as f:
        f.write(path.read_text().splitlines()[0] + "\n")  # one more sample
    assert _kept_json(run, cache) is None
    grown = summary_dict(RolloutStore.open(run, cache_dir=cache))
    kept = _kept_json(run, cache)
    assert kept is not None and kept["samples"] == grown["samples"] == 13
    assert _without_timing(kept) == _without_timing(grown)


def test_a_summary_kept_by_another_release_is_worked_out_again(tmp_path: Path, monkeypatch) -> None:
    from rl_board.rollouts.cache import summary

    run, cache = _run(tmp_path), tmp_path / "cache"
    summary_dict(RolloutStore.open(run, cache_dir=cache))
    assert _kept_json(run, cache) is not None
    monkeypatch.setattr(summary, "SHAPE", summary.SHAPE + 1)  # what a summary holds changed since
    assert _kept_json(run, cache) is None
    summary_dict(RolloutStore.open(run, cache_dir=cache))
    assert _kept_json(run, cache) is not None
