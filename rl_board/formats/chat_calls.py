"""Tool calls and tool results inside one turn's decoded text (the parts ``chat_text`` hands over).

Two call syntaxes are read, each as its chat template writes it:

- Tagged (Qwen / Hermes, ChatML): ``<tool_call>\\n{"name": N, "arguments": {...}}\\n</tool_call>`` after
  the assistant's text, or Qwen3-Coder's ``<tool_call><function=N><parameter=P>V</parameter>...``.
  A tag inside a fenced code block (or right after a backtick) is text the model wrote, not a call.
- Llama 3.x: the whole assistant turn is a JSON ``{"name", "parameters"}`` (several joined by ``;``), or
  ``<|python_tag|>`` followed by a JSON call or a built-in ``tool.call(...)``.

A call is ``{"id": None, "name", "arguments"}``; ``arguments`` is the arguments object as compact JSON
text when it parses, else the text as written. A call that cannot be read keeps its text as arguments
(name ``""``) and says so in a note; a call cut short (no closing tag) keeps what was written.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
RESPONSE_OPEN, RESPONSE_CLOSE = "<tool_response>", "</tool_response>"
PYTHON_TAG = "<|python_tag|>"

NOT_JSON = "a tool call that is not a JSON call is kept as its text, with no name"
CUT = "the last tool call was cut before its end: its arguments are partial"
ODD_XML = "a tool call in an unexpected XML shape is kept as its text"

_FENCE = re.compile(r"\n[ \t]*```")  # a fence opens or closes a code block at a line's start
_LEADING_FENCE = re.compile(r"[ \t]*```")
_RESPONSE_GAP = re.compile(r"</tool_response>\s*<tool_response>")
_FUNCTION = re.compile(r"<function=([^>\n]*)>")
_PARAMETER = re.compile(r"<parameter=([^>\n]*)>")
_PARTIAL = re.compile(
    r'\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*(?:,\s*"(?:arguments|parameters)"\s*:\s*)?(.*)\Z', re.S
)
_BUILTIN = re.compile(r"([A-Za-z_]\w*)\.call\((.*)\)\Z", re.S)
_BUILTIN_HEAD = re.compile(r"([A-Za-z_]\w*)\.call\((.*)\Z", re.S)
_CALL_GAP = re.compile(r"[\s;]*")
_LLAMA_KEYS = frozenset({"name", "parameters", "arguments", "type"})


def call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": None, "name": name, "arguments": arguments}


def arguments_text(value: Any) -> str:
    """A call's arguments as text: a string as it is, anything else as compact JSON, none as ``""``."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def assistant(text: str, *, llama: bool = False, closed: bool = True) -> tuple[dict[str, Any], list[str]]:
    """One assistant turn: its message (calls split out of its text) and notes on what was uncertain.

    ``closed`` says whether the turn's end marker was there (Llama's calls have no closing tag of their own).
    """
    notes: list[str] = []
    content, calls = _llama(text, closed, notes) if llama else _tagged(text, notes)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return message, notes


def tool_results(text: str) -> list[str] | None:
    """The results of a block made only of ``<tool_response>`` blocks (Qwen renders them under ``user``)."""
    body = text.strip()
    if len(body) < len(RESPONSE_OPEN) + len(RESPONSE_CLOSE) or not (
        body.startswith(RESPONSE_OPEN) and body.endswith(RESPONSE_CLOSE)
    ):
        return None
    inner = body[len(RESPONSE_OPEN) : -len(RESPONSE_CLOSE)]
    return [part.strip() for part in _RESPONSE_GAP.split(inner)]


def _tagged(text: str, notes: list[str]) -> tuple[str, list[dict[str, Any]]]:
    """The text outside ``<tool_call>`` tags and the calls inside them, in order."""
    outside: list[str] = []
    calls: list[dict[str, Any]] = []
    kept = scan = 0  # kept: where the text not yet given to ``outside`` starts
    in_fence = False
    while (found := text.find(CALL_OPEN, scan)) >= 0:
        in_fence ^= _fences(text, scan, found) % 2 == 1
        scan = found + len(CALL_OPEN)
        if in_fence or text[found - 1 : found] == "`":
            continue
        outside.append(text[kept:found])
        close = text.find(CALL_CLOSE, scan)
        if close < 0:
            calls.append(_call_body(text[scan:], True, notes))
            kept = len(text)
            break
        calls.append(_call_body(text[scan:close], False, notes))
        kept = scan = close + len(CALL_CLOSE)
    outside.append(text[kept:])
    return "".join(outside).strip(), calls


def _fences(text: str, start: int, stop: int) -> int:
    """How many code fences (lines starting with ```) begin in ``text[start:stop]``."""
    count = sum(1 for _ in _FENCE.finditer(text, start, stop))
    return count + (1 if start == 0 and _LEADING_FENCE.match(text, 0, stop) else 0)


