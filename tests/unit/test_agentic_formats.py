"""Agent trajectories from each trainer's own dump shape, read through the store: counts by role, tool calls
by name, tool errors, why each ended, per-turn rewards and whether it was kept, against what the writers put
on disk (``tests/helpers/agentic_dumps.py``, ``tests/helpers/agentic_text_dumps.py``)."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from rl_board.formats.kept import ZERO_ADVANTAGE
from rl_board.rollouts.store import RolloutStore
from tests.helpers import agentic_dumps, agentic_text_dumps
from tests.helpers.agent_episodes import Expected

COLUMNS = (
    "turns",
    "n_tool_calls",
    "n_tool_errors",
    "tools",
    "finish_reason",
    "reward",
    "kept",
    "dropped_reason",
    "group",
    "id",
)


def rows_of(store: RolloutStore) -> list[dict]:
    return store.samples(columns=[c for c in COLUMNS if store.has(c)]).to_dict("records")


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def check_samples(store: RolloutStore, expected: list[Expected]) -> list[dict]:
    """Every sample's counts, finish reason, reward and kept flag as written."""
    assert store.report.bad_line_count == 0, store.report.bad_lines[:3]
    rows = rows_of(store)
    assert len(rows) == len(expected)
    for k, (row, want) in enumerate(zip(rows, expected, strict=True)):
        where = f"sample {k} of step {want.step}"
        assert row["step"] == want.step, where
        assert row["turns"] == want.n_turns, where
        assert row["n_tool_calls"] == sum(want.calls.values()) and row["n_tool_errors"] == want.errors, where
        assert (row.get("tools") if isinstance(row.get("tools"), str) else "") == ",".join(
            sorted(want.calls)
        ), where
        assert (None if _missing(row.get("finish_reason")) else row["finish_reason"]) == want.finish, where
        if want.reward is not None:
            assert row["reward"] == pytest.approx(want.reward), where
        if want.kept is not None:
            assert bool(row["kept"]) == want.kept, where
            reason = row.get("dropped_reason")
            assert (want.dropped is None) == _missing(reason) and str(reason).startswith(
                want.dropped or ""
            ), where
        for name, value in want.extra.items():
            assert row[name] == value, (where, name)
    return rows


def check_tables(store: RolloutStore, expected: list[Expected]) -> None:
    """The turn and tool-call tables add up to what was written."""
    turns = store.turns().to_pandas()
    assert Counter(turns["role"]) == sum((w.roles for w in expected), Counter())
    calls = store.tool_calls().to_pandas()
    assert Counter(calls["name"]) == sum((w.calls for w in expected), Counter())
    assert int(calls["error"].fillna(False).sum()) == sum(w.errors for w in expected)


def turn_rewards(store: RolloutStore) -> list[list[float]]:
    """Each sample's assistant-turn rewards, in order."""
    turns = store.turns().to_pandas()
    mine = turns[turns["role"] == "assistant"]
    return [list(g["reward"]) for _, g in mine.groupby(["step", "sample"], sort=True)]


# --------------------------------------------------------------------------- prime-rl


def test_prime_rl_episodes(tmp_path: Path) -> None:
    expected = agentic_dumps.write_prime_rl(tmp_path / "out")
    store = RolloutStore.open(tmp_path / "out" / "rollouts", cache_dir=tmp_path / "cache")
    rows = check_samples(store, expected)
    check_tables(store, expected)
    reasons = Counter(str(r["dropped_reason"]).split(":")[0] for r in rows if not r["kept"])
    assert set(reasons) == {"error", "not in effective/"} and any(
        ZERO_ADVANTAGE in str(r["dropped_reason"]) for r in rows
    )
    calls = (
        store.tool_calls().to_pandas()
    )  # each result answers its call (by id); a refused turn's calls none
    assert calls["answered"].sum() == sum(w.roles["tool"] for w in expected) and calls["id"].notna().all()


def test_prime_rl_without_effective_keeps_no_verdict(tmp_path: Path) -> None:
    """Before effective/ is written, whether an episode was kept is not known (a failed one is still
    marked)."""
    expected = agentic_dumps.write_prime_rl(tmp_path / "out", steps=1)
    (tmp_path / "out" / "rollouts" / "step_1" / "train" / "effective" / "traces.jsonl").unlink()
    (tmp_path / "out" / "rollouts" / "step_1" / "train" / "effective").rmdir()
    store = RolloutStore.open(tmp_path / "out" / "rollouts", cache_dir=tmp_path / "cache")
    rows = rows_of(store)
    assert [r["kept"] is False for r in rows] == [w.finish == "error" for w in expected]
    assert all(_missing(r["kept"]) for r, w in zip(rows, expected, strict=True) if w.finish != "error")


# --------------------------------------------------------------------------- ROLL agentic


@pytest.mark.parametrize("native", [False, True], ids=["proxy", "native"])
def test_roll_agentic(native: bool, tmp_path: Path) -> None:
    expected = agentic_dumps.write_roll_agentic(tmp_path / "out", native=native)
    store = RolloutStore.open(tmp_path / "out", cache_dir=tmp_path / "cache")
    check_samples(store, expected)
    check_tables(store, expected)
    if native:  # a step reward on each reply, the last one on the last reply
        assert turn_rewards(store) == [pytest.approx(w.turn_rewards) for w in expected]


# --------------------------------------------------------------------------- open-instruct


