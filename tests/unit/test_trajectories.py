"""Trajectories: turns, tool calls and why a run ended, read from rl-board's own format, from verl's decoded
agent-loop text and from TRL-style conversations, and asked for in the store and in SQL. Expected counts are
worked out here from the messages as they were written, never from rl-board's code."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from rl_board.rollouts.sql import run_query
from rl_board.rollouts.store import RolloutStore
from rl_board.writer import RolloutWriter

TOOLS = ("python", "search", "shell")


def trajectory(rng: np.random.Generator, k: int) -> tuple[list[dict], str]:
    """A tool-using trajectory in OpenAI's shape (nested ``function``, ids), and why it ended."""
    messages = [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": f"task {k}"},
    ]
    for turn in range(int(rng.integers(0, 4))):
        calls = [
            {
                "id": f"c{k}-{turn}-{j}",
                "type": "function",
                "function": {"name": str(rng.choice(TOOLS)), "arguments": json.dumps({"x": int(j)})},
            }
            for j in range(int(rng.integers(1, 3)))
        ]
        messages.append({"role": "assistant", "content": f"thinking {turn}", "tool_calls": calls})
        for call in calls:
            failed = rng.random() < 0.3
            text = "Error executing tool 'x': boom" if failed else f"ok {call['id']}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
    reason = str(rng.choice(["stop", "length", "max_turns"]))
    if reason == "stop":
        messages.append({"role": "assistant", "content": "the answer is 4"})
    return messages, reason


def expected(messages: list[dict]) -> dict:
    calls = [c["function"]["name"] for m in messages for c in m.get("tool_calls", ())]
    errors = sum(1 for m in messages if m["role"] == "tool" and m["content"].startswith("Error"))
    return {
        "roles": Counter(m["role"] for m in messages),
        "calls": Counter(calls),
        "errors": errors,
        "final": messages[-1]["role"] == "assistant" and not messages[-1].get("tool_calls"),
    }


