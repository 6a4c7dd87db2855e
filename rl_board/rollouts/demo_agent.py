"""A synthetic agent run: multi-turn trajectories that call tools, some calls failing, ending for several
reasons.

The story a researcher should find in it: reward climbs while the agent
learns its tools; ``shell`` keeps failing (its error rate stays high) while
``python`` and ``search`` fail less and less; early trajectories often run out
of turns or tokens (``turn_limit``, ``length``), later ones mostly stop with an
answer; and from the middle of the run some assistant turns drift far from the
reference (a high per-turn KL).

Each line is rl-board's own format with the whole trajectory as OpenAI-style
``messages`` (assistant ``tool_calls`` with ids, ``tool`` results answering
them), ``finish_reason``, and the response's token arrays: the turns after the
prompt, one after another, each message holding its ``tokens`` span
``[start, end)`` and whether the loss counts it (``trained``); tool output is
in the arrays but masked (``token_loss_mask`` 0). Used by the tests, the
screenshots and the click benchmark (10,000 trajectories of about 20 turns).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rl_board.formats.conversation import as_text

TOOLS = ("python", "search", "read_file", "shell")
ERROR_RATE = {"python": (0.35, 0.05), "search": (0.2, 0.05), "read_file": (0.15, 0.1), "shell": (0.6, 0.5)}
THOUGHT = (
    " Let",
    " me",
    " check",
    " the",
    " file",
    " first",
    ",",
    " then",
    " run",
    " the",
    " tests",
    ".",
    " The",
    " output",
    " shows",
    " a",
    " failing",
    " case",
    " so",
    " I",
    " will",
    " fix",
    " it",
)
SNIPPETS = (
    "print(solve(3))",
    "import math\nprint(math.gcd(12, 18))",
    "x = [1, 2, 3]\nprint(sum(x) / 0)",
    "print(open('data.csv').read()[:80])",
)
QUERIES = (
    "pytest fixture scope",
    "python gcd of a list",
    "ZeroDivisionError mean of empty list",
    "csv header skip",
)
PATHS = ("solver.py", "tests/test_solver.py", "utils/stats.py", "README.md")
COMMANDS = ("pytest -x -q", "git diff --stat", "python -m solver --check", "ls tests")
OUTPUT = (" ok", " 42", " passed", " line", " 17", ":", " def", " solve", "(", ")", " return", " x", "\n")
ERRORS = {
    "python": (
        'Traceback (most recent call last):\n  File "<cell>", line 1\nZeroDivisionError: division by zero'
    ),
    "search": "Error executing tool 'search': rate limited",
    "read_file": "Error: no such file 'src/main.py'",
    "shell": "Error executing tool 'shell': command timed out after 30 s",
}


@dataclass(frozen=True)
class AgentSpec:
    """Shape of a synthetic agent run."""

    steps: int = 10
    trajectories: int = 16  # per step
    turns: int = 20  # the most messages a trajectory has (turn limit)
    tokens: int = 12  # mean tokens of an assistant or tool turn
    ranks: int = 2
    seed: int = 0
    token_level: bool = True


def write_agent_run(out_dir: str | Path, spec: AgentSpec) -> list[Path]:
    """Write one run as ``rollout_data_rank_{r}.jsonl`` files; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    paths = [out / f"rollout_data_rank_{r}.jsonl" for r in range(spec.ranks)]
    handles = [p.open("w", encoding="utf-8") for p in paths]
    try:
        for step in range(spec.steps):
            progress = step / max(spec.steps - 1, 1)
            for i in range(spec.trajectories):
                record = trajectory_record(rng, spec, step, progress, i)
                handles[i % spec.ranks].write(json.dumps(record, ensure_ascii=False) + "\n")
    finally:
        for h in handles:
            h.close()
    return paths


