"""What rl-board's SQL views say about each hand-written agent dump, against counts made by hand.

The dumps (``tests/helpers/agentic_shapes.py``) are a few samples per on-disk shape of
``shared/reference/agentic-formats.md``; the numbers below were counted by eye from those texts, not by any
rl-board code, so a reader that drops a turn, a call or an ending shows up as a plain mismatch. Every message
the trainer recorded counts as a turn, a single-turn sample included (system?, user, assistant). One test per
quantity, parametrized by shape, so a failure names both.

Readings chosen where the reference leaves room (each matches what the trainer wrote down):

- verl, TRL, NeMo-RL and AReaL log no finish reason: None, but where the dump itself shows the stop the
  reference names: a last assistant turn whose calls nothing answered is verl's ``max_assistant_turns``
  (``turn_limit``) and TRL's ``max_tool_calling_iterations`` (``tool_budget``). An answer after which the
  loop ended may have been cut by length as well as stopped, so it stays None.
- SkyRL's logged ``stop`` on a turn-limited end is kept as logged (``stop``): it is what the trainer wrote.
- A tool result rendered in a ``user`` block (Qwen's template) is a ``tool`` turn: the trainer had a tool
  message there.
- SkyRL removes the last observation, the answer to a turn-limited end's call among them: that call is
  unanswered on disk.
- NeMo-RL's env tags (``<code>``) are not tool calls: the trainer keeps no call, only an ``environment`` turn.
- open-instruct keeps token ids and call counts, no message: no turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest

from rl_board.rollouts import sql
from rl_board.rollouts.store import RolloutStore
from tests.helpers.agentic_shapes import WRITERS


@dataclass(frozen=True)
class Hand:
    """The counts of one dump, by hand. ``finish``/``logged``/``turns`` are per sample in (step, sample)
    order; ``arguments`` every call's name and own arguments in (step, sample, turn, call) order (None: not
    logged); ``reasoning`` the assistant turns whose kept text holds their reasoning (None: no reasoning
    logged)."""

    roles: dict[str, int]
    calls: dict[str, int]
    errors: int
    unanswered: int
    finish: list[str | None]
    logged: list[str | None]
    turns: list[int]
    arguments: list[tuple[str, dict[str, Any]]] | None = None
    reasoning: int | None = None


HAND: dict[str, Hand] = {
    "verl": Hand(
        roles={"system": 4, "user": 4, "assistant": 7, "tool": 3},
        calls={"python": 4, "search": 1},
        errors=1,  # "Error executing tool 'python': ..."
        unanswered=2,  # the turn stopped by max_assistant_turns; the second of two parallel calls
        finish=[None, "turn_limit", None, None],
        logged=[None, None, None, None],
        turns=[5, 5, 5, 3],
        arguments=[
            ("python", {"code": "print(17*23)"}),
            ("python", {"code": "print(*range(1000))"}),
            ("python", {"code": "print(*range(500))"}),
            ("python", {"code": "print(x * 3)"}),
            ("search", {"query": "who named the variable x"}),
        ],
    ),
    "trl": Hand(
        roles={"system": 2, "user": 4, "assistant": 8, "tool": 4},
        calls={"python": 3, "search": 2},
        errors=1,  # "{'error': 'rate limit exceeded'}"
        unanswered=1,  # the stop at max_tool_calling_iterations
        finish=[None, None, "tool_budget", None],
        logged=[None, None, None, None],
        turns=[5, 6, 4, 3],
        arguments=[
            ("python", {"code": "print(17*23)"}),
            ("search", {"query": "capital of France", "top_k": 3}),
            ("search", {"query": "France capital city"}),
            ("python", {"code": "print(2**100)"}),
            ("python", {"code": "print(sum(map(int, str(2**100))))"}),
        ],
        reasoning=3,  # two first turns and the single-turn answer carry reasoning_content
    ),
    "prime-rl": Hand(
        roles={"system": 2, "user": 4, "assistant": 7, "tool": 3},
        calls={"python": 3, "search": 2},
        errors=0,
        unanswered=2,  # the max_turns episode's refused turn: two calls
        finish=["stop", "length", "turn_limit", "stop"],  # episode 1: no stop_condition, last call "length"
        logged=["agent_completed", None, "max_turns", "agent_completed"],
        turns=[5, 4, 4, 3],
        arguments=[
            ("python", {"code": "print(17*23)"}),
            ("search", {"query": "Paris name origin"}),
            ("python", {"code": "print(2**100)"}),
            ("python", {"code": "print(len(str(2**100)))"}),
            ("search", {"query": "first to compute 2**100"}),
        ],
        reasoning=2,
    ),
    "roll-proxy": Hand(
        roles={"system": 2, "user": 4, "assistant": 7, "tool": 4},
        calls={"python": 4, "search": 1},
        errors=1,  # "Error: the search service timed out"
        unanswered=1,
        finish=["stop", "length", "unknown", "stop"],
        logged=[None, None, None, None],
        turns=[5, 5, 4, 3],
        arguments=[
            ("python", {"code": "print(17*23)"}),
            ("search", {"query": "capital of France"}),
            ("python", {"code": "print(2+2)"}),
            ("python", {"code": "print(2**100)"}),
            ("python", {"code": "print(2**100 % 7)"}),
        ],
    ),
    "roll-native": Hand(
        roles={"system": 2, "user": 3, "assistant": 6, "tool": 3},
        calls={"python": 2, "search": 2},
        errors=1,  # "Error: search backend unavailable"
        unanswered=1,  # the MAX_STEPS end's last call
        finish=["stop", "turn_limit", "length"],
        logged=["FINISH", "MAX_STEPS", "MAX_LENGTH"],
        turns=[5, 6, 3],
        arguments=[
            ("python", {"code": "print(17*23)"}),
            ("search", {"query": "Candide author"}),
            ("search", {"query": "Candide Voltaire"}),
            ("python", {"code": "print(1700 + 59)"}),
        ],
    ),
    "nemo-train": Hand(
        roles={"system": 1, "user": 3, "assistant": 5, "environment": 5},
        calls={},
        errors=0,
        unanswered=0,
        finish=[None, None, None],
        logged=[None, None, None],
        turns=[6, 3, 5],  # sample 1: a prompt, one generation and its observation
    ),
    "nemo-val": Hand(
        roles={"system": 1, "user": 2, "assistant": 3, "environment": 3},
        calls={},
        errors=0,
        unanswered=0,
        finish=[None, None],
        logged=[None, None],
        turns=[5, 4],
    ),
    "skyrl": Hand(
        roles={"system": 2, "user": 3, "assistant": 6, "tool": 3},
        calls={"python": 2, "search": 2},
        errors=1,
        unanswered=1,
        finish=["stop", "stop", "length"],  # the turn-limited end says stop, as SkyRL logs it
        logged=[None, None, None],
        turns=[5, 6, 3],
        arguments=[
            ("python", {"code": "print(17*23)"}),
            ("search", {"query": "Candide author"}),
            ("search", {"query": "Candide Voltaire"}),
            ("python", {"code": "print(1759 - 1694)"}),
        ],
    ),
    "areal": Hand(
        roles={"system": 1, "user": 3, "assistant": 3},
        calls={},
        errors=0,
        unanswered=0,
        finish=[None, None],
        logged=[None, None],
        turns=[4, 3],  # the retry: user, wrong answer, feedback, answer
    ),
    "open-instruct": Hand(
        roles={},
        calls={"python": 2, "search": 1},
        errors=1,  # tool_call_stats: success false
        unanswered=0,  # every call counted was run
        finish=["stop", "length", "stop"],
        logged=[None, None, None],
        turns=[0, 0, 0],
    ),
}

SHAPES = sorted(HAND)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RolloutStore]:
    """Every dump written once and opened once (the tests only read)."""
    root = tmp_path_factory.mktemp("shapes")
    return {
        name: RolloutStore.open(write(root / name), cache_dir=root / name / ".cache")
        for name, write in WRITERS.items()
    }


def query(store: RolloutStore, text: str) -> pd.DataFrame:
    return sql.run_query(store, text).frame


def _none(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and value != value) else value


def _pairs(frame: pd.DataFrame) -> dict[str, int]:
    return {str(k): int(v) for k, v in zip(frame.iloc[:, 0], frame.iloc[:, 1], strict=True)}


def test_every_shape_has_hand_counts() -> None:
    """A writer without counts would be a shape nobody checks."""
    assert set(WRITERS) == set(HAND)
    for name, hand in HAND.items():  # the per-sample lists describe the same samples
        assert len(hand.finish) == len(hand.logged) == len(hand.turns), name
        assert sum(hand.turns) == sum(hand.roles.values()), name


@pytest.mark.parametrize("shape", SHAPES)
def test_sample_count(shape: str, stores: dict[str, RolloutStore]) -> None:
    """Every sample written is one row of ``samples`` (the other checks are per sample)."""
    store = stores[shape]
    assert store.report.bad_line_count == 0, store.report.bad_lines[:3]
    assert int(query(store, "SELECT count(*) FROM samples").iloc[0, 0]) == len(HAND[shape].turns)


@pytest.mark.parametrize("shape", SHAPES)
def test_turns_by_role(shape: str, stores: dict[str, RolloutStore]) -> None:
    """``turns`` has a row for every message the trainer recorded, single-turn samples included."""
    got = _pairs(query(stores[shape], "SELECT role, count(*) FROM turns GROUP BY role ORDER BY role"))
    assert got == HAND[shape].roles


@pytest.mark.parametrize("shape", SHAPES)
def test_sample_turns(shape: str, stores: dict[str, RolloutStore]) -> None:
    """``samples.turns`` counts each sample's messages."""
    got = query(stores[shape], "SELECT turns FROM samples ORDER BY step, sample")["turns"].tolist()
    assert [int(t) for t in got] == HAND[shape].turns


