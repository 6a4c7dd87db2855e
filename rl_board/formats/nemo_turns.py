"""NeMo-RL's logged conversations as turns.

A training line keeps its message log as ``content: [[str, ...]]``: the
contents without their roles. NeMo-RL builds that log as the prompt's
messages (one rendered user message, or a raw system message then a rendered
user one), then each generation followed by the environment's observation:
after every generation, the last included (math's ``Environment: correct``,
code's ``<result>...</result>``). The roles are therefore known from how many
generations there were, and the loss mask says that: each generation is one
run of set positions in ``token_loss_mask``. So ``n`` strings with ``g``
generations hold ``n - 2g`` prompt strings; a log without the last observation
(``n - 2g`` = 0) holds one. Without a mask, one prompt string is assumed.

A validation line keeps ``[[{role, content}, ...]]``: the roles are given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rl_board.formats import conversation, pick
from rl_board.formats.base import number


@dataclass(frozen=True)
class Turns:
    """A line's text as rl-board keeps it."""

    prompt: str | None
    response: str | None  # the one answer; several answers joined by blank lines
    messages: list[dict[str, Any]] | None  # the turns: with roles logged, or more than one generation


def of_content(content: Any, mask: list | None, runs: int | None = None) -> Turns:
    """The turns of a line's ``content``; ``mask`` is its ``token_loss_mask`` row (None when not logged);
    ``runs``: its ``generations``, when the caller has counted them already (with numpy)."""
    listed = pick.row(content) or ([content] if isinstance(content, str) else [])
    if any(isinstance(m, dict) for m in listed):
        return _with_roles(pick.dicts(listed))
    strings = [m for m in listed if isinstance(m, str)]
    if not strings:
        return Turns(None, None, None)
    found = generations(mask) if runs is None else runs
    messages = [
        {"role": role, "content": text}
        for role, text in zip(roles(len(strings), found), strings, strict=True)
    ]
    answers = [m["content"] for m in messages if m["role"] == "assistant"]
    prompt = [m for m in messages if m["role"] in ("system", "user")]
    prompt_text = strings[0] if len(prompt) == 1 else conversation.as_text(prompt)
    if [m["role"] for m in messages] in (["user"], ["user", "assistant"]):  # its text says all its turns
        return Turns(prompt_text, answers[0] if answers else None, None)
    return Turns(prompt_text, pick.answers(messages), messages)


def _with_roles(chat: list[dict[str, Any]]) -> Turns:
    answers = [pick.text(m.get("content")) for m in chat if m.get("role") == "assistant"]
    return Turns(pick.chat_prompt(chat), answers[-1] if answers else None, chat)


def generations(mask: list | None) -> int | None:
    """How many generations a loss mask covers: its runs of set positions (None without a mask)."""
    if mask is None:
        return None
    runs, inside = 0, False
    for value in mask:
        on = not isinstance(value, (list, dict)) and number(value) == 1.0
        runs += on and not inside
        inside = on
    return runs


def roles(n: int, generations: int | None) -> list[str]:
    """The roles of ``n`` message strings (see the module docstring)."""
    prompt = 1
    if generations:
        prompt = n - 2 * generations if n - 2 * generations >= 1 else max(n - 2 * generations + 1, 1)
    prompt = min(prompt, n)
    head = ["system"] * (prompt - 1) + ["user"]
    return head + ["assistant" if k % 2 == 0 else "environment" for k in range(n - prompt)]
