"""TRL's agent loop (``tools=`` and ``environment_factory=``), run for real on CPU with a scripted policy
(``trainers/trl_tools.py``), read back with rl-board's SQL views ``samples``, ``turns`` and ``tool_calls``.

Each run is opened twice: TRL's own ``completions/`` Parquet and the copy ``RLBoardCallback`` wrote. The
expectations come only from the runner's ``truth.json`` (the script's messages, checked there against what
TRL recorded): never from rl-board code. One assertion per test, so a failure names what is wrong.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rl_board.api import RolloutStore, run_query
from tests.real.trainers import specs

COPIES = [(run, copy) for run in specs.TRL_TOOLS_RUNS for copy in ("parquet", "callback")]
IDS = [f"{run}-{copy}" for run, copy in COPIES]
Key = tuple[int, int]  # (step, sample)


@pytest.fixture(scope="module")
def truth(trl_tools_root: Path) -> dict[str, Any]:
    return json.loads((trl_tools_root / specs.TRL_TOOLS_TRUTH).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def stores(
    trl_tools_root: Path, truth: dict[str, Any], real_cache: Path
) -> dict[tuple[str, str], RolloutStore]:
    """rl-board's store of each copy: TRL's completions folder and the callback's folder."""
    out = {}
    for run, copy in COPIES:
        folder = truth["runs"][run]["completions" if copy == "parquet" else "callback"]
        out[run, copy] = RolloutStore.open(trl_tools_root / folder, cache_dir=real_cache)
    return out


@dataclass(frozen=True)
class Case:
    """One copy of one run: rl-board's store of it and the run's truth by (step, sample)."""

    run: str
    copy: str
    store: RolloutStore
    samples: dict[Key, dict[str, Any]]


@pytest.fixture(params=COPIES, ids=IDS)
def case(
    request: pytest.FixtureRequest, stores: dict[tuple[str, str], RolloutStore], truth: dict[str, Any]
) -> Case:
    run, copy = request.param
    samples = {
        (int(step), s["sample"]): s for step, listed in truth["runs"][run]["steps"].items() for s in listed
    }
    return Case(run, copy, stores[run, copy], samples)


def query(store: RolloutStore, sql: str) -> pd.DataFrame:
    return run_query(store, sql, max_rows=100_000).frame


def columns(store: RolloutStore, view: str) -> list[str]:
    return query(store, f"DESCRIBE {view}")["column_name"].tolist()


def differ(got: dict[Any, Any], want: dict[Any, Any], limit: int = 3) -> str:
    """How many entries differ, and the first few by key ((step, sample), + turn, + call): rl-board vs
    truth."""
    keys = sorted(set(got) | set(want))
    bad = [k for k in keys if got.get(k) != want.get(k)]
    shown = "; ".join(f"{k}: rl-board {got.get(k)!r} vs truth {want.get(k)!r}" for k in bad[:limit])
    return f"{len(bad)} of {len(keys)} differ: {shown}"


# --------------------------------------------------------------------------- what the truth says