def trajectory_record(rng: np.random.Generator, spec: AgentSpec, step: int, progress: float, i: int) -> dict:
    """One trajectory as one line of rl-board's format."""
    task = f"Task {step}-{i}: fix the failing test in repo {int(rng.integers(100, 999))}."
    messages: list[dict] = [
        {
            "role": "system",
            "content": "You are a coding agent. Call tools to inspect and "
            "change the repository, then answer.",
        },
        {"role": "user", "content": task},
    ]
    reason = _finish(rng, progress)
    ends_early = reason in ("stop", "error")
    budget = int(rng.integers(spec.turns // 2, spec.turns + 1)) if ends_early else spec.turns
    budget -= reason == "stop"  # room for the answer
    errors = 0
    while len(messages) < budget - 1:
        calls = _calls(rng, f"{step}-{i}-{len(messages)}", min(2, budget - 1 - len(messages)))
        messages.append(
            {"role": "assistant", "content": _words(rng, THOUGHT, spec.tokens), "tool_calls": calls}
        )
        for call in calls:
            name = call["function"]["name"]
            failed = rng.random() < _error_rate(name, progress)
            errors += failed
            content = ERRORS[name] if failed else f"{name} result:{_words(rng, OUTPUT, spec.tokens)}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    if reason == "stop":
        messages.append({"role": "assistant", "content": "The test passes now: the answer is 42."})
    solved = reason == "stop" and rng.random() < 0.3 + 0.6 * progress
    reward = float(solved) - 0.05 * errors + rng.normal(0, 0.05)
    first = 2  # the response is every message after the system prompt and the task
    record: dict = {
        "step": step,
        "prompt": as_text(messages[:first]),
        "response": as_text(messages[first:]),
        "reward": round(reward, 4),
        "ground_truth": "42",
        "finish_reason": reason,
    }
    if spec.token_level:
        record.update(_token_arrays(rng, messages, first, progress))
    record["messages"] = messages
    return record


def _finish(rng: np.random.Generator, progress: float) -> str:
    late = progress
    weights = np.array(
        [0.35 + 0.5 * late, 0.25 - 0.2 * late, 0.25 - 0.2 * late, 0.05, 0.05, 0.05 - 0.04 * late]
    )
    names = ("stop", "length", "turn_limit", "tool_budget", "timeout", "error")
    return str(names[int(rng.choice(len(names), p=weights / weights.sum()))])


def _error_rate(name: str, progress: float) -> float:
    start, end = ERROR_RATE[name]
    return start + (end - start) * progress


def _calls(rng: np.random.Generator, key: str, most: int) -> list[dict]:
    out = []
    for j in range(int(rng.integers(1, max(1, most) + 1))):
        name = str(TOOLS[int(rng.choice(len(TOOLS), p=[0.4, 0.25, 0.2, 0.15]))])
        pick = int(rng.integers(0, len(SNIPPETS)))
        arguments = {
            "python": {"code": SNIPPETS[pick]},
            "search": {"query": QUERIES[pick], "top_k": 3},
            "read_file": {"path": f"src/{PATHS[pick]}"},
            "shell": {"cmd": COMMANDS[pick]},
        }[name]
        out.append(
            {
                "id": f"call-{key}-{j}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        )
    return out


def _words(rng: np.random.Generator, vocabulary: tuple[str, ...], mean: int) -> str:
    n = max(3, int(rng.normal(mean, mean / 4)))
    return "".join(vocabulary[int(k)] for k in rng.integers(0, len(vocabulary), size=n))


def _pieces(text: str) -> list[str]:
    """The text as word-like tokens that join back to it (a space starts a token)."""
    tokens: list[str] = []
    for part in text.split(" "):
        if tokens or part:
            tokens.append(part if not tokens else " " + part)
    return tokens or [text]


def _token_arrays(rng: np.random.Generator, messages: list[dict], first: int, progress: float) -> dict:
    """The response's tokens (every turn after the prompt), spans on the messages, tool output masked."""
    tokens: list[str] = []
    mask: list[float] = []
    drifting = progress > 0.4 and rng.random() < 0.5
    drift_turn = int(rng.integers(first, len(messages))) if drifting else -1
    shifts: list[np.ndarray] = []
    for k, message in enumerate(messages[first:], start=first):
        text = message["content"] + "".join(
            f" {c['function']['name']}({c['function']['arguments']})" for c in message.get("tool_calls", ())
        )
        pieces = _pieces(text)
        trained = message["role"] == "assistant"
        message["tokens"] = [len(tokens), len(tokens) + len(pieces)]
        message["trained"] = trained
        tokens += pieces
        mask += [1.0 if trained else 0.0] * len(pieces)
        drift = 0.05 + 0.3 * progress + (2.0 if k == drift_turn and trained else 0.0)
        shifts.append(np.abs(rng.normal(0, drift, size=len(pieces))) * (rng.random(len(pieces)) < 0.4))
    n = len(tokens)
    ref = -np.abs(rng.normal(1.0, 0.7, size=n))
    logp = np.minimum(ref + np.concatenate(shifts) if shifts else ref, 0.0)
    return {
        "response_tokens": tokens,
        "logprobs": np.round(logp, 4).tolist(),
        "ref_logprobs": np.round(ref, 4).tolist(),
        "token_loss_mask": mask,
    }
