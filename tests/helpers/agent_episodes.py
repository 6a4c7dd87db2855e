"""Made-up agent episodes (turns, tool calls, results, how they ended) and what a reader must find in them.

An ``Episode`` is trainer-neutral; each writer in ``agentic_dumps`` renders it in one trainer's exact shape
and records an ``Expected`` for the sample it wrote, worked out from the messages it put on disk (never from
rl-board's code): their roles, the tools called, the failed results, why the trajectory ended (in
rl-board's vocabulary), per-turn rewards, and whether the trainer kept it for training.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field

TOOLS = ("python", "search", "calculator")
SYSTEM = "You solve tasks step by step and may call tools."
FAILURES = ("Error executing tool 'x': division by zero", "Traceback (most recent call last):\n  boom")


@dataclass
class Call:
    name: str
    arguments: dict
    result: str
    failed: bool

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments)


@dataclass
class Turn:
    text: str
    calls: list[Call]


@dataclass
class Episode:
    """A prompt, turns that call tools, and a final answer (None when the run was cut)."""

    task: str
    turns: list[Turn]
    answer: str | None
    end: str  # "stop" (answered), "length" (the answer cut short), "max_turns" (calls left unanswered)
    reward: float

    @property
    def calls(self) -> list[Call]:
        return [c for t in self.turns for c in t.calls]


def episode(
    rng: random.Random,
    k: int,
    *,
    ends: tuple[str, ...] = ("stop", "stop", "length", "max_turns"),
    max_turns: int = 3,
) -> Episode:
    """A made-up episode: 0..max_turns tool turns of 1-2 calls each; some results are failures."""
    end = rng.choice(ends)
    turns = []
    for t in range(rng.randint(1 if end == "max_turns" else 0, max_turns)):
        calls = []
        for j in range(rng.randint(1, 2)):
            failed = rng.random() < 0.3
            name = rng.choice(TOOLS)
            result = rng.choice(FAILURES) if failed else f"result {k}.{t}.{j}: {rng.randint(1, 999)}"
            calls.append(Call(name, {"query": f"q{k}-{t}-{j}", "n": j}, result, failed))
        turns.append(Turn(f"Step {t}: let me use a tool.", calls))
    answer = (
        None
        if end == "max_turns"
        else f"The answer is {rng.randint(1, 99)}" + ("" if end == "stop" else " and")
    )
    return Episode(
        f"Task {k}: find the value of item {rng.randint(1, 50)}.",
        turns,
        answer,
        end,
        rng.choice([0.0, 0.5, 1.0]),
    )


@dataclass
class Expected:
    """What a correct reader finds in one written sample."""

    step: int
    roles: Counter  # messages by role (empty when the trainer logs no turns)
    calls: Counter  # tool calls by name
    errors: int  # calls whose result says it failed
    finish: str | None  # rl-board's word for why it ended
    reward: float | None
    turn_rewards: list[float] | None = None  # per assistant turn, in order, when the log has them
    kept: bool | None = None
    dropped: str | None = None  # the start of the reason it was not kept
    turns: int | None = None  # messages kept (None: the number of roles)
    extra: dict = field(default_factory=dict)

    @property
    def n_turns(self) -> int:
        return self.turns if self.turns is not None else sum(self.roles.values())


def plain_messages(ep: Episode, *, system: bool = True) -> list[dict]:
    """The episode as role/content/calls, the calls flat (``{"name", "arguments"}``), results after their
    turn."""
    out: list[dict] = [{"role": "system", "content": SYSTEM}] if system else []
    out.append({"role": "user", "content": ep.task})
    for i, turn in enumerate(ep.turns):
        out.append({"role": "assistant", "content": turn.text, "calls": turn.calls})
        if ep.end == "max_turns" and i == len(ep.turns) - 1:
            break  # the refused turn: its calls never ran
        out.extend({"role": "tool", "content": c.result, "call": c} for c in turn.calls)
    if ep.answer is not None:
        out.append({"role": "assistant", "content": ep.answer, "calls": []})
    return out


def expected_of(
    step: int, messages: list[dict], finish: str | None, reward: float | None, **more: object
) -> Expected:
    """Counts from ``plain_messages``-shaped messages as written."""
    calls = Counter(c.name for m in messages for c in m.get("calls", ()))
    errors = sum(1 for m in messages if m["role"] == "tool" and m["call"].failed)
    return Expected(step, Counter(m["role"] for m in messages), calls, errors, finish, reward, **more)  # type: ignore[arg-type]


def rng_for(seed: int) -> random.Random:
    return random.Random(seed)
