"""Chat messages as trainers log them, and the one way rl-board turns them into text.

A *conversation* is an OpenAI-style list of messages: ``{"role", "content"}``
dicts, where ``content`` is a string or a list of parts (``{"type": "text",
"text": ...}``). TRL logs a conversational prompt and its completion that way,
NeMo-RL its validation samples, prime-rl and ROLL their chats. rl-board keeps
the messages themselves (the ``messages`` column, JSON text) for the
conversation view and gives every message list one text rendering, so a
conversational prompt can be searched, grouped and compared like any other.
"""

from __future__ import annotations

import json
from typing import Any

SEPARATOR = "\n\n"


def is_messages(value: Any) -> bool:
    """Whether a logged value is a list of chat messages (every item a dict with a role)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in value)
    )


def content_text(content: Any) -> str | None:
    """A message's content as text: a string, or the text parts of a part list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else p.get("text") if isinstance(p, dict) else None for p in content]
        texts = [p for p in parts if isinstance(p, str)]
        return "".join(texts) if texts else None
    return None


def as_text(messages: list[dict[str, Any]]) -> str:
    """One message: its content. Several: each as ``role: content``, blank lines between.

    The same rendering for every format, so a prompt logged as messages groups with itself across steps.
    """
    if len(messages) == 1:
        return content_text(messages[0].get("content")) or ""
    return SEPARATOR.join(f"{m.get('role')}: {content_text(m.get('content')) or ''}" for m in messages)


def to_json(messages: list[dict[str, Any]]) -> str:
    """The messages as kept in the ``messages`` column (non-JSON values as their text)."""
    return json.dumps(messages, ensure_ascii=False, default=str)


def joined(prompt: Any, response: Any) -> list[dict[str, Any]] | None:
    """The whole conversation of a sample whose prompt and/or response are message lists."""
    if not (is_messages(prompt) or is_messages(response)):
        return None
    out: list[dict[str, Any]] = []
    for value, role in ((prompt, "user"), (response, "assistant")):
        if is_messages(value):
            out.extend(value)
        elif isinstance(value, str):
            out.append({"role": role, "content": value})
    return out


def as_fields(prompt: Any, response: Any, messages: Any = None) -> tuple[Any, Any, Any]:
    """(prompt, response, messages) with message lists rendered as text and the conversation kept as JSON.

    Values that are not message lists are returned as they are (the reader checks them); a ``messages``
    the log has itself wins, kept as JSON text when it is a list.
    """
    chat = joined(prompt, response)
    if isinstance(messages, list):
        messages = to_json(messages)
    elif messages is None and chat is not None:
        messages = to_json(chat)
    return (
        as_text(prompt) if is_messages(prompt) else prompt,
        as_text(response) if is_messages(response) else response,
        messages,
    )


def parsed(value: Any) -> list[dict[str, Any]] | None:
    """The messages a sample keeps (``messages``, JSON text), or None when it has none or they do not
    parse."""
    if not isinstance(value, str) or not value:
        return None
    try:
        found = json.loads(value)
    except ValueError:
        return None
    return found if is_messages(found) else None