def write_run(run: Path, n: int = 30) -> list[tuple[list[dict], str]]:
    rng = np.random.default_rng(7)
    written = []
    with RolloutWriter(run) as writer:
        for k in range(n):
            messages, reason = trajectory(rng, k)
            writer.write(k // 10, None, None, float(k % 3), messages=messages, finish_reason=reason)
            written.append((messages, reason))
    return written


def test_own_format_trajectories_counted_as_written(tmp_path: Path) -> None:
    written = write_run(tmp_path / "run")
    store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    frame = store.samples(
        columns=["turns", "n_tool_calls", "n_tool_errors", "tools", "final_answer", "finish_reason"]
    )
    for (messages, reason), row in zip(written, frame.to_dict("records"), strict=True):
        want = expected(messages)
        assert row["turns"] == len(messages)
        assert row["n_tool_calls"] == sum(want["calls"].values()) and row["n_tool_errors"] == want["errors"]
        assert (row["tools"] if isinstance(row["tools"], str) else "") == ",".join(sorted(want["calls"]))
        assert bool(row["final_answer"]) == want["final"]
        assert row["finish_reason"] == {"stop": "stop", "length": "length", "max_turns": "turn_limit"}[reason]
    turns = store.turns().to_pandas()
    assert Counter(turns["role"]) == sum((expected(m)["roles"] for m, _ in written), Counter())
    calls = store.tool_calls().to_pandas()
    assert Counter(calls["name"]) == sum((expected(m)["calls"] for m, _ in written), Counter())
    assert calls["answered"].all() and int(calls["error"].sum()) == sum(
        expected(m)["errors"] for m, _ in written
    )
    tool_rows = turns[turns["role"] == "tool"]
    by_id = {c["id"]: c["function"]["name"] for m, _ in written for x in m for c in x.get("tool_calls", ())}
    assert tool_rows["tool_name"].tolist() == [by_id[i] for i in tool_rows["tool_call_id"]]


def test_trajectories_in_sql(tmp_path: Path) -> None:
    written = write_run(tmp_path / "run")
    store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    got = run_query(
        store,
        "SELECT name, count(*) AS n, sum(error::INT) AS errors FROM tool_calls GROUP BY name ORDER BY name",
    ).frame
    want = sum((expected(m)["calls"] for m, _ in written), Counter())
    assert dict(zip(got["name"], got["n"], strict=True)) == dict(want)
    roles = run_query(store, "SELECT role, count(*) AS n FROM turns GROUP BY role").frame
    assert dict(zip(roles["role"], roles["n"], strict=True)) == dict(
        sum((expected(m)["roles"] for m, _ in written), Counter())
    )
    reasons = run_query(store, "SELECT finish_reason, count(*) AS n FROM samples GROUP BY 1").frame
    assert sum(reasons["n"]) == len(written) and set(reasons["finish_reason"]) <= {
        "stop",
        "length",
        "turn_limit",
    }


def test_per_step_and_per_tool_tables(tmp_path: Path) -> None:
    written = write_run(tmp_path / "run")
    store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    steps = store.trajectory_summary().set_index("step")
    for step in (0, 1, 2):
        mine = written[step * 10 : step * 10 + 10]
        calls = sum(sum(expected(m)["calls"].values()) for m, _ in mine)
        errors = sum(expected(m)["errors"] for m, _ in mine)
        assert steps.loc[step, "turns_mean"] == np.mean([len(m) for m, _ in mine])
        assert np.isclose(steps.loc[step, "tool_error_rate"], errors / calls)
        lengths = sum(1 for _, r in mine if r == "length") / len(mine)
        assert np.isclose(steps.loc[step].get("finish_length", 0.0), lengths)
    tools = store.tools_summary()
    assert set(tools["tool"]) <= set(TOOLS) and int(tools["calls"].sum()) == len(store.tool_calls())


VERL_AGENT = (
    'system\nYou are a math expert. # Tools\n<tools>{"name": "python"}</tools>\nFor each call, return '
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\nuser\n'
    "What is 17*23?\nassistant\n"
)
VERL_OUTPUT = (
    'Let me run it.\n<tool_call>\n{"name": "python", "arguments": {"code": "print(17*23)"}}\n'
    "</tool_call>user\n<tool_response>\n391\n</tool_response>\nassistant\n#### 391"
)


def test_verl_agent_loop_text_becomes_turns(tmp_path: Path) -> None:
    """verl dumps an agent loop's turns as one stripped string: split into turns, the call and its result."""
    run = tmp_path / "verl"
    run.mkdir()
    lines = [
        {"input": VERL_AGENT, "output": VERL_OUTPUT, "gts": "391", "score": 1.0, "step": 3},
        {
            "input": "system\nBe brief.\nuser\n2+2?\nassistant\n",
            "output": "4",
            "gts": "4",
            "score": 1.0,
            "step": 3,
        },
    ]
    (run / "3.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    frame = store.samples(columns=["turns", "n_tool_calls", "n_tool_errors", "tools", "messages"])
    # system, user, the assistant's call, the tool's result (under "user" in the text), the answer
    assert frame["turns"].tolist() == [5, 3] and frame["n_tool_calls"].tolist() == [1, 0]
    assert frame["tools"].tolist()[0] == "python" and frame["messages"].isna().tolist() == [False, True]
    calls = store.tool_calls().to_pandas()
    assert calls["arguments"].tolist() == ['{"code": "print(17*23)"}'] and calls["result"].tolist() == ["391"]
    # the sample that answered directly is a trajectory too: its three messages, told from its text
    direct = store.turns().to_pandas().query("sample == 1")
    assert direct["role"].tolist() == ["system", "user", "assistant"] and direct["turn"].tolist() == [0, 1, 2]
    assert direct["content"].tolist() == ["Be brief.", "2+2?", "4"]
