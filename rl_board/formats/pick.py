"""Picking values out of a trainer's nested records: numbers, ids, text and chats, never raising.

The adapters of the trainers that log whole batches or agent episodes
(NeMo-RL, prime-rl, ROLL, open-instruct) share these: a record from a log is
whatever the trainer wrote, so every helper answers None (or leaves a field
out) for a value of the wrong kind instead of raising.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rl_board.formats import conversation
from rl_board.formats.base import Record, first, number

SEP = "\n\n"  # between the answers of a several-turn sample in its ``response`` text
text = conversation.content_text


def finite(value: Any) -> float | None:
    """A finite float (a one-element list unwrapped), or None."""
    x = number(value)
    return x if x is not None and math.isfinite(x) else None


def whole(value: Any) -> int | None:
    """An integral number as int (steps, indices); bools and fractions are not."""
    if isinstance(first(value), bool):
        return None
    x = finite(value)
    return int(x) if x is not None and x == int(x) else None


def row(value: Any) -> list | None:
    """A per-token array without its batch dimension of 1 (``[[...]]`` -> ``[...]``)."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    return value if isinstance(value, list) else None


def scalar(value: Any) -> str | None:
    """A scalar as a string (ids, answers); containers and bools are left out."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def key(value: Any, order: tuple[str, ...] = ("id", "name", "key")) -> str | None:
    """A grouping / naming key as a string: a scalar, or the first of a dict's id / name / key."""
    if isinstance(value, dict):
        value = next((value[k] for k in order if value.get(k) is not None), None)
    return scalar(value)


def put(sample: Record, name: str, value: Any) -> None:
    """Keep a field only when it was found: missing beats a column of None."""
    if value is not None:
        sample[name] = value


def dicts(value: Any) -> list[dict]:
    """The dicts of a list (anything else in it skipped); [] for what is not a list."""
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def loaded(value: Any) -> Any:
    """A JSON document kept as a string in a column (ROLL's ``messages``), parsed; other values as they are.

    A string that is not JSON gives None: it held no structure to read.
    """
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def chat_prompt(messages: list) -> str | None:
    """What the policy saw: the messages before the first answer, rendered as every conversation is."""
    chat = dicts(messages)
    answered = next((i for i, m in enumerate(chat) if m.get("role") == "assistant"), len(chat))
    prompt = chat[:answered]
    return conversation.as_text(prompt) if prompt else None


def answers(messages: list[dict]) -> str:
    """The ``response`` text of a conversation: its assistant turns' text after the prompt, blank lines
    between ("" when none has text: an episode that failed before answering, or only called tools)."""
    start = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
    texts = [text(m.get("content")) for m in messages[start:] if m.get("role") == "assistant"]
    return SEP.join(t for t in texts if t and t.strip())


def end_aligned(messages: list[dict], values: list[float | None], role: str = "assistant") -> None:
    """Put per-turn rewards on the turns of ``role``, the last value on the last turn (a log that keeps only
    the last prompt of a long episode holds fewer turns than it has step rewards)."""
    turns = [m for m in messages if m.get("role") == role]
    for message, value in zip(reversed(turns), reversed(values), strict=False):
        if value is not None:
            message["reward"] = value
