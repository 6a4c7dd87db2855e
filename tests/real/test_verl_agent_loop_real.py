"""verl 0.9.1's real agent loop (``trainers/verl_agent_loop.py``: ``ToolAgentLoop`` driven by a scripted
policy), its ``rollout/{step}.jsonl`` read back with rl-board.

verl's dump keeps a multi-turn trajectory as two strings (prompt and every turn of the response, tool results
included, decoded without special tokens): no messages, no finish reason. What a reader must find comes from
``truth.json`` (each conversation as its script meant it, checked by the runner against verl's outputs) and
from verl's own metrics (``num_turns/*``, ``response_length/clip_ratio``). Each check below asks one question
of the ``turns``, ``tool_calls`` or ``samples`` SQL views, so a failure names what the reader got wrong.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rl_board.api import RolloutStore, run_query
from tests.real import expected as E
from tests.real.trainers import specs

Key = tuple[int, int]  # (step, sample)


@pytest.fixture(scope="module")
def truth(verl_agent_loop_root: Path) -> dict[Key, dict[str, Any]]:
    """Each sample's scripted conversation, by (step, sample)."""
    samples = E.read_json_file(verl_agent_loop_root / "truth.json")["samples"]
    return {(s["step"], s["sample"]): s for s in samples}


@pytest.fixture(scope="module")
def store(verl_agent_loop_root: Path, real_cache: Path) -> RolloutStore:
    return RolloutStore.open(verl_agent_loop_root / "rollout", cache_dir=real_cache)


def dumped(root: Path) -> dict[int, list[dict]]:
    """verl's ``rollout/{step}.jsonl`` files, by step."""
    return {
        int(p.stem): E.jsonl(p) for p in sorted((root / "rollout").glob("*.jsonl"), key=lambda p: int(p.stem))
    }


def query(store: RolloutStore, sql: str) -> pd.DataFrame:
    return run_query(store, sql).frame


def by_sample(frame: pd.DataFrame, *columns: str) -> dict[Key, list]:
    """Rows grouped per (step, sample), in row order: one value (or a tuple of values) per row."""
    out: dict[Key, list] = defaultdict(list)
    for row in frame.itertuples(index=False):
        values = tuple(getattr(row, c) for c in columns)
        out[(int(row.step), int(row.sample))].append(values[0] if len(values) == 1 else values)
    return dict(out)


def flag(value: Any) -> bool | None:
    """A nullable boolean cell as True / False / None."""
    return None if value is None or pd.isna(value) else bool(value)


def wrong(got: dict[Key, Any], want: dict[Key, Any]) -> list[tuple[Key, Any, Any]]:
    """The samples where the reader's value differs from the truth: (key, got, wanted)."""
    return [(k, got.get(k), v) for k, v in sorted(want.items()) if got.get(k) != v]


def kinds(truth: dict[Key, dict[str, Any]], *names: str) -> dict[Key, dict[str, Any]]:
    return {k: s for k, s in truth.items() if s["kind"] in names}


# --------------------------------------------------------------------------- what verl wrote (fixture checks)


def test_verl_dumped_every_trajectory(verl_agent_loop_root: Path, truth: dict[Key, dict[str, Any]]) -> None:
    """One row per scripted trajectory, in batch order; the response text holds each answered call's
    result."""
    steps = dumped(verl_agent_loop_root)
    assert {(step, i) for step, rows in steps.items() for i in range(len(rows))} == set(truth)
    for (step, sample), t in truth.items():
        row = steps[step][sample]
        assert row["step"] == step and row["gts"] is not None
        tools = [m for m in t["messages"] if m["role"] == "tool"]
        assert row["output"].count("<tool_response>") == len(tools)
        assert row["output"].count("<tool_call>") == len(t["calls"])
        assert all(f"<tool_response>\n{m['content']}\n</tool_response>" in row["output"] for m in tools)


def test_verl_metrics_agree_with_truth(verl_agent_loop_root: Path, truth: dict[Key, dict[str, Any]]) -> None:
    """verl's own ``num_turns/*`` and ``response_length/clip_ratio`` per step match the scripts' turns and
    cuts."""
    path = verl_agent_loop_root / "metrics" / specs.VERL_PROJECT / f"{specs.VERL_AGENT_EXPERIMENT}.jsonl"
    for line in E.jsonl(path):
        samples = [t for (step, _), t in truth.items() if step == line["step"]]
        turns = [t["num_turns"] for t in samples]
        data = line["data"]
        assert (data["num_turns/min"], data["num_turns/max"]) == (min(turns), max(turns))
        assert data["num_turns/mean"] == pytest.approx(sum(turns) / len(turns))
        cut = sum(t["finish"] == "length" for t in samples) / len(samples)
        assert data["response_length/clip_ratio"] == pytest.approx(cut)


