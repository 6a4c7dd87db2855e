"""The bulk look that spares a load from splitting single-turn samples (``chat_text.single_turn``) never
spares one that ``split_sample`` would have turned into turns: on fuzzed texts built to sit on its edges, on
rendered multi-turn trajectories, and on the single-turn shapes it is there for (which it must catch)."""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest

from rl_board.formats import trajectory
from rl_board.formats.chat_text import prompt_turns, single_turn, single_turn_messages, split_sample
from tests.helpers import chat_texts as ct

SYSTEM, QUESTION = "You are a careful math tutor.", "What is 17*23?"
# What a prompt or an answer is made of here: template pieces, role words on and off their lines, tool tags,
# pads, think blocks and prose, so a row lands on each side of every test the look makes.
PIECES = [
    "<|im_start|>system\n",
    "<|im_start|>user\n",
    "<|im_start|>assistant\n",
    "<|im_start|>tool\n",
    "<|im_start|>USER\n",
    "<|im_start|>developer\n",
    "<|im_start|>critic\n",
    "<|im_start|>",
    "<|im_end|>",
    "<|im_end|>\n",
    "<|endoftext|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "system\n",
    "user\n",
    "assistant\n",
    "tool\n",
    "\nuser\n",
    "\nassistant\n",
    "\ntool\n",
    "\nassistant",
    "assistant",
    "user",
    "</tool_call>user\n",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
    "\n",
    "\n\n",
    " ",
    "the answer is 391",
    "user-friendly",
    "assistanté",
    "17*23",
    '{"name": "python", "arguments": {}}',
]
HEADS = [
    "<|im_start|>system\n" + SYSTEM + "<|im_end|>\n<|im_start|>user\n" + QUESTION + "<|im_end|>\n",
    "<|im_start|>user\n" + QUESTION + "<|im_end|>\n",
    "system\n" + SYSTEM + "\nuser\n" + QUESTION + "\n",
    "user\n" + QUESTION + "\n",
    "system\n\n" + SYSTEM + "\n",
    "",
    "<|im_start|>system\n",
]
TAILS = [
    "<|im_start|>assistant\n",
    "<|im_start|>assistant\n<think>\n\n</think>\n\n",
    "assistant\n",
    "assistant",
    "\nassistant\n<think></think>",
    "<|im_start|>assistant",
    "",
    "<|im_end|>\n",
]
ANSWERS = [
    "17*23 = 391.",
    "391<|im_end|>",
    "391<|im_end|>\n<|endoftext|><|endoftext|>",
    "391<|endoftext|>",
    "Let me think.\n\nThe answer is 391.",
    "",
]


