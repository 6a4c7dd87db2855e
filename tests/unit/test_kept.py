"""Kept and discarded: the zero-advantage group rule on hand-made tables and on TRL's dump, prime-rl's
``effective/`` ids found beside ``all/`` (and only inside the served folders)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rl_board.formats import kept, prime
from rl_board.formats.prime import EFFECTIVE
from rl_board.rollouts.store import RolloutStore
from rl_board.sources import catalogue, companions
from tests.helpers import agentic_dumps, trainer_dumps


def test_zero_advantage_groups_are_not_kept() -> None:
    table = pa.table(
        {
            "step": [1, 1, 1, 1, 2, 2, 1],
            "group": ["a", "a", "b", "b", "a", "a", None],
            "advantage": [0.0, 0.0, 0.5, 0.0, 1e-9, -1e-9, 0.0],
        }
    )
    out = kept.zero_advantage(table).to_pydict()
    # group a of step 1 and of step 2 (float noise) are flat; b is not; the row without a group is not judged
    assert out["kept"] == [False, False, True, True, False, False, None]
    assert out["dropped_reason"] == [kept.ZERO_ADVANTAGE] * 2 + [None] * 2 + [kept.ZERO_ADVANTAGE] * 2 + [
        None
    ]


def test_a_reason_a_format_gave_is_kept() -> None:
    table = pa.table(
        {
            "step": [1, 1],
            "group": ["a", "a"],
            "advantage": [0.0, 0.0],
            "kept": [False, None],
            "dropped_reason": ["error: boom", None],
        }
    )
    out = kept.zero_advantage(table).to_pydict()
    assert out["kept"] == [False, False] and out["dropped_reason"] == ["error: boom", kept.ZERO_ADVANTAGE]


def test_no_group_or_advantage_no_verdict() -> None:
    table = pa.table({"step": [1], "advantage": [0.0]})
    assert kept.zero_advantage(table).column_names == ["step", "advantage"]
    own = pa.table({"step": [1], "group": ["a"], "advantage": [0.0], "kept": ["yes"]})  # a log's own column
    assert kept.zero_advantage(own).equals(own)


def test_trl_groups_with_equal_rewards_are_marked(tmp_path: Path) -> None:
    dump = trainer_dumps.write_trl(tmp_path / "out")
    flat: dict[tuple[int, int], bool] = defaultdict(lambda: True)
    written = []
    for path in dump.files:  # TRL's groups: num_generations rows of one prompt, in order
        table = pq.read_table(path).to_pydict()
        for i, (step, advantage) in enumerate(zip(table["step"], table["advantage"], strict=True)):
            key = (step, i // 4)
            flat[key] = flat[key] and abs(advantage) <= 1e-6
            written.append(key)
    store = RolloutStore.open(dump.run_folder(tmp_path), cache_dir=tmp_path / "cache")
    rows = store.samples(columns=["kept", "dropped_reason"])
    assert rows["kept"].tolist() == [not flat[k] for k in written]
    assert any(flat.values()) and not all(flat.values())


def test_prime_effective_ids_found_beside_all(tmp_path: Path) -> None:
    agentic_dumps.write_prime_rl(tmp_path / "out", steps=1)
    train = tmp_path / "out" / "rollouts" / "step_1" / "train"
    ids = [json.loads(line)["id"] for line in (train / "effective" / "traces.jsonl").read_text().splitlines()]
    assert companions.options_for(train / "all", "prime-rl", None) == {EFFECTIVE: ids}
    assert (
        companions.options_for(train / "all", "prime-rl", [train / "all"]) == {}
    )  # outside the served folder
    found = catalogue.catalogue(tmp_path / "out")
    [source] = [s for s in found.sources if s.path.parent.name == "all"]
    assert source.reading is not None and source.reading.options == {EFFECTIVE: ids}
    [copy] = [s for s in found.sources if s.path.parent.name == "effective"]
    assert copy.role == catalogue.SKIPPED and "all/" in copy.reason


def test_a_half_written_effective_line_is_not_counted(tmp_path: Path) -> None:
    data = b'{"id":"a1","env":{}}\n{"env":{},"id":"b2"}\n{"id":"c3","tra'
    assert prime.effective_ids(data) == ("a1", "b2")
