"""A sample as a trajectory: its turns, the tools it called, what came back, and why it ended.

Every format's messages are brought to one shape (``normalize``), kept as JSON
text in the sample's ``messages`` column. A message is a dict:

- ``role``: ``system``, ``user``, ``assistant``, ``tool`` or ``environment``
  (Llama's ``ipython`` is a tool; other roles are kept, lower-cased);
- ``content``: its text (a part list's text parts joined);
- ``reasoning`` (assistant): its thinking, kept apart from ``content``: a
  logged ``reasoning_content`` / ``reasoning`` (TRL, prime-rl, OpenAI-style
  servers), else a leading ``<think>...</think>`` block of its text (Qwen3);
- ``tool_calls`` (assistant): ``[{"id", "name", "arguments"}]``, arguments as
  JSON text as the model wrote them (a structured value's null fields are
  dropped: TRL's Parquet pads every call with every tool's parameter names);
  OpenAI's nested ``function`` and prime-rl's flat calls alike;
- ``tool_call_id``, ``name`` (tool): the call it answers and the tool's name,
  from the log, else from the call it answers: by id, else the k-th result
  after an assistant turn answers its k-th call (as the chat templates render);
- ``error`` (tool): True when the result says the call failed;
- ``reward`` (any): a per-turn reward or score, when the log has one;
- ``tokens`` and ``trained``: the turn's ``[start, end)`` span in the
  response's token arrays and whether the loss counts it, when known.

A single-turn sample is a trajectory of two turns (its prompt and its
answer); nothing else about it changes. ``finish_reason`` names why a
trajectory ended, in one vocabulary across trainers (``FINISH_REASONS``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rl_board.formats.conversation import content_text

ROLES = ("system", "user", "assistant", "tool", "environment")
_ROLE_ALIASES = {
    "ipython": "tool",
    "function": "tool",
    "observation": "environment",
    "env": "environment",
    "human": "user",
    "model": "assistant",
    "gpt": "assistant",
}
# Why a trajectory ended, whatever the trainer called it.
FINISH_REASONS = ("stop", "length", "turn_limit", "tool_budget", "timeout", "error", "unknown")
_FINISH = {
    "stop": "stop",
    "eos": "stop",
    "end_turn": "stop",
    "completed": "stop",
    "complete": "stop",
    "finish": "stop",
    "finished": "stop",
    "agent_completed": "stop",
    "done": "stop",
    "success": "stop",
    "length": "length",
    "max_length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "max_input_tokens": "length",
    "max_total_tokens": "length",
    "context_length": "length",
    "truncated": "length",
    "max_turns": "turn_limit",
    "max_steps": "turn_limit",
    "turn_limit": "turn_limit",
    "max_assistant_turns": "turn_limit",
    "max_user_turns": "turn_limit",
    "max_iterations": "turn_limit",
    "max_tool_calls": "tool_budget",
    "tool_budget": "tool_budget",
    "max_tool_calling_iterations": "tool_budget",
    "timeout": "timeout",
    "timed_out": "timeout",
    "time_limit": "timeout",
    "env_timeout": "timeout",
    "error": "error",
    "failed": "error",
    "failure": "error",
    "aborted": "error",
    "abort": "error",
    "exception": "error",
    "env_reset_failed": "error",
    "sandbox_init_failed": "error",
    "llm_generate_failed": "error",
}
# How tools and environments say a call failed (verl's agent loop, TRL, sandboxes, Python itself).
_ERROR = re.compile(
    r"^\s*(?:error\b|Error executing tool|Unknown function|Invalid JSON in arguments|Traceback \(most recent "
    r"call last\)|\{\s*['\"]error['\"]\s*:|<error>|Exception:|\w+Error: )",
    re.I,
)


def role_of(value: Any) -> str:
    """A logged role in rl-board's vocabulary (unknown roles kept, lower-cased)."""
    role = str(value or "").strip().lower()
    return _ROLE_ALIASES.get(role, role)


def finish_reason(value: Any) -> str | None:
    """A logged finish or stop reason in one vocabulary (``FINISH_REASONS``); None when none was logged."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    key = re.sub(r"[\s\-]+", "_", str(value).strip().lower())
    key = key.split(".")[-1]  # enum reprs: "StopReason.MAX_LENGTH"
    return _FINISH.get(key, "unknown")


def is_error(text: str) -> bool:
    """Whether a tool's result says the call failed."""
    return bool(_ERROR.match(text or ""))