def _call_body(body: str, cut: bool, notes: list[str]) -> dict[str, Any]:
    """One tagged call from the text between its tags (``cut``: the closing tag never came)."""
    body = body.strip()
    if cut:
        notes.append(CUT)
    if body.startswith("<function="):
        return _xml_call(body, notes)
    found = _json_call(body)
    if found is not None:
        return found
    if cut:
        return _partial_call(body)
    notes.append(NOT_JSON)
    return call("", body)


def _json_call(body: str) -> dict[str, Any] | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not (isinstance(value, dict) and isinstance(value.get("name"), str)):
        return None
    return call(value["name"], arguments_text(value.get("arguments", value.get("parameters"))))


def _partial_call(body: str) -> dict[str, Any]:
    """A JSON call cut short: its name when it was written whole, the rest of the text as arguments."""
    found = _PARTIAL.match(body)
    if found is None:
        return call("", body)
    try:
        name = json.loads(f'"{found.group(1)}"')
    except ValueError:
        return call("", body)
    return call(name, found.group(2))


def _xml_call(body: str, notes: list[str]) -> dict[str, Any]:
    """Qwen3-Coder: ``<function=N>`` then ``<parameter=P>\\nV\\n</parameter>`` pairs (values raw text)."""
    head = _FUNCTION.match(body)
    if head is None:
        notes.append(ODD_XML)
        return call("", body)
    rest = body[head.end() :]
    end = rest.rfind("</function>")
    tail = rest[end + len("</function>") :] if end >= 0 else ""
    rest = rest[:end] if end >= 0 else rest
    params = list(_PARAMETER.finditer(rest))
    if (rest[: params[0].start()] if params else rest).strip() or tail.strip():
        notes.append(ODD_XML)
        return call(head.group(1).strip(), body)
    values: dict[str, Any] = {}
    for i, param in enumerate(params):
        value = rest[param.end() : params[i + 1].start() if i + 1 < len(params) else len(rest)]
        close = value.rfind("</parameter>")
        value = value[:close] if close >= 0 else value
        value = value[1:] if value.startswith("\n") else value
        values[param.group(1).strip()] = _xml_value(value[:-1] if value.endswith("\n") else value)
    return call(head.group(1).strip(), json.dumps(values, ensure_ascii=False))


def _xml_value(text: str) -> Any:
    """A parameter's value: JSON objects and lists (the template wrote them as JSON), and numbers, booleans
    and null written exactly as JSON writes them; anything else is the text."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, (dict, list)):
        return value
    if isinstance(value, str) or (isinstance(value, float) and not math.isfinite(value)):
        return text
    return value if json.dumps(value) == text.strip() else text


def _llama(text: str, closed: bool, notes: list[str]) -> tuple[str, list[dict[str, Any]]]:
    head, tag, body = text.partition(PYTHON_TAG)
    if tag:
        return head.strip(), _python_tag_calls(body.strip(), closed, notes)
    stripped = text.strip()
    calls = _json_calls(stripped)
    if calls:
        return "", calls
    if not closed and _PARTIAL.match(stripped):
        notes.append(CUT)
        return "", [_partial_call(stripped)]
    return stripped, []


def _python_tag_calls(body: str, closed: bool, notes: list[str]) -> list[dict[str, Any]]:
    """``<|python_tag|>`` then JSON calls, a built-in ``name.call(args)``, or code (a call with no name)."""
    calls = _json_calls(body)
    if calls:
        return calls
    if not body and closed:
        return []
    builtin = _BUILTIN.match(body) or (None if closed else _BUILTIN_HEAD.match(body))
    if not closed:
        notes.append(CUT)
        if builtin is None and _PARTIAL.match(body):
            return [_partial_call(body)]
    elif builtin is None:
        notes.append(NOT_JSON)
    return [call(builtin.group(1), builtin.group(2)) if builtin is not None else call("", body)]


def _json_calls(text: str) -> list[dict[str, Any]] | None:
    """Llama's JSON calls: one or more ``{"name", "parameters"}`` objects (``;`` between), or None."""
    if not text.startswith("{"):
        return None
    decoder = json.JSONDecoder()
    calls: list[dict[str, Any]] = []
    pos = 0
    while pos < len(text):
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return None
        if not (
            isinstance(value, dict)
            and isinstance(value.get("name"), str)
            and set(value) <= _LLAMA_KEYS
            and ("parameters" in value or "arguments" in value)
        ):
            return None
        calls.append(call(value["name"], arguments_text(value.get("parameters", value.get("arguments")))))
        gap = _CALL_GAP.match(text, pos)
        pos = gap.end() if gap is not None else pos
    return calls