def test_truth_covers_every_kind(truth: dict[Key, dict[str, Any]]) -> None:
    """Each kind of trajectory the brief asks for is in the run, at every step."""
    want = {"direct", "one_call", "two_calls", "tool_error", "unknown_tool", "lookup", "turn_limit", "length"}
    for step in {k[0] for k in truth}:
        assert {t["kind"] for (s, _), t in truth.items() if s == step} == want


# --------------------------------------------------------------------------- the run as rl-board reads it


def test_every_line_read(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    report = store.report
    assert report.format == "verl"
    assert report.bad_line_count == 0, [(b.file, b.line, b.reason) for b in report.bad_lines[:3]]
    assert store.num_samples == len(truth)


# --------------------------------------------------------------------------- turns


def test_turn_roles_in_order(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """Every trajectory's turns are its messages' roles in order (system, user, assistant, tool, ...)."""
    got = by_sample(query(store, "SELECT step, sample, role FROM turns ORDER BY step, sample, turn"), "role")
    want = {k: [m["role"] for m in t["messages"]] for k, t in truth.items()}
    assert not wrong(got, want), wrong(got, want)


def test_single_turn_trajectories_are_turns(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """A trajectory that answers without a tool call still has its system, user and assistant messages as
    turns.

    The system turn starts with the dataset's system message; the chat template appends the tool schemas to it
    (``# Tools`` ... ``</tools>``), and the dump cannot tell the two apart, so what follows is not checked.
    """
    frame = query(store, "SELECT step, sample, role, content FROM turns ORDER BY step, sample, turn")
    got: dict[Key, list] = {}
    for k, rows in by_sample(frame, "role", "content").items():
        system = truth[k]["messages"][0]["content"] if k in truth else ""
        # a system turn becomes True when its content starts with the system message
        got[k] = [(role, str(c).startswith(system) if role == "system" else c) for role, c in rows]
    want = {
        k: [(m["role"], True if m["role"] == "system" else m["content"]) for m in t["messages"]]
        for k, t in kinds(truth, "direct").items()
    }
    assert want and not wrong(got, want), wrong(got, want)


def test_turn_counts_per_sample(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """``samples.turns`` is the number of messages of each trajectory."""
    frame = query(store, "SELECT step, sample, turns FROM samples ORDER BY step, sample")
    got = {k: v[0] for k, v in by_sample(frame, "turns").items()}
    want = {k: len(t["messages"]) for k, t in truth.items()}
    assert not wrong(got, want), wrong(got, want)


def test_tool_turn_contents(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """A tool turn's content is the tool's result as verl wrote it (error texts included), nothing around
    it."""
    frame = query(
        store, "SELECT step, sample, content FROM turns WHERE role = 'tool' ORDER BY step, sample, turn"
    )
    got = by_sample(frame, "content")
    want = {k: [m["content"] for m in t["messages"] if m["role"] == "tool"] for k, t in truth.items()}
    want = {k: v for k, v in want.items() if v}
    assert not wrong(got, want), wrong(got, want)


def test_tool_turns_name_their_tool(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """A tool turn names the tool of the call it answers (verl's tool message has no name: the call has
    it)."""
    frame = query(
        store, "SELECT step, sample, tool_name FROM turns WHERE role = 'tool' ORDER BY step, sample, turn"
    )
    got = by_sample(frame, "tool_name")
    want = {k: [m["name"] for m in t["messages"] if m["role"] == "tool"] for k, t in truth.items()}
    want = {k: v for k, v in want.items() if v}
    assert not wrong(got, want), wrong(got, want)


def test_tool_turn_errors(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """A tool turn is an error exactly when the call failed (the tool raised, or no such tool)."""
    frame = query(
        store, "SELECT step, sample, error FROM turns WHERE role = 'tool' ORDER BY step, sample, turn"
    )
    got = {k: [flag(v) for v in vs] for k, vs in by_sample(frame, "error").items()}
    want = {k: [m["error"] for m in t["messages"] if m["role"] == "tool"] for k, t in truth.items()}
    want = {k: v for k, v in want.items() if v}
    assert not wrong(got, want), wrong(got, want)


def test_assistant_turn_call_counts(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """Each assistant turn counts the calls it wrote (both of a two-call turn, the one the turn limit left
    too)."""
    frame = query(
        store,
        "SELECT step, sample, n_tool_calls FROM turns WHERE role = 'assistant' ORDER BY step, sample, turn",
    )
    got = by_sample(frame, "n_tool_calls")
    want = {k: [len(m["calls"]) for m in t["messages"] if m["role"] == "assistant"] for k, t in truth.items()}
    assert not wrong(got, want), wrong(got, want)


def test_answer_contents(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """The last assistant turn holds the answer text; a turn cut by response_length holds a prefix of it."""
    frame = query(store, "SELECT step, sample, role, content FROM turns ORDER BY step, sample, turn")
    last = {k: rows[-1] for k, rows in by_sample(frame, "role", "content").items()}
    bad = []
    for k, t in truth.items():
        m = t["messages"][-1]
        if m["role"] != "assistant" or m["calls"]:
            continue
        role, content = last.get(k, (None, None))
        ok = (
            role == "assistant"
            and isinstance(content, str)
            and (
                m["content"].startswith(content.strip()) and len(content.strip()) > 20
                if m.get("cut")
                else content.strip() == m["content"]
            )
        )
        if not ok:
            bad.append((k, t["kind"], role, content if not isinstance(content, str) else content[:60]))
    assert not bad, bad


# --------------------------------------------------------------------------- tool calls


def calls_frame(store: RolloutStore) -> pd.DataFrame:
    return query(
        store,
        "SELECT step, sample, turn, call, name, arguments, answered, error FROM tool_calls "
        "ORDER BY step, sample, turn, call",
    )


def test_tool_calls_by_name(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """One ``tool_calls`` row per call written, with the assistant turn that wrote it, its place and the
    tool."""
    got = by_sample(calls_frame(store), "turn", "call", "name")
    want = {
        k: [(c["turn"], c["call"], c["name"]) for c in t["calls"]] for k, t in truth.items() if t["calls"]
    }
    assert not wrong(got, want), wrong(got, want)
    assert sum(len(v) for v in got.values()) == sum(len(v) for v in want.values())


def test_tool_call_arguments(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """Each call's arguments, as JSON, are the ones the script passed."""
    got = {
        k: [json.loads(a) if isinstance(a, str) else a for a in v]
        for k, v in by_sample(calls_frame(store), "arguments").items()
    }
    want = {k: [c["arguments"] for c in t["calls"]] for k, t in truth.items() if t["calls"]}
    assert not wrong(got, want), wrong(got, want)


def test_unanswered_calls(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """``answered`` is false for the calls verl never ran: a two-call turn's second (max_parallel_calls=1) and
    the call of the turn max_assistant_turns stopped."""
    got = {k: [flag(v) for v in vs] for k, vs in by_sample(calls_frame(store), "answered").items()}
    want = {k: [c["answered"] for c in t["calls"]] for k, t in truth.items() if t["calls"]}
    assert not wrong(got, want), wrong(got, want)
    unanswered = sum(not a for v in want.values() for a in v)
    assert unanswered == sum(v is False for vs in got.values() for v in vs), unanswered


def test_tool_call_errors(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """A call's ``error`` is true for a failed call, false for a good one, empty for one never answered."""
    got = {k: [flag(v) for v in vs] for k, vs in by_sample(calls_frame(store), "error").items()}
    want = {k: [c["error"] for c in t["calls"]] for k, t in truth.items() if t["calls"]}
    assert not wrong(got, want), wrong(got, want)


def test_call_and_error_counts_per_sample(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """``samples.n_tool_calls`` / ``n_tool_errors`` / ``tools``: calls written, calls failed, tools named."""
    frame = query(
        store, "SELECT step, sample, n_tool_calls, n_tool_errors, tools FROM samples ORDER BY step, sample"
    )
    got = {
        k: (int(c), int(e), t if isinstance(t, str) else None)
        for k, [(c, e, t)] in by_sample(frame, "n_tool_calls", "n_tool_errors", "tools").items()
    }
    want = {
        k: (
            len(t["calls"]),
            sum(bool(c["error"]) for c in t["calls"]),
            ",".join(sorted({c["name"] for c in t["calls"]})) or None,
        )
        for k, t in truth.items()
    }
    assert not wrong(got, want), wrong(got, want)


# --------------------------------------------------------------------------- finish causes


def finishes(store: RolloutStore) -> dict[Key, str | None]:
    frame = query(store, "SELECT step, sample, finish_reason FROM samples ORDER BY step, sample")
    return {
        k: (v[0] if isinstance(v[0], str) else None) for k, v in by_sample(frame, "finish_reason").items()
    }


def test_finish_turn_limit(store: RolloutStore, truth: dict[Key, dict[str, Any]]) -> None:
    """A trajectory max_assistant_turns stopped (its last ``<tool_call>`` has no ``<tool_response>``):
    ``turn_limit``."""
    want = {k: "turn_limit" for k in kinds(truth, "turn_limit")}
    assert want and not wrong(finishes(store), want), wrong(finishes(store), want)


def test_no_finish_is_guessed_where_the_dump_cannot_tell(
    store: RolloutStore, truth: dict[Key, dict[str, Any]]
) -> None:
    """verl's dump logs no finish reason, no token counts and no end-of-sequence token (special tokens are
    stripped), so an answer cut by ``response_length`` and one that stopped read alike: both stay unknown
    (null), never a guessed ``stop``. Only what the text proves is said (``test_finish_turn_limit``)."""
    want = {k: None for k, t in truth.items() if t["finish"] in ("stop", "length")}
    assert want and not wrong(finishes(store), want), wrong(finishes(store), want)