def _arguments(value: Any) -> str:
    """A call's arguments as JSON text; a mapping's null fields are padding, not what the model wrote."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if v is not None}
    return json.dumps(value, ensure_ascii=False, default=str) if value is not None else ""


_THINK = re.compile(r"\A\s*<think>(.*?)</think>\s*", re.S)


def _reasoning(raw: dict[str, Any], content: str) -> tuple[str | None, str]:
    """An assistant turn's thinking and the content without it: the logged field, else a leading think
    block."""
    for key in ("reasoning_content", "reasoning"):
        logged = content_text(raw.get(key))
        if logged and logged.strip():
            return logged, content
    found = _THINK.match(content)
    if found is None:
        return None, content
    return found.group(1).strip() or None, content[found.end() :]


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    """OpenAI's ``{"id", "type", "function": {"name", "arguments"}}`` and flat
    ``{"id", "name", "arguments"}``."""
    out = []
    for call in message.get("tool_calls") or ():
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        inner = function if isinstance(function, dict) else call
        out.append(
            {
                "id": call.get("id"),
                "name": str(inner.get("name") or ""),
                "arguments": _arguments(inner.get("arguments", inner.get("parameters"))),
            }
        )
    return out


def normalize(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """The messages in the one shape (module docstring), tool results matched to their calls."""
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []  # the calls of the last assistant turn not yet answered, in order
    by_id: dict[str, dict[str, Any]] = {}
    for raw in messages:
        if not isinstance(raw, dict):
            continue
        message: dict[str, Any] = {
            "role": role_of(raw.get("role")),
            "content": content_text(raw.get("content")) or "",
        }
        for key in ("reward", "tokens", "trained"):
            if raw.get(key) is not None:
                message[key] = raw[key]
        if message["role"] == "assistant":
            reasoning, message["content"] = _reasoning(raw, message["content"])
            if reasoning is not None:
                message["reasoning"] = reasoning
            calls = _calls(raw)
            if calls:
                message["tool_calls"] = calls
            pending = list(calls)
            by_id.update({c["id"]: c for c in calls if c["id"]})
        elif message["role"] == "tool":
            _answer(message, raw, pending, by_id)
        out.append(message)
    return out


def _answer(
    message: dict[str, Any],
    raw: dict[str, Any],
    pending: list[dict[str, Any]],
    by_id: dict[str, dict[str, Any]],
) -> None:
    """Match a tool result to its call (by id, else the next unanswered one) and mark a failure."""
    call_id = raw.get("tool_call_id")
    call = by_id.get(call_id) if call_id else None
    if call is not None and call in pending:
        pending.remove(call)
    elif call is None and pending:
        call = pending.pop(0)
    answered = call_id or (call.get("id") if call is not None else None)
    if answered:
        message["tool_call_id"] = answered
    name = raw.get("name") or (call.get("name") if call is not None else None)
    if name:
        message["name"] = str(name)
    logged_error = raw.get("error")
    message["error"] = bool(logged_error) if isinstance(logged_error, bool) else is_error(message["content"])


def result_of(messages: list[dict[str, Any]], turn: int, k: int) -> dict[str, Any] | None:
    """The tool message that answers the ``k``-th call of the assistant turn ``turn`` (None when none did).

    ``normalize`` gave each result its call's id when the log had ids; without ids, the results after a turn
    answer its calls in order, until the next assistant turn.
    """
    calls = messages[turn].get("tool_calls") or []
    if k >= len(calls):
        return None
    call_id = calls[k].get("id")
    results = []
    for message in messages[turn + 1 :]:
        if message.get("role") == "assistant":
            break
        if message.get("role") == "tool":
            if call_id and message.get("tool_call_id") == call_id:
                return message
            results.append(message)
    unmatched = [r for r in results if not r.get("tool_call_id") or not call_id]
    return unmatched[k] if not call_id and k < len(unmatched) else None


def ends_on_open_calls(messages: list[dict[str, Any]]) -> bool:
    """Whether the last turn is an assistant's tool calls with no result after them: the loop stopped before
    running them (a turn or tool-call limit)."""
    return bool(messages) and messages[-1].get("role") == "assistant" and bool(messages[-1].get("tool_calls"))


def to_json(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False, default=str)


def parsed(text: Any) -> list[dict[str, Any]] | None:
    """The messages kept as JSON text, or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, list) else None


@dataclass(frozen=True)
class Stats:
    """What a trajectory's columns say about it (counts for the step browser, the curves and SQL)."""

    turns: int
    tool_calls: int
    tools: str  # the tools it called, sorted, comma-separated ("" for none)
    tool_errors: int
    final_answer: bool  # it ends with an assistant turn that answers (text, no call left open)


def stats(messages: list[dict[str, Any]]) -> Stats:
    """Counts over normalized messages."""
    calls = [c for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or ()]
    names = sorted({str(c.get("name") or "") for c in calls} - {""})
    errors = sum(1 for m in messages if m.get("role") == "tool" and m.get("error"))
    last = messages[-1] if messages else {}
    answered = (
        last.get("role") == "assistant"
        and not last.get("tool_calls")
        and bool(str(last.get("content")).strip())
    )
    return Stats(len(messages), len(calls), ",".join(names), errors, answered)