@pytest.mark.parametrize("shape", SHAPES)
def test_sample_turns_sum_to_turn_rows(shape: str, stores: dict[str, RolloutStore]) -> None:
    """The per-sample counts and the ``turns`` view agree with each other and with the messages written."""
    store = stores[shape]
    total = query(store, "SELECT coalesce(sum(turns), 0) FROM samples").iloc[0, 0]
    rows = query(store, "SELECT count(*) FROM turns").iloc[0, 0]
    assert (int(total), int(rows)) == (sum(HAND[shape].roles.values()),) * 2


@pytest.mark.parametrize("shape", SHAPES)
def test_tool_calls_by_name(shape: str, stores: dict[str, RolloutStore]) -> None:
    got = _pairs(query(stores[shape], "SELECT name, count(*) FROM tool_calls GROUP BY name ORDER BY name"))
    assert got == HAND[shape].calls


@pytest.mark.parametrize("shape", SHAPES)
def test_tool_errors(shape: str, stores: dict[str, RolloutStore]) -> None:
    """Results that say the call failed, in the form each trainer writes a failure."""
    got = query(stores[shape], "SELECT count(*) FROM tool_calls WHERE error").iloc[0, 0]
    assert int(got) == HAND[shape].errors


@pytest.mark.parametrize("shape", SHAPES)
def test_unanswered_calls(shape: str, stores: dict[str, RolloutStore]) -> None:
    """Calls no result answers: a refused turn's, a limit's, the parallel calls verl never ran."""
    got = query(stores[shape], "SELECT count(*) FROM tool_calls WHERE answered = false").iloc[0, 0]
    assert int(got) == HAND[shape].unanswered