def truth_calls(samples: dict[Key, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per call: step, sample, turn (the assistant message's place), call, name, arguments, answered,
    error and result (from the tool message answering it: the k-th result after the turn answers its k-th
    call)."""
    rows = []
    for (step, sample), entry in samples.items():
        messages = entry["messages"]
        for turn, m in enumerate(messages):
            results = []
            for later in messages[turn + 1 :]:
                if later["role"] != "tool":
                    break
                results.append(later)
            for k, call in enumerate(m.get("tool_calls") or ()):
                result = results[k] if call["answered"] else None
                rows.append(
                    {
                        "step": step,
                        "sample": sample,
                        "turn": turn,
                        "call": k,
                        "name": call["name"],
                        "arguments": call["arguments"],
                        "answered": call["answered"],
                        "error": result["error"] if result else None,
                        "result": result["content"] if result else None,
                    }
                )
    return rows


def truth_turns(samples: dict[Key, dict[str, Any]]) -> dict[tuple[int, int, int], dict[str, Any]]:
    return {
        (step, sample, turn): m
        for (step, sample), e in samples.items()
        for turn, m in enumerate(e["messages"])
    }


def call_key(row: dict[str, Any]) -> tuple[int, int, int, int]:
    return int(row["step"]), int(row["sample"]), int(row["turn"]), int(row["call"])


# --------------------------------------------------------------------------- the runs themselves


def test_the_runs_cover_the_cases(truth: dict[str, Any]) -> None:
    """The script produced every case: reasoning, two tools, an unknown tool, a raising tool, direct answers,
    the iteration stop, the length cut; the environment run has its own tool and an error."""
    tools = truth["runs"]["tools"]["steps"]
    samples = [s for listed in tools.values() for s in listed]
    calls = truth_calls({(0, i): s for i, s in enumerate(samples)})
    assert {c["name"] for c in calls} == {"calculator", "lookup", "weather"}
    assert any(c["result"] and "Tool weather not found." in c["result"] for c in calls)
    assert any(c["result"] and "division by zero" in c["result"] for c in calls)
    assert {s["finish_reason"] for s in samples} == {"stop", "length", "tool_budget"}
    assert any(len(s["messages"]) == 2 for s in samples), "a direct answer without a system message"
    assert any(m.get("reasoning") for s in samples for m in s["messages"])
    env = [s for listed in truth["runs"]["environment"]["steps"].values() for s in listed]
    env_calls = truth_calls({(0, i): s for i, s in enumerate(env)})
    assert {c["name"] for c in env_calls} == {"add"} and any(c["error"] for c in env_calls)
    assert truth["seconds"] < 90, "keep the runner small"


# --------------------------------------------------------------------------- samples


def test_samples_per_step(case: Case) -> None:
    store, samples = case.store, case.samples
    assert store.samples_per_step() == dict(Counter(step for step, _ in samples))


def test_every_row_read(case: Case) -> None:
    report = case.store.report
    assert report.bad_line_count == 0, [(b.file, b.line, b.reason) for b in report.bad_lines[:3]]


def test_finish_reason(case: Case) -> None:
    """``samples.finish_reason``: tool_budget where max_tool_calling_iterations stopped the loop (its last
    call never ran). TRL records no finish reason, and its parser strips the end-of-text token, so an answer
    that stopped and one max_completion_length cut read alike (in the Parquet and in the trainer's logged rows
    the callback sees): both stay unknown, never a guessed ``stop``."""
    store, samples = case.store, case.samples
    assert "finish_reason" in columns(store, "samples"), "samples has no finish_reason column"
    frame = query(store, "SELECT step, sample, finish_reason FROM samples")
    got = {
        (int(r.step), int(r.sample)): None if pd.isna(r.finish_reason) else r.finish_reason
        for r in frame.itertuples()
    }
    told = {"tool_budget"}  # what the files can show
    want = {k: s["finish_reason"] if s["finish_reason"] in told else None for k, s in samples.items()}
    assert any(w is not None for w in want.values()) or case.run == "environment", (
        "no budget stop in the truth"
    )
    assert got == want, (
        f"{differ(got, want)}; rl-board counts {Counter(got.values())}, truth {Counter(want.values())}"
    )


def test_sample_counts(case: Case) -> None:
    """``samples.turns``, ``n_tool_calls`` and ``n_tool_errors`` per trajectory."""
    store, samples = case.store, case.samples
    frame = query(store, "SELECT step, sample, turns, n_tool_calls, n_tool_errors FROM samples")
    got = {
        (int(r.step), int(r.sample)): (r.turns, r.n_tool_calls, r.n_tool_errors) for r in frame.itertuples()
    }
    calls = truth_calls(samples)
    want = {
        k: (
            len(s["messages"]),
            sum(1 for c in calls if (c["step"], c["sample"]) == k),
            sum(1 for m in s["messages"] if m.get("error")),
        )
        for k, s in samples.items()
    }
    assert got == want, differ(got, want)


def test_sample_tools(case: Case) -> None:
    """``samples.tools``: the tools a trajectory called, sorted and comma-separated (null for none)."""
    frame = query(case.store, "SELECT step, sample, tools FROM samples")
    got = {(int(r.step), int(r.sample)): None if pd.isna(r.tools) else r.tools for r in frame.itertuples()}
    names: dict[Key, set[str]] = {k: set() for k in case.samples}
    for c in truth_calls(case.samples):
        names[c["step"], c["sample"]].add(c["name"])
    want = {k: ",".join(sorted(v)) or None for k, v in names.items()}
    assert got == want, differ(got, want)


# --------------------------------------------------------------------------- turns


def turn_frame(store: RolloutStore, extra: str = "") -> pd.DataFrame:
    return query(store, f"SELECT step, sample, turn, role{extra} FROM turns ORDER BY step, sample, turn")


def test_turn_roles(case: Case) -> None:
    """Every sample's messages in order: prompt (system?, user), then assistant / tool turns."""
    store, samples = case.store, case.samples
    frame = turn_frame(store)
    got = {k: list(g["role"]) for k, g in frame.groupby(["step", "sample"])}
    want = {k: [m["role"] for m in s["messages"]] for k, s in samples.items()}
    assert got == want, differ(got, want)


def test_turn_counts_by_role(case: Case) -> None:
    store, samples = case.store, case.samples
    got = Counter(turn_frame(store)["role"])
    want = Counter(m["role"] for s in samples.values() for m in s["messages"])
    assert got == want


def test_single_turn_trajectories(case: Case) -> None:
    """A direct answer is its prompt's messages and one assistant message in ``turns``."""
    store, samples = case.store, case.samples
    single = {
        k: [m["role"] for m in s["messages"]]
        for k, s in samples.items()
        if [m["role"] for m in s["messages"]][-2:] == ["user", "assistant"]
    }
    assert single or case.run == "environment", "the truth has no single-turn trajectory"
    frame = turn_frame(store)
    got = {k: list(g["role"]) for k, g in frame.groupby(["step", "sample"]) if k in single}
    assert got == single, differ(got, single)


def test_turn_content(case: Case) -> None:
    """Each message's text: assistant text without its thinking, tool results as TRL wrote them."""
    store, samples = case.store, case.samples
    frame = turn_frame(store, ", content")
    got = {(int(r.step), int(r.sample), int(r.turn)): r.content for r in frame.itertuples()}
    want = {k: m["content"] for k, m in truth_turns(samples).items()}
    assert got == want, differ(got, want)


def test_reasoning_column(case: Case) -> None:
    assert "reasoning" in columns(case.store, "turns"), "turns has no reasoning column"


def test_reasoning_text(case: Case) -> None:
    """The ``<think>`` text of each assistant turn kept (TRL's ``reasoning_content``); null where it had
    none."""
    store, samples = case.store, case.samples
    assert "reasoning" in columns(store, "turns"), "turns has no reasoning column"
    frame = turn_frame(store, ", reasoning")
    got = {
        (int(r.step), int(r.sample), int(r.turn)): r.reasoning
        for r in frame.itertuples()
        if r.role == "assistant"
    }
    got = {k: None if pd.isna(v) else v for k, v in got.items()}
    want = {k: m["reasoning"] for k, m in truth_turns(samples).items() if m["role"] == "assistant"}
    assert got == want, differ(got, want)


def test_tool_turn_errors(case: Case) -> None:
    """``turns.error`` on tool results: true for an unknown tool and a tool that raised."""
    store, samples = case.store, case.samples
    frame = turn_frame(store, ", error")
    got = {(int(r.step), int(r.sample), int(r.turn)): r.error for r in frame.itertuples() if r.role == "tool"}
    want = {k: m["error"] for k, m in truth_turns(samples).items() if m["role"] == "tool"}
    counts = f"errors: rl-board {sum(v is True for v in got.values())}, truth {sum(want.values())}"
    assert got == want, f"{differ(got, want)}; {counts}"


def test_turn_tool_fields(case: Case) -> None:
    """``turns.n_tool_calls`` on assistant turns and ``turns.tool_name`` on tool results."""
    frame = turn_frame(case.store, ", n_tool_calls, tool_name")
    got = {
        (int(r.step), int(r.sample), int(r.turn)): (
            int(r.n_tool_calls),
            None if pd.isna(r.tool_name) else r.tool_name,
        )
        for r in frame.itertuples()
        if r.role in ("assistant", "tool")
    }
    want = {
        k: (len(m.get("tool_calls") or ()), m.get("name"))
        for k, m in truth_turns(case.samples).items()
        if m["role"] in ("assistant", "tool")
    }
    assert got == want, differ(got, want)


# --------------------------------------------------------------------------- tool calls


def call_frame(store: RolloutStore) -> pd.DataFrame:
    return query(store, "SELECT * FROM tool_calls ORDER BY step, sample, turn, call")


def test_tool_calls_by_name(case: Case) -> None:
    store, samples = case.store, case.samples
    assert Counter(call_frame(store)["name"]) == Counter(c["name"] for c in truth_calls(samples))


def test_tool_call_places(case: Case) -> None:
    """Each call at its assistant turn, in order, with its name."""
    store, samples = case.store, case.samples
    got = {call_key(r): r["name"] for r in call_frame(store).to_dict("records")}
    want = {call_key(r): r["name"] for r in truth_calls(samples)}
    assert got == want, differ(got, want)


def test_tool_call_arguments(case: Case) -> None:
    """The arguments the model wrote: only the non-null fields of TRL's padded ``arguments`` struct."""
    store, samples = case.store, case.samples
    got = {
        call_key(r): json.loads(r["arguments"])
        if isinstance(r["arguments"], str) and r["arguments"]
        else None
        for r in call_frame(store).to_dict("records")
    }
    want = {call_key(r): r["arguments"] for r in truth_calls(samples)}
    assert got == want, differ(got, want)


def test_tool_call_errors(case: Case) -> None:
    """``tool_calls.error``: the unknown tool and the raising tool (null for a call nothing answered)."""
    store, samples = case.store, case.samples
    got = {
        call_key(r): None if pd.isna(r["error"]) else bool(r["error"])
        for r in call_frame(store).to_dict("records")
    }
    want = {call_key(r): r["error"] for r in truth_calls(samples)}
    counts = (
        f"errors: rl-board {sum(v is True for v in got.values())}, "
        f"truth {sum(v is True for v in want.values())}"
    )
    assert got == want, f"{differ(got, want)}; {counts}"


def test_unanswered_calls(case: Case) -> None:
    """``tool_calls.answered`` false for the calls of the last turn max_tool_calling_iterations left open."""
    store, samples = case.store, case.samples
    got = {call_key(r): bool(r["answered"]) for r in call_frame(store).to_dict("records")}
    want = {call_key(r): r["answered"] for r in truth_calls(samples)}
    counts = (
        f"unanswered: rl-board {sum(not v for v in got.values())}, truth {sum(not v for v in want.values())}"
    )
    assert got == want, f"{differ(got, want)}; {counts}"


def test_tool_call_results(case: Case) -> None:
    store, samples = case.store, case.samples
    got = {
        call_key(r): None if pd.isna(r["result"]) else r["result"]
        for r in call_frame(store).to_dict("records")
    }
    want = {call_key(r): r["result"] for r in truth_calls(samples)}
    assert got == want, differ(got, want)
