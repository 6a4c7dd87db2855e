"""Agent runs on every page: the sample turn by turn with its tool calls and jumps, the step browser's
trajectory columns and filters, the Overview's trajectory curves and the Tools page; single-turn runs look as
before. Expected numbers are worked out here from the lines the demo wrote, never from rl-board's code."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.demo_agent import AgentSpec, write_agent_run
from rl_board.rollouts.store import RolloutStore
from rl_board.writer import RolloutWriter
from tests.helpers.apptest import (
    assert_clean,
    decode,
    figures,
    heat_grid,
    interactive,
    open_page,
    plain_texts,
    table,
    texts,
    trace,
)

SPEC = AgentSpec(steps=4, trajectories=10, turns=16, seed=11)


@pytest.fixture
def agent_root(tmp_path, serve) -> Path:
    root = tmp_path / "served"
    write_agent_run(root / "agent", SPEC)
    write_run(root / "ppo", DemoSpec(steps=3, samples=4, ranks=1, tokens=8, seed=2))
    chat = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
    ]
    with RolloutWriter(root / "chat") as writer:
        writer.write(0, None, None, 1.0, messages=chat)
    return serve(root)


def written(root: Path) -> list[dict]:
    """The agent run's lines in the store's order: by step, then file, then line."""
    lines = [
        json.loads(x) for p in sorted((root / "agent").glob("*.jsonl")) for x in p.read_text().splitlines()
    ]
    by_step: dict[int, list] = {}
    for line in lines:
        by_step.setdefault(line["step"], []).append(line)
    return [x for step in sorted(by_step) for x in by_step[step]]


def record(root: Path, step: int, sample: int) -> dict:
    return [x for x in written(root) if x["step"] == step][sample]


def _sample_with_error(root: Path) -> tuple[int, int, dict]:
    for step in range(SPEC.steps):
        rows = [x for x in written(root) if x["step"] == step]
        for k, x in enumerate(rows):
            if any(
                m["role"] == "tool" and m["content"].startswith(("Error", "Traceback")) for m in x["messages"]
            ):
                return step, k, x
    raise AssertionError("the demo wrote no failed call")


# -- the sample page ------------------------------------------------------------------------------


def test_a_trajectory_turn_by_turn_with_its_tool_cards(agent_root):
    step, index, line = _sample_with_error(agent_root)
    messages = line["messages"]
    at = open_page("sample", run="agent", step=str(step), sample=str(index))
    assert_clean(at)
    calls = [c for m in messages for c in m.get("tool_calls", ())]
    errors = [m for m in messages if m["role"] == "tool" and m["content"].startswith(("Error", "Traceback"))]
    summary = next(t for t in texts(at.markdown) if t.startswith("**Conversation**"))
    assert f"{len(messages)} turns" in summary and f"{len(calls)} tool calls" in summary
    assert f"{len(errors)} tool errors" in summary and line["finish_reason"] in summary
    shown = [
        k
        for k in range(10)
        if any(t.startswith(("**", "▶")) and f" · turn {k} · " in t for t in texts(at.markdown))
    ]
    assert shown == list(range(min(10, len(messages))))  # the first page of turns
    cards = [t for t in texts(at.markdown) if t.startswith(":material/build:")]
    first_page_calls = [c for m in messages[:10] for c in m.get("tool_calls", ())]
    assert [re.search(r"\*\*(.+?)\*\*", t).group(1).replace("\\_", "_") for t in cards] == [
        c["function"]["name"] for c in first_page_calls
    ]
    boxes = plain_texts(at)
    for c in first_page_calls:  # arguments pretty-printed as JSON text
        assert json.dumps(json.loads(c["function"]["arguments"]), indent=2) in boxes
    assert not at.button(key="jump_error").disabled


def test_jumps_to_the_next_error_call_and_highest_kl_turn(agent_root):
    step, index, line = _sample_with_error(agent_root)
    messages = line["messages"]
    at = open_page("sample", run="agent", step=str(step), sample=str(index))
    first_error = next(
        k
        for k, m in enumerate(messages)
        if m["role"] == "tool" and m["content"].startswith(("Error", "Traceback"))
    )
    at.button(key="jump_error").click().run()
    assert_clean(at)
    assert at.query_params["turn"] in (str(first_error), [str(first_error)])
    focused = next(t for t in texts(at.markdown) if t.startswith("▶"))
    assert f"turn {first_error}" in focused
    assert any(t.startswith(":red-badge[") and "error" in t for t in texts(at.markdown))  # st.badge
    at.button(key="jump_call").click().run()
    after = next((k for k, m in enumerate(messages) if k > first_error and m.get("tool_calls")), None)
    first_call = next(k for k, m in enumerate(messages) if m.get("tool_calls"))
    want = after if after is not None else first_call
    assert at.query_params["turn"] in (str(want), [str(want)])
    # the highest-KL turn: per turn the mean k3 KL of its tokens, from the written log-probs and spans
    logp, ref = np.array(line["logprobs"]), np.array(line["ref_logprobs"])
    r = logp - ref
    kl = np.exp(-r) - 1 + r
    means = {
        k: kl[m["tokens"][0] : m["tokens"][1]].mean()
        for k, m in enumerate(messages)
        if m.get("trained") and m["tokens"][1] > m["tokens"][0]
    }
    at.button(key="jump_kl").click().run()
    assert_clean(at)
    assert at.query_params["turn"] in (str(max(means, key=means.get)), [str(max(means, key=means.get))])


def test_tokens_split_at_turns_untrained_struck_through(agent_root):
    line = record(agent_root, 1, 2)
    at = open_page("sample", run="agent", step="1", sample="2")
    assert_clean(at)
    chips = " ".join(str(h.proto.body) for h in at.get("html"))
    response_turns = [m for m in line["messages"] if "tokens" in m]
    assert chips.count('class="rlb-turn"') == len(response_turns)
    untrained = sum(m["tokens"][1] - m["tokens"][0] for m in response_turns if not m["trained"])
    assert chips.count("rlb-chip rlb-untrained") == untrained
    grid = heat_grid(at)  # the grid: a turn per block of rows (long) or a line where a turn starts (short)
    assert "one turn per block" in grid or "a line where a turn starts" in grid
    if "one turn per block" in grid:  # a long answer: a row of bands per 100 tokens, untrained ones faded
        assert "faded: not trained" in grid and grid.count('<div title="') >= len(response_turns)
    else:  # a short one: a cell per token and metric, each untrained cell says so
        assert grid.count("(not trained)") == untrained * grid.count("<span style=")
    interactive(at)
    assert_clean(at)
    heat = next(
        spec for title, spec in figures(at).items() if "by turn" in title or "one turn per block" in title
    )
    if "shapes" in heat["layout"]:  # a short answer: turn lines and grey spans over the untrained tokens
        rects = [s for s in heat["layout"]["shapes"] if s["type"] == "rect"]
        flags = [m["trained"] for m in response_turns]  # back-to-back tool results are one grey span
        assert len(rects) == sum(1 for k, f in enumerate(flags) if not f and (k == 0 or flags[k - 1]))


def test_a_chat_sample_and_a_single_turn_sample_look_as_before(agent_root):
    at = open_page("sample", run="chat", step="0", sample="0")
    assert_clean(at)
    assert any(t.startswith("**Conversation** · 3 messages") for t in texts(at.markdown))
    assert not [b for b in at.button if b.key and b.key.startswith("jump_")]
    at = open_page("sample", run="ppo", step="1", sample="0")
    assert_clean(at)
    assert not any("Conversation" in t for t in texts(at.markdown))
    assert 'class="rlb-turn"' not in " ".join(str(h.proto.body) for h in at.get("html"))


# -- the step browser --------------------------------------------------------------------------------


def test_step_browser_trajectory_columns_and_filters(agent_root):
    rows = [x for x in written(agent_root) if x["step"] == 2]
    at = open_page("steps", run="agent", step="2")
    assert_clean(at)
    frame = table(at)
    assert {"turns", "n_tool_calls", "n_tool_errors", "tools", "finish_reason"} <= set(frame.columns)
    assert frame["turns"].tolist() == [len(x["messages"]) for x in rows]
    assert frame["n_tool_calls"].tolist() == [
        sum(len(m.get("tool_calls", ())) for m in x["messages"]) for x in rows
    ]
    labels = [n.label for n in at.number_input]
    assert "Turns ≥" in labels and "Tool calls ≤" in labels

    def called(x: dict, tool: str) -> bool:
        return any(c["function"]["name"] == tool for m in x["messages"] for c in m.get("tool_calls", ()))

    def failed(x: dict) -> bool:
        return any(
            m["role"] == "tool" and m["content"].startswith(("Error", "Traceback")) for m in x["messages"]
        )

    at = open_page(
        "steps",
        run="agent",
        step="2",
        finish_reason="length,turn_limit",
        tool_errors="1",
        tools="shell",
        turns="12:",
    )
    assert_clean(at)
    want = [
        k
        for k, x in enumerate(rows)
        if x["finish_reason"] in ("length", "max_turns", "turn_limit")
        and failed(x)
        and called(x, "shell")
        and len(x["messages"]) >= 12
    ]
    got = table(at)["sample"].tolist() if want else []
    assert got == want
    assert any(f"**{len(want)}** of {len(rows)} samples" in t for t in texts(at.markdown))
    params = at.query_params
    assert params["finish_reason"] in ("length,turn_limit", ["length,turn_limit"])
    assert params["tools"] in ("shell", ["shell"]) and params["tool_errors"] in ("1", ["1"])


def test_single_turn_step_browser_has_no_trajectory_parts(agent_root):
    at = open_page("steps", run="ppo", step="1")
    assert_clean(at)
    assert "turns" not in table(at).columns
    labels = [n.label for n in at.number_input]
    assert not [x for x in labels if x.startswith(("Turns", "Tool"))]
    assert not at.get("multiselect")


# -- the Overview ------------------------------------------------------------------------------------


def test_overview_trajectory_curves(agent_root):
    lines = written(agent_root)
    at = open_page("overview", run="agent")
    assert_clean(at)
    figs = figures(at)
    turns = trace(figs["Turns per trajectory"], "turns")
    want = [np.mean([len(x["messages"]) for x in lines if x["step"] == s]) for s in range(SPEC.steps)]
    np.testing.assert_allclose(decode(turns["y"]), want)
    rate = trace(figs["Tool error rate per step"], "tool error rate")
    for s, got in enumerate(decode(rate["y"])):
        mine = [x for x in lines if x["step"] == s]
        calls = sum(len(m.get("tool_calls", ())) for x in mine for m in x["messages"])
        errors = sum(
            m["role"] == "tool" and m["content"].startswith(("Error", "Traceback"))
            for x in mine
            for m in x["messages"]
        )
        assert np.isclose(got, errors / calls)
    finish = figs["Why trajectories ended, per step"]
    names = {
        "stop": "stop",
        "length": "length",
        "turn_limit": "turn_limit",
        "tool_budget": "tool_budget",
        "timeout": "timeout",
        "error": "error",
    }  # the demo writes the vocabulary's own names
    shares = Counter(x["finish_reason"] for x in lines if x["step"] == 0)
    for t in finish["data"]:
        assert np.isclose(decode(t["y"])[0], shares[names[t["name"]]] / SPEC.trajectories)
    assert "Tool calls per trajectory" in figs


def test_overview_of_a_single_turn_run_has_no_trajectory_curves(agent_root):
    at = open_page("overview", run="ppo")
    assert_clean(at)
    assert not [t for t in figures(at) if "trajector" in t.lower()]


# -- the Tools page ------------------------------------------------------------------------------------


def test_tools_page_counts_calls_errors_and_rewards(agent_root):
    lines = written(agent_root)
    at = open_page("tools", run="agent")
    assert_clean(at)
    frame = next(f.value for f in at.dataframe if "error rate" in f.value.columns).set_index("tool")
    calls, errors, rewards = Counter(), Counter(), {}
    for x in lines:
        by_id = {c["id"]: c["function"]["name"] for m in x["messages"] for c in m.get("tool_calls", ())}
        for m in x["messages"]:
            for c in m.get("tool_calls", ()):
                calls[c["function"]["name"]] += 1
            if m["role"] == "tool" and m["content"].startswith(("Error", "Traceback")):
                errors[by_id[m["tool_call_id"]]] += 1
        for tool in set(by_id.values()):
            rewards.setdefault(tool, []).append(x["reward"])
    assert frame["calls"].to_dict() == dict(calls)
    assert frame["errors"].to_dict() == {t: errors[t] for t in calls}
    for tool, values in rewards.items():
        assert np.isclose(frame.loc[tool, "mean reward"], np.mean(values))
    assert list(frame.index) == sorted(calls, key=lambda t: (-calls[t], t))
    figs = figures(at)
    assert {"Calls per step, per tool", "Mean reward of the trajectories that called it, per tool"} <= set(
        figs
    )
    examples = next(f.value for f in at.dataframe if "arguments" in f.value.columns)
    tool = frame.index[0]
    last = [x for x in lines if x["step"] == SPEC.steps - 1]
    for row in examples.itertuples():
        m = last[row.sample]["messages"][row.turn]
        assert row.arguments in [
            c["function"]["arguments"] for c in m["tool_calls"] if c["function"]["name"] == tool
        ]


def test_tools_page_of_a_single_turn_run_says_so(agent_root):
    at = open_page("tools", run="ppo")
    assert_clean(at)
    assert any("No tools" in t for t in texts(at.info))


def test_store_of_the_agent_run_is_multi_turn(agent_root):
    assert RolloutStore.open(agent_root / "agent", cache_dir=agent_root.parent / "c").multi_turn
