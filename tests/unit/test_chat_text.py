"""Decoded multi-turn text split into turns: trajectories built as messages, rendered as each chat
template writes them (tests/helpers/chat_texts.py), and split back."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rl_board.formats import chat_calls
from rl_board.formats.chat_text import (
    CHATML,
    LLAMA3,
    NO_GENERATION_PROMPT,
    NO_TEXT,
    ONLY_IN_RESPONSE,
    PLAIN,
    ROLE_LINES,
    STRIPPED_LLAMA,
    Split,
    split_sample,
)
from tests.helpers import chat_texts as ct

ROLE_WORDS = ("system", "user", "assistant", "tool")
TRICKY = [
    "user",
    "assistant",
    "tool",
    "system",
    "ipython",
    "{",
    "}",
    '{"a": 1}',
    "[1, 2]",
    "é",
    "漢字",
    "🙂",
    "<think>",
    "</think>",
    "x = {'k': [1]}",
    "#",
    "\\n",
    "role:",
    "the user",
    "assistant:",
]
CODE = '```python\n<tool_call>\n{"name": "fake", "arguments": {}}\n</tool_call>\n```'
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- strategies -------------------------------------------------------------------------------------------

words = st.one_of(
    st.sampled_from(TRICKY),
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="`<>|"), min_size=1, max_size=8),
)


@st.composite
def texts(draw: st.DrawFn, *, code: bool = False, empty: bool = False) -> str:
    """Words with spaces and newlines between; a fenced block holding a ``<tool_call>`` when ``code``."""
    parts = draw(
        st.lists(
            st.tuples(words, st.sampled_from([" ", "\n", "\n\n"])), min_size=0 if empty else 1, max_size=10
        )
    )
    text = "".join(w + sep for w, sep in parts)
    if code and draw(st.booleans()):
        text = f"{text}\n{CODE}\n{draw(words)}"
    return text.strip() if text.strip() or empty else "ok"


def values(coder: bool) -> st.SearchStrategy[Any]:
    # A Qwen3-Coder value is written raw: a string that reads as JSON would come back as JSON, so strings
    # there start with a letter JSON cannot start with.
    strings = texts().map(lambda t: "v " + t) if coder else texts()
    return st.one_of(
        strings,
        st.integers(-(10**6), 10**6),
        st.lists(st.integers(0, 9), max_size=3),
        st.dictionaries(st.sampled_from(["k", "user"]), st.integers(0, 9), max_size=2),
    )


def calls(form: str) -> st.SearchStrategy[dict[str, Any]]:
    names = st.sampled_from(["search", "python", "read_file", "get_weather", "user", "assistant"])
    args = st.dictionaries(
        st.sampled_from(["query", "code", "path", "n", "opts"]), values(form == "coder"), max_size=3
    )
    plain = st.builds(lambda n, a: {"name": n, "arguments": a}, names, args)
    if form != "llama":
        return plain
    builtin = st.builds(
        lambda n, q: {"name": n, "arguments": f'query="{q}"', "builtin": True},
        st.sampled_from(["brave_search", "wolfram_alpha"]),
        texts(),
    )
    return st.one_of(plain, builtin)


@st.composite
def trajectories(draw: st.DrawFn, *, form: str, users: bool = True) -> tuple[list[dict[str, Any]], int]:
    """(messages, where the prompt ends): system?, user, then assistant turns with calls and results, or
    a user turn after an assistant turn without calls (``users``); the last turn an assistant's or results."""
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        content = draw(texts(code=True))
        if form == "qwen":
            content = ct.qwen_system(content, [{"type": "function", "function": {"name": "search"}}])
        elif form == "coder":
            content = ct.coder_system(content, ["search", "python"])
        messages.append({"role": "system", "content": content})
    messages.append({"role": "user", "content": draw(texts(code=True))})
    for _ in range(draw(st.integers(1, 6))):
        made = draw(st.lists(calls(form), max_size=1 if form == "llama" else 3))
        content = "" if form == "llama" and made else draw(texts(code=True, empty=bool(made)))
        messages.append({"role": "assistant", "content": content, **({"tool_calls": made} if made else {})})
        if made and draw(st.booleans()):
            messages.extend({"role": "tool", "content": draw(texts(empty=True))} for _ in made)
        elif not made:
            if not users:
                break
            messages.append({"role": "user", "content": draw(texts(code=True))})
    if messages[-1]["role"] == "user":
        messages.pop()
    starts = [
        i for i, m in enumerate(messages) if m["role"] == "assistant" and messages[i - 1]["role"] == "user"
    ]
    return messages, draw(st.sampled_from(starts))


