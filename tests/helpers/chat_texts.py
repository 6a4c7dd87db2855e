"""Chat trajectories rendered as chat templates write them, for the turn splitter's tests.

A trajectory is a message list, the truth: ``{"role", "content"}`` and, on assistant turns, ``tool_calls``
of ``{"name", "arguments"}`` (``arguments`` an object, or for a Llama built-in the raw text inside
``name.call(...)`` with ``"builtin": True``). Each renderer writes the whole list the way one template does
(the templates' Jinja re-done in Python, from Qwen2.5's and Qwen3-Coder's ``tokenizer_config.json`` and
Llama 3.1's); ``sample`` cuts the text where a trainer puts the prompt/response boundary, at a generation
prompt. ``expected`` is what a correct split gives back.

Forms: ``qwen`` (ChatML with Hermes-style JSON calls), ``coder`` (Qwen3-Coder XML calls), ``llama``
(Llama 3.1 headers, ``ipython`` results, JSON or ``<|python_tag|>`` built-in calls). ``strip`` removes the
special tokens as ``skip_special_tokens`` does (TRL's completions, verl's dump); ``glued=True`` renders a
tool turn right after the model's ``<|im_end|>`` with no newline, as verl's agent loop appends it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Message = dict[str, Any]

QWEN_GENERATION = "<|im_start|>assistant\n"
LLAMA_GENERATION = "<|start_header_id|>assistant<|end_header_id|>\n\n"
SPECIAL = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")


def tojson(value: Any) -> str:
    """Jinja's ``tojson`` as transformers sets it up."""
    return json.dumps(value, ensure_ascii=False)


def qwen_system(content: str, tools: list[dict[str, Any]]) -> str:
    """A Qwen2.5/Qwen3 system turn's text with tools: its content, ``# Tools`` and the example call."""
    listed = "".join("\n" + tojson(tool) for tool in tools)
    return (
        f"{content}\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        f"You are provided with function signatures within <tools></tools> XML tags:\n<tools>{listed}\n"
        "</tools>\n\nFor each function call, return a json object with function name and arguments within "
        '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
        "<args-json-object>}\n</tool_call>"
    )


def coder_system(content: str, names: list[str]) -> str:
    """A Qwen3-Coder system turn's text with tools, its example call included."""
    listed = "".join(
        f"<function>\n<name>{n}</name>\n<description>does {n}</description>\n<parameters>\n"
        "</parameters>\n</function>\n"
        for n in names
    )
    return (
        f"{content}\n\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n{listed}</tools>"
        "\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
        "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
        "</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\n"
        "that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\n"
        "Reminder:\n- Function calls MUST follow the specified format\n</IMPORTANT>"
    )


def _qwen_call(call: Message) -> str:
    return (
        f'\n<tool_call>\n{{"name": "{call["name"]}", "arguments": {tojson(call["arguments"])}}}\n</tool_call>'
    )


def _coder_value(value: Any) -> str:
    return tojson(value) if isinstance(value, (dict, list)) else str(value)


def _coder_call(call: Message) -> str:
    params = "".join(
        f"<parameter={k}>\n{_coder_value(v)}\n</parameter>\n" for k, v in call["arguments"].items()
    )
    return f"\n<tool_call>\n<function={call['name']}>\n{params}</function>\n</tool_call>"


def _chatml_assistant(message: Message, coder: bool) -> str:
    calls = message.get("tool_calls") or []
    content = message["content"]
    if coder and calls:
        text = "<|im_start|>assistant" + (f"\n{content.strip()}\n" if content.strip() else "")
        return text + "".join(_coder_call(c) for c in calls) + "<|im_end|>"
    if coder:
        return f"<|im_start|>assistant\n{content}<|im_end|>"
    return (
        "<|im_start|>assistant"
        + (f"\n{content}" if content else "")
        + "".join(_qwen_call(c) for c in calls)
        + "<|im_end|>"
    )


def chatml(messages: list[Message], *, coder: bool = False, glued: bool = False) -> str:
    """Qwen2.5 (``coder=False``) or Qwen3-Coder ChatML: tool results under ``user``, one block for a run."""
    out: list[str] = []
    for i, message in enumerate(messages):
        before = messages[i - 1]["role"] if i else None
        after = messages[i + 1]["role"] if i + 1 < len(messages) else None
        role = message["role"]
        if role == "assistant":
            out.append(_chatml_assistant(message, coder) + ("" if glued and after == "tool" else "\n"))
        elif role == "tool":
            opener = "" if before == "tool" else "<|im_start|>user" + ("\n" if coder else "")
            body = (
                f"<tool_response>\n{message['content']}\n</tool_response>\n"
                if coder
                else f"\n<tool_response>\n{message['content']}\n</tool_response>"
            )
            out.append(opener + body + ("" if after == "tool" else "<|im_end|>\n"))
        else:
            out.append(f"<|im_start|>{role}\n{message['content']}<|im_end|>\n")
    return "".join(out)


def _llama_call(call: Message) -> str:
    if call.get("builtin"):
        return f"<|python_tag|>{call['name']}.call({call['arguments']})<|eom_id|>"
    return f'{{"name": "{call["name"]}", "parameters": {tojson(call["arguments"])}}}<|eot_id|>'


def llama(messages: list[Message]) -> str:
    """Llama 3.1: a header per message, ``ipython`` for tool results, one call per assistant turn."""
    out = ["<|begin_of_text|>"]
    for message in messages:
        role = "ipython" if message["role"] == "tool" else message["role"]
        out.append(f"<|start_header_id|>{role}<|end_header_id|>\n\n")
        calls = message.get("tool_calls") or []
        out.append(_llama_call(calls[0]) if calls else message["content"].strip() + "<|eot_id|>")
    return "".join(out)


def strip(text: str) -> str:
    """The text as ``batch_decode(..., skip_special_tokens=True)`` gives it for a Qwen tokenizer."""
    for token in SPECIAL:
        text = text.replace(token, "")
    return text


def sample(
    messages: list[Message],
    at: int,
    render: Callable[[list[Message]], str],
    generation: str,
    *,
    stripped: bool = False,
) -> tuple[str, str]:
    """(prompt, response): the messages before ``at`` plus the generation prompt, then the rest as the
    model and the agent loop wrote it (the model's last ``<|im_end|>`` without the template's newline)."""
    prompt = render(messages[:at]) + generation
    full = render(messages)
    assert full.startswith(prompt), (prompt, full)
    response = full[len(prompt) :].removesuffix("\n")
    return (strip(prompt), strip(response)) if stripped else (prompt, response)


def expected(messages: list[Message]) -> list[Message]:
    """What ``split_sample`` must give back for a rendered trajectory."""
    out = []
    for message in messages:
        item: Message = {"role": message["role"], "content": message["content"].strip()}
        if message.get("tool_calls"):
            item["tool_calls"] = [
                {
                    "id": None,
                    "name": c["name"],
                    "arguments": c["arguments"] if c.get("builtin") else tojson(c["arguments"]),
                }
                for c in message["tool_calls"]
            ]
        out.append(item)
    return out
