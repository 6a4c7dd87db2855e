"""Agent episodes in the dumps that keep turns as text or as role-less strings,
each in its trainer's own shape:

- NeMo-RL ``train_data_step{N}.jsonl``: ``content: [[str, ...]]`` without roles (the prompt's strings, then
  each generation and the environment's observation after it, the last included), token arrays with
  ``token_loss_mask`` set on the generations; ``val_data_step{N}.jsonl``: ``content: [[{role, content}]]``.
- SkyRL eval ``dumped_evals/global_step_{N}_evals/{source}.jsonl``: ``output_response`` with the chat markers
  kept, every turn and observation but the last observation, ``stop_reason`` stop/length.
- verl ``{step}.jsonl`` (agent loop): ``input`` / ``output`` decoded without special tokens and stripped, the
  tool turn appended right after ``</tool_call>`` with no newline.
- AReaL ``rollout/{version}/{task_id}.jsonl``: markers kept, the text split into prompt and completion inside
  the conversation (``MultiTurnWorkflow``: a retry after the user's feedback).

Each writer returns the ``Expected`` of every sample in reading order. A sample that is only a prompt and one
answer is a trajectory of two turns with no messages (rl-board keeps its text), so it adds no turn rows.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

from tests.helpers.agent_episodes import SYSTEM, Episode, Expected, episode, expected_of, plain_messages

IM_START, IM_END = "<|im_start|>", "<|im_end|>"


def _lines(path: Path, rows: list[dict], *, ensure_ascii: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=ensure_ascii) + "\n" for r in rows), encoding="utf-8")


# --------------------------------------------------------------------------- NeMo-RL


def _nemo_episode(rng: random.Random, k: int) -> tuple[list[str], list[str]]:
    """A code-environment episode: 1..3 generations, each followed by the environment's observation."""
    generations = rng.randint(1, 3)
    texts, roles = [], []
    for g in range(generations):
        last = g == generations - 1
        texts += [
            f"Try {g}: <code>print({k} + {g})</code>",
            "Environment: correct" if last else f"<result>\n{k + g}\n</result>",
        ]
        roles += ["assistant", "environment"]
    return texts, roles


def _ids(rng: random.Random, text: str) -> list[int]:
    return [rng.randint(100, 30000) for _ in text.split()] or [rng.randint(100, 30000)]


def write_nemo_rl(out: Path, *, steps: int = 2, samples: int = 8, seed: int = 0) -> list[Expected]:
    """``train_data_step{N}.jsonl``: one rendered user prompt, or a raw system prompt and a rendered user one;
    one sample per step masked from the loss."""
    rng = random.Random(seed)
    expected = []
    for step in range(1, steps + 1):
        lines = []
        for i in range(samples):
            system = i % 3 == 1
            user = f"{IM_START}user\nTask {step}.{i}: compute it.{IM_END}\n{IM_START}assistant\n"
            prompt = ([SYSTEM] if system else []) + [user]
            texts, roles = _nemo_episode(rng, i)
            reward, kept = float(rng.random() < 0.5), i != samples - 1
            lines.append(_nemo_line(rng, prompt, texts, reward, kept, i))
            all_roles = (["system"] if system else []) + ["user"] + roles
            more = {"kept": kept, "dropped": None if kept else "masked from the loss"}
            expected.append(Expected(step, Counter(all_roles), Counter(), 0, None, reward, **more))  # type: ignore[arg-type]
        _lines(out / "exp_001" / f"train_data_step{step}.jsonl", lines, ensure_ascii=True)
    return expected


