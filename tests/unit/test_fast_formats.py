"""The fast table paths for flat trainer formats: taken when they can be, and the same answers as the
careful record path (which names every refusal)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rl_board.rollouts.read import ingest
from rl_board.sources.catalogue import classify
from tests.helpers import trainer_dumps as T

COLUMNS = ("step", "prompt", "response", "reward", "ground_truth", "group")


def both_paths(path: Path) -> tuple:
    found = ingest.parse_paths(path, path.read_bytes(), classify(path).reading)
    return found["table"], found["careful"]


@pytest.mark.parametrize("name", ["verl", "verl_v1", "verl_validation", "trl", "areal", "skyrl_eval"])
def test_fast_path_is_taken_and_agrees(name: str, tmp_path: Path) -> None:
    dump = T.ALL_WRITERS[name](tmp_path / "out")
    for path in dump.files:
        if path.name == "aggregated_results.jsonl":
            continue
        fast, careful = both_paths(path)
        assert fast is not None, f"{path.name} fell back to the careful path"
        assert not fast.bad and not careful.bad
        for column in COLUMNS:
            if column in careful.table.column_names:
                assert fast.table.column(column).to_pylist() == careful.table.column(column).to_pylist(), (
                    column
                )


def test_a_bad_line_sends_the_block_to_the_careful_path(tmp_path: Path) -> None:
    dump = T.write_verl(tmp_path / "out")
    path = dump.files[0]
    with path.open("a") as f:
        f.write('{"input": "p", "output": "r", "score": "high", "step": 1}\n')
    fast, careful = both_paths(path)
    assert fast is None
    assert [line for line, _ in careful.bad] == [len(path.read_text().splitlines())]