def test_open_instruct(tmp_path: Path) -> None:
    expected = agentic_dumps.write_open_instruct(tmp_path / "out")
    store = RolloutStore.open(tmp_path / "out", cache_dir=tmp_path / "cache")
    check_samples(store, expected)
    calls = store.tool_calls().to_pandas()
    assert Counter(calls["name"]) == sum((w.calls for w in expected), Counter())
    assert int(calls["error"].sum()) == sum(w.errors for w in expected) and calls["turn"].isna().all()
    assert len(store.turns()) == 0  # calls are counted, not shown as turns
    tools = store.tools_summary().groupby("tool")[["calls", "errors"]].sum()  # the Tools page counts them too
    assert tools["calls"].to_dict() == dict(sum((w.calls for w in expected), Counter()))
    assert int(tools["errors"].sum()) == sum(w.errors for w in expected)
    detail = store.sample(step=1, index=0)
    assert detail is not None


# --------------------------------------------------------------------------- NeMo-RL


def test_nemo_rl_train_turns_without_roles(tmp_path: Path) -> None:
    expected = agentic_text_dumps.write_nemo_rl(tmp_path / "out")
    store = RolloutStore.open(tmp_path / "out" / "exp_001", cache_dir=tmp_path / "cache")
    rows = check_samples(store, expected)
    check_tables(store, expected)
    frame = store.samples(columns=["response", "messages"])
    single = [w.turns == 2 for w in expected]
    assert frame["messages"].isna().tolist() == single  # a prompt and one answer stays text
    assert not any(
        str(r).startswith("Environment:") for r in frame["response"]
    )  # the answer, not the observation
    assert sum(not r["kept"] for r in rows) == 2


def test_nemo_rl_validation_keeps_its_roles(tmp_path: Path) -> None:
    expected = agentic_text_dumps.write_nemo_rl_val(tmp_path / "out")
    store = RolloutStore.open(tmp_path / "out" / "exp_001", cache_dir=tmp_path / "cache")
    check_samples(store, expected)
    check_tables(store, expected)


# --------------------------------------------------------------------------- text with turns in it


@pytest.mark.parametrize(
    ("writer", "run"), [("skyrl_eval", "dumped_evals"), ("verl_agent_loop", "."), ("areal", "rollout")]
)
def test_decoded_text_splits_into_turns(writer: str, run: str, tmp_path: Path) -> None:
    """SkyRL and AReaL keep the chat markers, verl strips them: each splits into the turns written."""
    expected = getattr(agentic_text_dumps, f"write_{writer}")(tmp_path / "out")
    store = RolloutStore.open(tmp_path / "out" / run, cache_dir=tmp_path / "cache")
    check_samples(store, expected)
    check_tables(store, expected)
    assert any(w.calls for w in expected) and any(w.errors for w in expected)
    split = int(store.samples(columns=["messages"])["messages"].notna().sum())  # the Fields panel says how
    assert split and store.report.turns_read.startswith(
        f"turns split from the chat text of {split} samples ("
    )


def test_text_not_split_with_confidence_says_why(tmp_path: Path) -> None:
    """A marker with no role after it is no template: one prompt and one answer, and the report says so."""
    run = tmp_path / "run"
    run.mkdir()
    lines = [
        {"step": 1, "prompt": "<|im_start|>\nWhat is 2+2?", "response": "4", "reward": 0.0},
        {"step": 1, "prompt": "Plain question", "response": "Plain answer", "reward": 1.0},
    ]
    (run / "r.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    assert store.samples(columns=["messages"])["messages"].isna().all() and store.num_samples == 2
    assert store.report.turns_read == (
        "1 sample that looked like chat not split: no chat markers or role lines: "
        "kept as one prompt and one response (1)"
    )
    reopened = RolloutStore.open(run, cache_dir=tmp_path / "cache")  # from the cache: the counts are kept
    assert reopened.report.from_cache and reopened.report.turns_read == store.report.turns_read


def test_prime_rl_v0_rollouts_say_why_they_ended(tmp_path: Path) -> None:
    """verifiers v0 (``train_rollouts.jsonl``): the stop condition is the finish; a rollout cut short with
    none logged ended at a length cap; its message lists are its turns."""
    step = tmp_path / "rollouts" / "step_3"
    step.mkdir(parents=True)
    rows = [
        {
            "prompt": [{"role": "user", "content": "17*23?"}],
            "completion": [{"role": "assistant", "content": "39"}],
            "reward": 0.0,
            "is_truncated": True,
        },
        {
            "prompt": [{"role": "user", "content": "2+2?"}],
            "completion": [{"role": "assistant", "content": "4"}],
            "reward": 1.0,
            "is_truncated": False,
            "stop_condition": "agent_completed",
        },
        {
            "prompt": [{"role": "user", "content": "5*5?"}],
            "completion": [{"role": "assistant", "content": "25"}],
            "reward": 1.0,
            "is_truncated": False,
        },
    ]
    (step / "train_rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = RolloutStore.open(tmp_path / "rollouts", cache_dir=tmp_path / "cache")
    frame = store.samples(columns=["finish_reason", "finish_reason_logged", "turns"])
    assert frame["finish_reason"].tolist()[:2] == ["length", "stop"] and pd.isna(
        frame["finish_reason"].iloc[2]
    )
    assert frame["finish_reason_logged"].tolist()[1] == "agent_completed"
    assert frame["turns"].tolist() == [2, 2, 2] and store.turns().num_rows == 6