def _nemo_line(
    rng: random.Random, prompt: list[str], texts: list[str], reward: float, kept: bool, idx: int
) -> dict:
    ids, mask = [], []
    for text in prompt:
        piece = _ids(rng, text)
        ids += piece
        mask += [0] * len(piece)
    for k, text in enumerate(texts):
        piece = _ids(rng, text)
        ids += piece
        mask += [1 if k % 2 == 0 else 0] * len(piece)
    width = -(-len(ids) // 8) * 8
    pad = width - len(ids)
    gen = [round(-rng.random(), 3) if m else 0.0 for m in mask]
    return {
        "content": [[*prompt, *texts]],
        "rewards": [reward],
        "input_lengths": [len(ids)],
        "token_ids": [ids + [0] * pad],
        "token_loss_mask": [mask + [0] * pad],
        "sample_loss_mask": [1.0 if kept else 0.0],
        "advantages": [[reward - 0.5] * width],
        "generation_logprobs": [gen + [0.0] * pad],
        "prev_logprobs": [gen + [0.0] * pad],
        "idx": idx,
    }


def write_nemo_rl_val(out: Path, *, steps: int = 2, samples: int = 6, seed: int = 0) -> list[Expected]:
    """``val_data_step{N}.jsonl``: the conversations with their roles (every sample keeps its messages)."""
    rng = random.Random(seed)
    expected = []
    for step in (0, *range(2, 2 * steps, 2)):
        lines = []
        for i in range(samples):
            texts, roles = _nemo_episode(rng, i)
            chat = [
                {"role": "user", "content": f"{IM_START}user\nValidate {i}{IM_END}\n{IM_START}assistant\n"}
            ]
            chat += [{"role": r, "content": t} for r, t in zip(roles, texts, strict=True)]
            reward = float(rng.random() < 0.5)
            lines.append({"content": [chat], "rewards": [reward], "idx": i})
            expected.append(Expected(step, Counter(m["role"] for m in chat), Counter(), 0, None, reward))
        _lines(out / "exp_001" / f"val_data_step{step}.jsonl", lines, ensure_ascii=True)
    return expected


# --------------------------------------------------------------------------- ChatML text (SkyRL, AReaL, verl)


def _call_text(turn_text: str, calls: list) -> str:
    return turn_text + "".join(
        f"\n<tool_call>\n{json.dumps({'name': c.name, 'arguments': c.arguments})}\n</tool_call>"
        for c in calls
    )


def chatml(messages: list[dict]) -> list[str]:
    """Each message as Qwen's template renders it (tool results grouped under one ``user`` block)."""
    blocks: list[str] = []
    for m in messages:
        if m["role"] == "tool":
            body = f"<tool_response>\n{m['content']}\n</tool_response>"
            if blocks and blocks[-1].startswith(f"{IM_START}user\n<tool_response>"):
                blocks[-1] = blocks[-1][: -len(IM_END) - 1] + f"\n{body}{IM_END}\n"
            else:
                blocks.append(f"{IM_START}user\n{body}{IM_END}\n")
        else:
            text = _call_text(m["content"], m["calls"]) if m["role"] == "assistant" else m["content"]
            blocks.append(f"{IM_START}{m['role']}\n{text}{IM_END}\n")
    return blocks


def _split_prompt(messages: list[dict], blocks: list[str], ep: Episode, upto: int) -> tuple[str, str]:
    """The rendered conversation cut after message ``upto``: the prompt ends with the generation prompt."""
    prompt = "".join(blocks[: _block_index(messages, upto) + 1]) + f"{IM_START}assistant\n"
    rest = "".join(blocks[_block_index(messages, upto) + 1 :])
    rest = rest.removeprefix(f"{IM_START}assistant\n")
    if ep.end == "length":  # cut short: no end marker after the last words
        rest = rest.removesuffix(f"{IM_END}\n")
    return prompt, rest


def _block_index(messages: list[dict], upto: int) -> int:
    """The block a message is rendered in (consecutive tool results share one)."""
    index = -1
    for i, m in enumerate(messages[: upto + 1]):
        if not (m["role"] == "tool" and i > 0 and messages[i - 1]["role"] == "tool"):
            index += 1
    return index


def write_skyrl_eval(out: Path, *, steps: int = 2, samples: int = 8, seed: int = 0) -> list[Expected]:
    """A turn-limited end says ``stop`` (SkyRL keeps only stop/length); the last observation is left out."""
    rng = random.Random(seed)
    expected = []
    for k in range(steps):
        step, lines = k * 5, []
        for i in range(samples):
            ep = episode(rng, step * 100 + i)
            messages = plain_messages(ep)
            prompt, response = _split_prompt(messages, chatml(messages), ep, 1)
            why = "length" if ep.end == "length" else "stop"
            lines.append(
                {
                    "input_prompt": prompt,
                    "output_response": response,
                    "score": ep.reward,
                    "stop_reason": why,
                    "env_class": "tools",
                    "data_source": "tool_math",
                    "env_extras": {"data_source": "tool_math"},
                }
            )
            expected.append(expected_of(step, messages, why, ep.reward))
        _lines(out / "dumped_evals" / f"global_step_{step}_evals" / "tool_math.jsonl", lines)
    return expected


def _stripped(text: str) -> str:
    """Decoded with ``skip_special_tokens``: the markers vanish, the role words stay."""
    return text.replace(IM_START, "").replace(IM_END, "")


def _verl_output(messages: list[dict]) -> str:
    """verl's agent loop: the model's turns and the tool turns it appends right after the model's end
    token."""
    text = ""
    for i, m in enumerate(messages[2:], start=2):
        if m["role"] == "assistant":
            if text:
                text += "\nassistant\n" if messages[i - 1]["role"] == "tool" else ""
            text += _call_text(m["content"], m["calls"])
        elif messages[i - 1]["role"] == "assistant":
            text += f"user\n<tool_response>\n{m['content']}\n</tool_response>"
        else:
            text += f"\n<tool_response>\n{m['content']}\n</tool_response>"
    return text.strip()


def write_verl_agent_loop(out: Path, *, steps: int = 2, samples: int = 8, seed: int = 0) -> list[Expected]:
    """``{step}.jsonl``: no finish reason in the dump (a turn limit shows as calls nothing answered)."""
    rng = random.Random(seed)
    expected = []
    for step in range(1, steps + 1):
        lines = []
        for i in range(samples):
            ep = episode(rng, step * 100 + i)
            messages = plain_messages(ep)
            prompt = f"system\n{SYSTEM}\nuser\n{ep.task}\nassistant\n"
            lines.append(
                {
                    "input": prompt,
                    "output": _verl_output(messages),
                    "gts": "42",
                    "score": ep.reward,
                    "step": step,
                    "request_id": f"r{step}-{i}",
                }
            )
            # no finish in the dump: only calls left unanswered say why it ended (max_assistant_turns)
            expected.append(
                expected_of(step, messages, "turn_limit" if ep.end == "max_turns" else None, ep.reward)
            )
        _lines(out / f"{step}.jsonl", lines)
    return expected


def _areal_messages(ep: Episode) -> list[dict]:
    """A retry after the user's feedback (``MultiTurnWorkflow``) in front of the episode's own turns."""
    messages = plain_messages(ep)
    retry = [
        {"role": "assistant", "content": "My first answer is 7.", "calls": []},
        {"role": "user", "content": "Your answer is wrong. Please try again."},
    ]
    return messages[:2] + retry + messages[2:]


def write_areal(out: Path, *, steps: int = 2, tasks: int = 3, size: int = 2, seed: int = 0) -> list[Expected]:
    """``rollout/{version}/{task_id}.jsonl``; the prompt ends inside the conversation (after the feedback)."""
    rng = random.Random(seed)
    expected, task_id = [], 7
    for version in range(steps):
        for _ in range(tasks):
            lines = []
            for i in range(size):
                ep = episode(rng, version * 100 + task_id * 10 + i)
                messages = _areal_messages(ep)
                prompt, completion = _split_prompt(messages, chatml(messages), ep, 3)
                lines.append(
                    {
                        "task_id": task_id,
                        "sample_idx": i,
                        "seqlen": len(prompt + completion) // 4,
                        "prompt_len": len(prompt) // 4,
                        "head_version": version,
                        "tail_version": version,
                        "reward": ep.reward,
                        "prompt": prompt,
                        "completion": completion,
                    }
                )
                expected.append(expected_of(version, messages, None, ep.reward))
            _lines(out / "rollout" / str(version) / f"{task_id}.jsonl", lines, ensure_ascii=True)
            task_id += 1
    return expected
