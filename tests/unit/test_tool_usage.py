"""Tool use per trajectory read by DuckDB equals the walk in Python; the per-tool table adds up to the calls
and errors the trajectories hold; multi_turn tells agent runs from single-turn ones; filters on tools used and
finish reasons keep what they say."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from rl_board.errors import InvalidArgumentError
from rl_board.rollouts import calls
from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.demo_agent import AgentSpec, write_agent_run
from rl_board.rollouts.filters import SampleFilter
from rl_board.rollouts.store import RolloutStore
from rl_board.writer import RolloutWriter
from tests.unit.test_trajectories import write_run as write_tool_run


@pytest.fixture
def agent(tmp_path: Path) -> RolloutStore:
    write_agent_run(tmp_path / "agent", AgentSpec(steps=4, trajectories=12, seed=5))
    return RolloutStore.open(tmp_path / "agent", cache_dir=tmp_path / "cache")


def test_query_equals_walk_on_the_demo_agent(agent: RolloutStore) -> None:
    table = agent._message_table(None)
    assert calls.usage_table(table).equals(calls.usage_walk(table))


def test_usage_adds_up_to_the_trajectories(agent: RolloutStore) -> None:
    usage = agent.tool_usage().to_pandas()
    per_sample = usage.groupby(["step", "sample"])[["calls", "errors"]].sum()
    frame = agent.samples(columns=["n_tool_calls", "n_tool_errors"]).set_index(["step", "sample"])
    joined = frame.join(per_sample).fillna(0)
    assert (joined["calls"] == joined["n_tool_calls"]).all() and (
        joined["errors"] == joined["n_tool_errors"]
    ).all()
    calls_by_name = Counter(agent.tool_calls().to_pandas()["name"])
    summary = agent.tools_summary()
    assert summary.groupby("tool")["calls"].sum().to_dict() == dict(calls_by_name)


def test_written_calls_counted_by_name_and_step(tmp_path: Path) -> None:
    written = write_tool_run(tmp_path / "run")
    store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    summary = store.tools_summary().set_index(["tool", "step"])
    want: Counter = Counter()
    for k, (messages, _) in enumerate(written):
        for m in messages:
            for c in m.get("tool_calls", ()):
                want[(c["function"]["name"], k // 10)] += 1
    assert summary["calls"].to_dict() == dict(want)
    rewards = {}
    for k, _ in enumerate(written):
        rewards.setdefault(k // 10, []).append(float(k % 3))
    step0 = [
        float(k % 3)
        for k, (m, _) in enumerate(written[:10])
        if any(c["function"]["name"] == "python" for x in m for c in x.get("tool_calls", ()))
    ]
    assert np.isclose(summary.loc[("python", 0), "reward_mean"], np.mean(step0))


def test_results_without_ids_and_unnamed_tools(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"name": "a", "arguments": "{}"}, {"name": "", "arguments": "{}"}],
        },
        {"role": "tool", "content": "Error: nope"},
        {"role": "tool", "content": "fine"},
        {"role": "assistant", "content": "done"},
    ]
    with RolloutWriter(tmp_path / "run") as writer:
        writer.write(0, None, None, 1.0, messages=messages)
    store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    usage = store.tool_usage().to_pylist()
    assert usage == [
        {"step": 0, "sample": 0, "tool": calls.NO_NAME, "calls": 1, "errors": 0},
        {"step": 0, "sample": 0, "tool": "a", "calls": 1, "errors": 1},
    ]
    assert calls.usage_walk(store._message_table(None)).to_pylist() == usage


@pytest.mark.parametrize("error", ["yes", 1, 0, None])
def test_odd_shapes_read_as_the_walk_reads_them(error: object) -> None:
    """Normalized messages hold a boolean ``error``; other values, objects and broken JSON read alike."""
    odd = [
        json.dumps(
            [
                {"role": "assistant", "tool_calls": [{"name": "a"}]},
                {"role": "tool", "name": "a", "error": error},
            ]
        ),
        json.dumps({"not": "a list"}),
        "[broken",
        None,
    ]
    table = pa.table({"step": [0, 0, 1, 1], "sample": [0, 1, 0, 1], "messages": odd})
    assert calls.usage_table(table).to_pylist() == calls.usage_walk(table).to_pylist()


def test_multi_turn_is_an_agent_run_not_a_chat(tmp_path: Path, agent: RolloutStore) -> None:
    assert agent.multi_turn
    write_run(tmp_path / "ppo", DemoSpec(steps=2, samples=3, ranks=1, tokens=5))
    assert not RolloutStore.open(tmp_path / "ppo", cache_dir=tmp_path / "cache").multi_turn
    chat = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    with RolloutWriter(tmp_path / "chat") as writer:
        writer.write(0, None, None, 1.0, messages=chat)
    assert not RolloutStore.open(tmp_path / "chat", cache_dir=tmp_path / "cache").multi_turn


def test_filters_on_tools_used_and_finish_reasons(agent: RolloutStore) -> None:
    frame = agent.samples(columns=["tools", "finish_reason"])
    flt = SampleFilter.build(contains={"tools": "SHELL"}, one_of={"finish_reason": ["length", "turn_limit"]})
    got = agent.samples(columns=["tools"], filters=flt)
    want = frame[
        frame["tools"].fillna("").str.contains("shell")
        & frame["finish_reason"].isin(["length", "turn_limit"])
    ]
    assert got["sample"].tolist() == want["sample"].tolist() and len(got)
    assert SampleFilter.build(contains={"tools": ""}, one_of={"finish_reason": []}).is_empty
    with pytest.raises(InvalidArgumentError):
        SampleFilter.build(contains={"tools": "\ud800"})  # checked as the search text is