def unrole(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stripped text cannot tell a content line ``user`` from a turn: such lines get a prefix (results
    keep theirs: a closed <tool_response> protects them)."""

    def fix(text: str) -> str:
        return "\n".join("> " + line if line in ROLE_WORDS else line for line in text.split("\n"))

    return [m if m["role"] == "tool" else {**m, "content": fix(m["content"])} for m in messages]


# --- the round trips ---------------------------------------------------------------------------------------


def check(split: Split, how: str, messages: list[dict[str, Any]]) -> None:
    want = ct.expected(messages)
    assert split.how == how, split.note
    assert Counter(m["role"] for m in split.messages) == Counter(m["role"] for m in want)
    assert [c for m in split.messages for c in m.get("tool_calls", [])] == [
        c for m in want for c in m.get("tool_calls", [])
    ]
    assert [m["content"] for m in split.messages if m["role"] == "tool"] == [
        m["content"] for m in want if m["role"] == "tool"
    ]
    assert split.messages == want
    assert split.note == ""


@SETTINGS
@given(trajectories(form="qwen"))
def test_qwen_chatml_splits_back(case: tuple[list[dict[str, Any]], int]) -> None:
    messages, at = case
    check(split_sample(*ct.sample(messages, at, ct.chatml, ct.QWEN_GENERATION)), CHATML, messages)


@SETTINGS
@given(trajectories(form="coder"))
def test_qwen3_coder_chatml_splits_back(case: tuple[list[dict[str, Any]], int]) -> None:
    messages, at = case
    render = lambda m: ct.chatml(m, coder=True)  # noqa: E731
    check(split_sample(*ct.sample(messages, at, render, ct.QWEN_GENERATION)), CHATML, messages)


@SETTINGS
@given(trajectories(form="llama"))
def test_llama3_splits_back(case: tuple[list[dict[str, Any]], int]) -> None:
    messages, at = case
    check(split_sample(*ct.sample(messages, at, ct.llama, ct.LLAMA_GENERATION)), LLAMA3, messages)


@SETTINGS
@given(st.sampled_from(["qwen", "coder"]).flatmap(lambda f: st.tuples(st.just(f), trajectories(form=f))))
def test_stripped_role_lines_split_back(case: tuple[str, tuple[list[dict[str, Any]], int]]) -> None:
    """TRL's completions: ChatML decoded with skip_special_tokens (a newline after each <|im_end|>)."""
    form, (messages, at) = case
    messages = unrole(messages)
    render = lambda m: ct.chatml(m, coder=form == "coder")  # noqa: E731
    check(
        split_sample(*ct.sample(messages, at, render, ct.QWEN_GENERATION, stripped=True)),
        ROLE_LINES,
        messages,
    )


@SETTINGS
@given(
    st.sampled_from(["qwen", "coder"]).flatmap(
        lambda f: st.tuples(st.just(f), trajectories(form=f, users=False))
    )
)
def test_verl_role_lines_split_back(case: tuple[str, tuple[list[dict[str, Any]], int]]) -> None:
    """verl's dump: the tool turn follows the model's <|im_end|> at once, so ``user`` runs into
    ``</tool_call>``."""
    form, (messages, at) = case
    messages = unrole(messages)
    render = lambda m: ct.chatml(m, coder=form == "coder", glued=True)  # noqa: E731
    prompt, response = ct.sample(messages, at, render, ct.QWEN_GENERATION, stripped=True)
    check(split_sample(prompt, response), ROLE_LINES, messages)


# --- never split, never crash, never drop -------------------------------------------------------------------


@SETTINGS
@given(
    texts(code=True),
    st.lists(st.sampled_from([*ROLE_WORDS, "hello there", "{}", "<tool_call>"]), max_size=12),
)
def test_plain_text_is_not_split(question: str, lines: list[str]) -> None:
    response = "\n".join(lines)
    split = split_sample("Question: " + question, response)
    assert split == Split([], "", PLAIN)


FRAGMENTS = [
    "<|im_start|>user\n",
    "<|im_start|>assistant\n",
    "<|im_start|>system\n",
    "<|im_start|>tool\n",
    "<|im_start|>critic\n",
    "<|im_end|>",
    "<|im_end|>\n",
    "<|endoftext|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "```",
    "\n",
    " ",
    "user\n",
    "assistant\n",
    "<think>",
]
MARKERS = (
    "<|im_end|>",
    "<|endoftext|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
)


def bare(text: str) -> str:
    """ChatML text without its markers (role headers, end and pad tokens, call and result tags)."""
    import re

    text = re.sub(r"<\|im_start\|>([A-Za-z_][\w.-]{0,31})(?:\n|\Z)", "", text)
    for marker in MARKERS:
        text = text.replace(marker, "")
    return text


def kept(split: Split) -> str:
    return "".join(
        m["content"] + "".join(c["name"] + c["arguments"] for c in m.get("tool_calls", []))
        for m in split.messages
    )


@SETTINGS
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), words), max_size=40), st.integers(0, 40))
def test_chatml_keeps_every_character(parts: list[str], at: int) -> None:
    """Any ChatML-looking text: every non-space character outside the markers is in some message."""
    text = "<|im_start|>user\n" + "".join(parts)
    at = min(at + 17, len(text))
    split = split_sample(text[:at], text[at:])
    if split.how:
        lost = Counter(c for c in bare(text) if not c.isspace()) - Counter(
            c for c in kept(split) if not c.isspace()
        )
        assert not lost, (split, lost)


PIECES = [
    "a",
    "\n",
    "user",
    "assistant",
    "ipython",
    "<|im_start|>",
    "<|im_end|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
    "<tool_call>",
    "</tool_call>",
    "<function=",
    "<parameter=",
    "{",
    '"name": ',
    "}",
    ".call(",
]
pieces = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@SETTINGS
@given(st.one_of(st.none(), st.text(), pieces), st.one_of(st.none(), st.text(), pieces))
def test_any_text_gives_a_well_formed_split(prompt: str | None, response: str | None) -> None:
    split = split_sample(prompt, response)
    json.dumps(split.messages)
    assert (split.how == "") == (split.messages == [])
    assert split.how in ("", CHATML, LLAMA3, ROLE_LINES)
    for message in split.messages:
        assert message["role"] in ("system", "user", "assistant", "tool", "environment")
        assert isinstance(message["content"], str)
        for call in message.get("tool_calls", []):
            assert set(call) == {"id", "name", "arguments"} and call["id"] is None


# --- hand cases ---------------------------------------------------------------------------------------------

VERL_LINE = (
    r'{"input": "system\nYou are... # Tools ...</tool_call>\nuser\nWhat is 17*23?\nassistant\n", '
    r'"output": "Let me run it.\n<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": '
    r'\"print(17*23)\"}}\n</tool_call>\nuser\n<tool_response>\n391\n</tool_response>\nassistant\n#### 391", '
    r'"gts": "391", "score": 1.0, "step": 3}'
)


def test_the_verl_example_line() -> None:
    record = json.loads(VERL_LINE)
    split = split_sample(record["input"], record["output"])
    assert split == Split(
        [
            {"role": "system", "content": "You are... # Tools ...</tool_call>"},
            {"role": "user", "content": "What is 17*23?"},
            {
                "role": "assistant",
                "content": "Let me run it.",
                "tool_calls": [{"id": None, "name": "python", "arguments": '{"code": "print(17*23)"}'}],
            },
            {"role": "tool", "content": "391"},
            {"role": "assistant", "content": "#### 391"},
        ],
        ROLE_LINES,
    )


def test_verl_glued_tool_turn() -> None:
    record = json.loads(VERL_LINE)
    glued = split_sample(record["input"], record["output"].replace("</tool_call>\nuser", "</tool_call>user"))
    assert glued == split_sample(record["input"], record["output"])


def test_single_turn_verl_sample_is_one_assistant_turn() -> None:
    split = split_sample("system\nBe brief.\nuser\nWhat is 2+2?\nassistant\n", "4")
    assert split == Split(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4"},
        ],
        ROLE_LINES,
    )
    single = split_sample("user\nWhat is 2+2?\nassistant\n", "It is 4.\nThe user asked a sum.")
    assert single == Split(
        [
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "It is 4.\nThe user asked a sum."},
        ],
        ROLE_LINES,
    )


def test_prose_with_a_user_line_and_a_plain_prompt_is_not_split() -> None:
    response = "The log shows who spoke:\nuser\nhi\nassistant\nhello\nThat is all."
    assert split_sample("Summarise this chat log.", response) == Split([], "", PLAIN)
    assert split_sample(None, response) == Split([], "", PLAIN)


def test_markers_only_in_the_response_are_the_model_s_writing() -> None:
    rambling = "4<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n6"
    assert split_sample("What is 2+2?", rambling) == Split([], "", ONLY_IN_RESPONSE)
    header = "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
    assert split_sample("Explain Llama's chat format.", header) == Split([], "", ONLY_IN_RESPONSE)
    assert split_sample(None, rambling).how == CHATML  # a response-only sample: the markers are all there is


def test_not_split_cases_say_why() -> None:
    assert split_sample(None, None) == Split([], "", NO_TEXT)
    assert split_sample("", "  \n") == Split([], "", NO_TEXT)
    assert split_sample("user\nWhat is 2+2?", "4").note == NO_GENERATION_PROMPT
    llama = "system\n\nCutting Knowledge Date: December 2023user\n\nWhat is 2+2?assistant\n\n"
    assert split_sample(llama, "4") == Split([], "", STRIPPED_LLAMA)


def test_truncated_last_call() -> None:
    prompt = "<|im_start|>user\nFind it<|im_end|>\n<|im_start|>assistant\n"
    split = split_sample(prompt, 'Searching.\n<tool_call>\n{"name": "search", "arguments": {"query": "abc')
    assert split.messages[-1] == {
        "role": "assistant",
        "content": "Searching.",
        "tool_calls": [{"id": None, "name": "search", "arguments": '{"query": "abc'}],
    }
    assert split.note == chat_calls.CUT
    stripped = split_sample("user\nFind it\nassistant\n", '<tool_call>\n{"na')
    assert stripped.messages[-1]["tool_calls"] == [{"id": None, "name": "", "arguments": '{"na'}]
    assert "cut" in stripped.note


def test_truncated_qwen3_coder_call_keeps_what_was_written() -> None:
    split = split_sample(
        "user\nedit\nassistant\n",
        "<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter>\n"
        "<parameter=content>\nprint(1)\nprint(",
    )
    assert split.messages[-1]["tool_calls"] == [
        {"id": None, "name": "write_file", "arguments": '{"path": "a.py", "content": "print(1)\\nprint("}'}
    ]
    assert split.note == chat_calls.CUT


def test_truncated_llama_call() -> None:
    prompt = ct.llama([{"role": "user", "content": "weather?"}]) + ct.LLAMA_GENERATION
    split = split_sample(prompt, '{"name": "get_weather", "parameters": {"city": "Par')
    assert split.messages[-1]["tool_calls"] == [
        {"id": None, "name": "get_weather", "arguments": '{"city": "Par'}
    ]
    assert split.note == chat_calls.CUT
    tagged = split_sample(prompt, '<|python_tag|>brave_search.call(query="we')
    assert tagged.messages[-1]["tool_calls"] == [
        {"id": None, "name": "brave_search", "arguments": 'query="we'}
    ]


def test_a_call_that_is_not_json_keeps_its_text() -> None:
    split = split_sample("user\nq\nassistant\n", "Trying.\n<tool_call>\nsearch(query='x')\n</tool_call>")
    assert split.messages[-1]["tool_calls"] == [{"id": None, "name": "", "arguments": "search(query='x')"}]
    assert split.note == chat_calls.NOT_JSON


def test_the_tools_example_call_is_not_a_call() -> None:
    system = ct.qwen_system("You help.", [{"type": "function", "function": {"name": "search"}}])
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    for stripped in (False, True):
        split = split_sample(*ct.sample(messages, 2, ct.chatml, ct.QWEN_GENERATION, stripped=stripped))
        assert split.messages == ct.expected(messages)
        assert not any("tool_calls" in m for m in split.messages)


def test_a_call_in_a_code_block_is_text() -> None:
    content = f"Here is the format:\n{CODE}\nand inline `<tool_call>` too."
    split = split_sample("user\nShow me\nassistant\n", content)
    assert split.messages[-1] == {"role": "assistant", "content": content}


def test_tool_results_in_order_and_their_role_words_stay_content() -> None:
    response = (
        '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": '
        "{}}\n</tool_call>\nuser\n<tool_response>\nfirst\nuser\nassistant\n</tool_response>\n<tool_response>\n"
        "second\n</tool_response>\nassistant\ndone"
    )
    split = split_sample("user\ngo\nassistant\n", response)
    assert [(m["role"], m["content"]) for m in split.messages[2:]] == [
        ("tool", "first\nuser\nassistant"),
        ("tool", "second"),
        ("assistant", "done"),
    ]


def test_a_hallucinated_tool_response_does_not_swallow_the_turns() -> None:
    response = (
        '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n<tool_response>\nmade up\nuser\n'
        "<tool_response>\nreal\n</tool_response>\nassistant\ndone"
    )
    split = split_sample("user\ngo\nassistant\n", response)
    assert [m["role"] for m in split.messages] == ["user", "assistant", "tool", "assistant"]
    assert split.messages[1]["content"] == "<tool_response>\nmade up"


def test_qwen3_empty_thinking_generation_prompt_stays_with_the_answer() -> None:
    split = split_sample("user\nhi\nassistant\n<think>\n\n</think>\n\n", "Hello!")
    assert split.messages == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "<think>\n\n</think>\n\nHello!"},
    ]
    marked = split_sample(
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", "Hello!"
    )
    assert marked.messages == split.messages


def test_skyrl_markers_with_padding() -> None:
    messages = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
    prompt, response = ct.sample(messages, 1, ct.chatml, ct.QWEN_GENERATION)
    split = split_sample("<|endoftext|>" + prompt, response + "<|endoftext|><|endoftext|>")
    assert split == Split(ct.expected(messages), CHATML)


def test_areal_split_inside_the_conversation() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "try again"},
        {"role": "assistant", "content": "a2"},
    ]
    text = ct.chatml(messages)
    for at in (5, len(text) // 2, len(text) - 3):
        assert split_sample(text[:at], text[at:]).messages == ct.expected(messages)


def test_text_outside_the_markers_is_kept_with_a_note() -> None:
    split = split_sample("Answer briefly.\n<|im_start|>user\nq<|im_end|>\n", "free text after")
    assert split.messages == [
        {"role": "user", "content": "Answer briefly."},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "free text after"},
    ]
    assert "outside the chat markers" in split.note


def test_roles_named() -> None:
    text = (
        "<|im_start|>developer\nrules<|im_end|>\n<|im_start|>observation\nseen<|im_end|>\n"
        "<|im_start|>critic\nhm<|im_end|>\n<|im_start|>tool\n<tool_response>\nr\n</tool_response><|im_end|>\n"
    )
    split = split_sample(text, None)
    assert [m["role"] for m in split.messages] == ["system", "environment", "user", "tool"]
    assert split.note == "role 'critic' is shown as user"


def test_a_result_that_contains_a_closing_tag() -> None:
    messages = [
        {"role": "user", "content": "cat it"},
        {"role": "assistant", "content": "", "tool_calls": [{"name": "cat", "arguments": {"p": "x"}}]},
        {"role": "tool", "content": "a </tool_response> b"},
        {"role": "assistant", "content": "ok"},
    ]
    split = split_sample(*ct.sample(messages, 1, ct.chatml, ct.QWEN_GENERATION))
    assert split.messages == ct.expected(messages)


def test_llama_builtin_and_multiple_json_calls() -> None:
    prompt = ct.llama([{"role": "user", "content": "go"}]) + ct.LLAMA_GENERATION
    response = (
        '{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {}}<|eot_id|>'
        "<|start_header_id|>ipython<|end_header_id|>\n\n1<|eot_id|>"
        "<|start_header_id|>ipython<|end_header_id|>\n\n2<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n<|python_tag|>print(3)<|eom_id|>"
    )
    split = split_sample(prompt, response)
    assert split.messages[1]["tool_calls"] == [
        {"id": None, "name": "a", "arguments": '{"x": 1}'},
        {"id": None, "name": "b", "arguments": "{}"},
    ]
    assert [m["content"] for m in split.messages if m["role"] == "tool"] == ["1", "2"]
    assert split.messages[-1]["tool_calls"] == [{"id": None, "name": "", "arguments": "print(3)"}]


def test_an_empty_generation_prompt_at_the_end_is_dropped() -> None:
    split = split_sample(
        "user\nq\nassistant\n",
        '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n'
        "user\n<tool_response>\nr\n</tool_response>\nassistant\n",
    )
    assert [m["role"] for m in split.messages] == ["user", "assistant", "tool"]


# --- speed ------------------------------------------------------------------------------------------------


def long_trajectory() -> list[dict[str, Any]]:
    """40 turns, over 100 KB: a system prompt with tools, assistant calls, long results, a follow-up."""
    filler = "The user asked for the assistant's tool output; {braces} and 漢字 included.\n" * 55
    messages = [
        {
            "role": "system",
            "content": ct.qwen_system("You help.", [{"type": "function", "function": {"name": "run"}}]),
        },
        {"role": "user", "content": "Start."},
    ]
    for i in range(18):
        messages.append(
            {
                "role": "assistant",
                "content": f"Step {i}.\n" + filler[:1600],
                "tool_calls": [{"name": "run", "arguments": {"code": f"print({i})", "i": i}}],
            }
        )
        messages.append({"role": "tool", "content": filler + str(i)})
    messages += [
        {"role": "user", "content": "Thanks. Now sum up."},
        {"role": "assistant", "content": "Done."},
    ]
    return messages


@pytest.mark.parametrize("stripped", [False, True], ids=["chatml", "role lines"])
def test_a_100kb_trajectory_of_40_turns_splits_in_under_10ms(stripped: bool) -> None:
    messages = long_trajectory()
    prompt, response = ct.sample(messages, 2, ct.chatml, ct.QWEN_GENERATION, stripped=stripped)
    assert len(prompt) + len(response) >= 100_000 and len(messages) == 40
    split = split_sample(prompt, response)
    assert split.messages == ct.expected(messages)
    best = min(_timed(prompt, response) for _ in range(7))
    assert best < 0.010, f"{best * 1000:.2f} ms"


def _timed(prompt: str, response: str) -> float:
    start = time.perf_counter()
    split_sample(prompt, response)
    return time.perf_counter() - start