def _fuzzed(n: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    prompts, responses = [], []
    for _ in range(n):
        middle = "".join(rng.choice(PIECES) for _ in range(rng.choice([0, 0, 1, 2, 4])))
        prompts.append(rng.choice(HEADS) + middle + rng.choice(TAILS))
        extra = "".join(rng.choice(PIECES) for _ in range(rng.choice([0, 0, 1, 3])))
        at = rng.randint(0, 1)
        answer = rng.choice(ANSWERS)
        responses.append(answer[: len(answer) * at // 2] + extra + answer[len(answer) * at // 2 :])
    return prompts, responses


def _spared_rows_split_to_nothing(prompts: list[str], responses: list[str]) -> int:
    """Every row the look spares is its prompt's turns and at most one answer with no call, as splitting it
    would find, and its turns as counted from the columns are the turns it is shown with. Returns how many."""
    spared = single_turn(pa.array(prompts, pa.string()), pa.array(responses, pa.string())).to_pylist()
    counted = prompt_turns(pa.array(prompts, pa.string())).to_pylist()
    for prompt, response, skip, count in zip(prompts, responses, spared, counted, strict=True):
        if skip:
            split = trajectory.normalize(split_sample(prompt, response).messages)
            answers = Counter(m["role"] for m in split if m["role"] not in ("system", "user"))
            assert sum(answers.values()) <= 1 and not any(m.get("tool_calls") for m in split), (
                prompt,
                response,
            )
            shown = single_turn_messages(prompt, response, marked=True)
            assert len(shown) == count + bool(response), (prompt, response, shown, count)
            if answers and response:
                assert trajectory.normalize(shown)[-1] == split[-1], (prompt, response)
    return sum(spared)


@pytest.mark.parametrize("seed", range(4))
def test_fuzzed_texts_it_spares_would_split_to_a_prompt_and_one_answer(seed: int) -> None:
    prompts, responses = _fuzzed(5000, seed)
    spared = _spared_rows_split_to_nothing(prompts, responses)
    assert 500 < spared < 4500  # both sides of the look were reached


def test_the_single_turn_shapes_it_is_for_are_spared() -> None:
    """verl's stripped text, ChatML with and without the end marker and pads, Qwen3's empty think block."""
    chatml = HEADS[0]
    cases = [
        (chatml + TAILS[0], "17*23 = 391."),
        (chatml + TAILS[0], "391<|im_end|>"),
        (chatml + TAILS[1], "391<|im_end|>\n<|endoftext|>"),
        (HEADS[2] + "assistant\n", "17*23 = 391."),
        (HEADS[3] + "assistant\n", "Let me think.\nThe user asked for 17*23: 391."),
    ]
    assert _spared_rows_split_to_nothing(*map(list, zip(*cases, strict=True))) == len(cases)


@pytest.mark.parametrize("form", ["qwen", "coder", "stripped", "verl"])
def test_a_rendered_multi_turn_trajectory_is_never_spared(form: str) -> None:
    """Two answers, or a tool call and its result, as the templates write them: always split."""
    call = {"name": "python", "arguments": {"code": "print(17*23)"}}
    trajectories = [
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": "Let me run it.", "tool_calls": [call]},
            {"role": "tool", "content": "391"},
            {"role": "assistant", "content": "391"},
        ],
        [
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": "About 400."},
            {"role": "user", "content": "Exactly?"},
            {"role": "assistant", "content": "391"},
        ],
    ]
    render = lambda m: ct.chatml(m, coder=form == "coder", glued=form == "verl")  # noqa: E731
    prompts, responses = [], []
    for messages in trajectories:
        for at in (
            i
            for i, m in enumerate(messages)
            if m["role"] == "assistant" and messages[i - 1]["role"] == "user"
        ):
            prompt, response = ct.sample(
                messages, at, render, ct.QWEN_GENERATION, stripped=form in ("stripped", "verl")
            )
            prompts.append(prompt)
            responses.append(response)
    spared = single_turn(pa.array(prompts, pa.string()), pa.array(responses, pa.string())).to_pylist()
    assert len(spared) >= 3 and not any(spared)


@pytest.mark.parametrize("marker", ["<|im_start|>", "<tool_call>", "<|start_header_id|>"])
def test_one_search_of_a_column_answers_as_row_by_row_matching(marker: str) -> None:
    """``_holds`` searches a column's bytes once and matches row by row only when the marker is somewhere:
    the same answer as ``pc.match_substring`` for columns with and without it, sliced, chunked, empty."""
    import pyarrow.compute as pc

    from rl_board.formats.chat_text import _anywhere, _holds

    rng = random.Random(7)
    texts = ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 6))) for _ in range(300)]
    plain = [t.replace("<", "(") for t in texts]
    cases = [
        pa.array(texts),
        pa.array(plain),
        pa.array(texts, pa.large_string()),
        pa.array(texts)[37:120],  # the buffer holds text outside the slice: a search may only say "maybe"
        pa.array(plain + [marker])[:-1],  # the marker only past the slice's end
        pa.chunked_array([pa.array(plain[:100]), pa.array(texts[100:])]),
        pa.chunked_array([pa.array(plain[:100]), pa.array(plain[100:])]),
        pa.array(["", ""]),
        pa.array([], pa.string()),
    ]
    for column in cases:
        got = _holds(column, marker)
        want = pc.match_substring(column, marker)
        assert got.type == want.type and got.to_pylist() == want.to_pylist()
        assert isinstance(got, pa.ChunkedArray) == isinstance(want, pa.ChunkedArray)
    # a slice is searched in its own texts only: one file's rows of a batch parsed together do not search
    # the whole batch's bytes once per file (an AReaL run of 2,496 files: 4.6 -> 8.2 s when they did)
    assert not _anywhere(pa.array(plain + [marker])[:-1], marker)
    assert not _anywhere(pa.array([marker] + plain)[1:], marker)
    assert _anywhere(pa.array(plain + [marker])[-1:], marker)
