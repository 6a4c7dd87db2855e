"""Smaller red-team findings: huge regex repeats, compressed logs named as skipped."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from rl_board.errors import InvalidArgumentError
from rl_board.rollouts.filters import SampleFilter
from rl_board.rollouts.store import RolloutStore
from rl_board.sources.catalogue import catalogue
from tests.unit.test_cache import make_run


@pytest.mark.parametrize("pattern", ["(a" * 200, "a{1001}", "(x{1000}){1000}"])
def test_absurd_regexes_are_a_clear_message(pattern: str, tmp_path: Path, cache_dir: Path) -> None:
    store = RolloutStore.open(make_run(tmp_path, range(3)), cache_dir=cache_dir)
    with pytest.raises(InvalidArgumentError, match="invalid regular expression"):
        store.count(filters=SampleFilter.build(text=pattern, regex=True))


@pytest.mark.parametrize("pattern", ["a{4294967296}", "x{99999999999999999999}"])
def test_a_repeat_count_too_big_to_parse_is_literal_text_as_re2_reads_it(
    pattern: str, tmp_path: Path, cache_dir: Path
) -> None:
    """RE2 reads ``{n}`` with an n it cannot hold as the characters themselves; the search does the same."""
    run = make_run(tmp_path, range(3))
    with (run / "r0.jsonl").open("a") as f:
        f.write(json.dumps({"step": 3, "prompt": f"say {pattern}", "response": "r", "reward": 1.0}) + "\n")
    store = RolloutStore.open(run, cache_dir=cache_dir)
    found = store.samples(filters=SampleFilter.build(text=pattern, regex=True), columns=["prompt"])
    assert found["prompt"].tolist() == [f"say {pattern}"]


def test_a_regex_python_accepts_but_the_engine_does_not_is_a_clear_message(
    tmp_path: Path, cache_dir: Path
) -> None:
    store = RolloutStore.open(make_run(tmp_path, range(3)), cache_dir=cache_dir)
    with pytest.raises(InvalidArgumentError, match="invalid regular expression"):
        store.count(filters=SampleFilter.build(text=r"(a)\1", regex=True))  # a backreference


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst"])
def test_compressed_logs_are_named_not_ignored(suffix: str, tmp_path: Path) -> None:
    path = tmp_path / "run" / f"rollout_data_rank_0{suffix}"
    path.parent.mkdir()
    path.write_bytes(gzip.compress(b'{"step": 1, "prompt": "p", "response": "r", "reward": 1}\n'))
    [skipped] = catalogue(tmp_path).skipped
    assert skipped.path == path and "compressed" in skipped.reason and "decompress" in skipped.reason