@pytest.mark.parametrize("shape", SHAPES)
def test_finish_reasons(shape: str, stores: dict[str, RolloutStore]) -> None:
    """Why each sample ended, in rl-board's vocabulary (None where the trainer logged nothing)."""
    store = stores[shape]
    if not store.has("finish_reason"):
        got = [None] * store.num_samples
    else:
        got = query(store, "SELECT finish_reason FROM samples ORDER BY step, sample")[
            "finish_reason"
        ].tolist()
    assert [_none(v) for v in got] == HAND[shape].finish


@pytest.mark.parametrize("shape", SHAPES)
def test_finish_reasons_logged(shape: str, stores: dict[str, RolloutStore]) -> None:
    """The trainer's own word, kept where it differs from the vocabulary's."""
    store = stores[shape]
    if not store.has("finish_reason_logged"):
        got = [None] * store.num_samples
    else:
        frame = query(store, "SELECT finish_reason_logged FROM samples ORDER BY step, sample")
        got = frame["finish_reason_logged"].tolist()
    assert [_none(v) for v in got] == HAND[shape].logged


@pytest.mark.parametrize("shape", [s for s in SHAPES if HAND[s].arguments is not None])
def test_call_arguments(shape: str, stores: dict[str, RolloutStore]) -> None:
    """Each call's own arguments (TRL's shared struct pads every call with the other tools' parameters)."""
    frame = query(stores[shape], "SELECT name, arguments FROM tool_calls ORDER BY step, sample, turn, call")
    got = [
        (str(n), json.loads(a) if a else None) for n, a in zip(frame["name"], frame["arguments"], strict=True)
    ]
    assert got == HAND[shape].arguments


@pytest.mark.parametrize("shape", [s for s in SHAPES if HAND[s].reasoning is not None])
def test_reasoning_kept(shape: str, stores: dict[str, RolloutStore]) -> None:
    """Reasoning logged apart from the text (``reasoning_content``) stays on its turn, in its content or a
    column of its own (every such text here says "pondering", which no other text does)."""
    store = stores[shape]
    apart = (
        "reasoning" in query(store, "DESCRIBE turns")["column_name"].tolist()
    )  # its own column, else in content
    text = "concat_ws(' ', reasoning, content)" if apart else "content"
    got = query(store, f"SELECT count(*) FROM turns WHERE role = 'assistant' AND {text} LIKE '%pondering%'")
    assert int(got.iloc[0, 0]) == HAND[shape].reasoning
