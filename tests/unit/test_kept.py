"""Kept and discarded: the zero-advantage group rule on hand-made tables and on TRL's dump, prime-rl's
``effective/`` ids found beside ``all/`` (and only inside the served folders)."""

from __future__ import annotations

import json
import math
import random
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


def _rule_row_by_row(table: pa.Table) -> tuple[list, list]:
    """The zero-advantage rule as its docstring says it, one row at a time: what the whole-column rule is
    held to."""
    rows = table.to_pylist()
    key = [None if r["group"] is None else (r.get("step"), str(r["group"])) for r in rows]
    zero = [
        r["advantage"] is not None and math.isfinite(r["advantage"]) and abs(r["advantage"]) <= 1e-6
        for r in rows
    ]
    flat: dict = {}
    for k, z in zip(key, zero, strict=True):
        if k is not None:
            flat[k] = flat.get(k, True) and z
    kept_out, reasons = [], []
    for r, k in zip(rows, key, strict=True):
        if k is None or r["advantage"] is None or r.get("kept") is False:
            kept_out.append(r.get("kept"))
            reasons.append(r.get("dropped_reason"))
        else:
            kept_out.append(not flat[k])
            reasons.append(kept.ZERO_ADVANTAGE if flat[k] else None)
    return kept_out, reasons


def test_the_rule_over_whole_columns_is_the_rule_row_by_row() -> None:
    rng = random.Random(7)
    for _ in range(400):
        n = rng.randint(1, 24)
        groups = [None if rng.random() < 0.1 else rng.randint(0, 3) for _ in range(n)]
        values = [0.0, 1e-9, -0.0, 0.5, math.nan, math.inf, None]
        columns: dict[str, pa.Array] = {
            "group": pa.array(groups)
            if rng.random() < 0.5
            else pa.array([g if g is None else f"g{g}" for g in groups]),
            "advantage": pa.array([rng.choice(values) for _ in range(n)], pa.float64()),
        }
        if rng.random() < 0.8:
            columns["step"] = pa.array(
                [None if rng.random() < 0.1 else rng.randint(0, 2) for _ in range(n)], pa.int64()
            )
        if rng.random() < 0.5:
            columns["kept"] = pa.array([rng.choice([True, False, None]) for _ in range(n)], pa.bool_())
            columns["dropped_reason"] = pa.array(
                [rng.choice(["error: x", None]) for _ in range(n)], pa.string()
            )
        table = pa.table(columns)
        if n > 2 and rng.random() < 0.3:  # read in two parts
            table = pa.concat_tables([table.slice(0, n // 2), table.slice(n // 2)])
        out = kept.zero_advantage(table).to_pydict()
        assert (out["kept"], out["dropped_reason"]) == _rule_row_by_row(table), table.to_pydict()


def test_a_logs_own_odd_columns_do_not_stop_the_rule() -> None:
    """A ``dropped_reason`` of structs and integer advantages past float64's exact range are read, not
    refused: the rule marks the rows as it marks any."""
    table = pa.table(
        {
            "group": ["a", "a", "b"],
            "advantage": pa.array([0, 0, 2**60], pa.int64()),
            "dropped_reason": pa.array([{"x": 1}, None, None]),
        }
    )
    out = kept.zero_advantage(table).to_pydict()
    assert out["kept"] == [False, False, True]
    assert out["dropped_reason"] == [kept.ZERO_ADVANTAGE, kept.ZERO_ADVANTAGE, None]
