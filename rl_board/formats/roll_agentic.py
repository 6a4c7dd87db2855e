"""ROLL's agentic pipeline dumps, read as trajectories.

``{rollout_dump_dir}/rollout_dump_data.step_{N}.jsonl`` holds one JSON object
of column lists (as ROLL's RLVR dumps do): ``trajectory_data``, ``messages``,
``tools``, ``exp_name``, ``global_step``, the first three JSON text per row.
Two env managers fill them:

- ``ProxyEnvManager``: ``messages`` is the branch's OpenAI messages (content
  as ``[{"type": "text", "text"}]``, calls ``[{id, index, type, function}]``,
  results with ``tool_call_id``); ``trajectory_data`` holds ``trajectory_id``
  (``{tag}_{group}_{episode}_{seed}_{env}_{timestamp}``, ``_b{k}`` per branch),
  ``reward_info{episode_reward, step_reward}`` and ``finish_reason``.
- ``AgentNativeStepEnvManager``: ``messages`` is ``[[...]]``, the last prompt
  and the reply as decoded text (its calls only in that text, split out here
  as the chat template wrote them); ``trajectory_data`` holds ``env_info``,
  ``reward_info{episode_reward, step_rewards}`` (one per step, put on the
  assistant turns from the last one back) and ``failure_info.stop_reason``
  (``FINISH``, ``MAX_LENGTH``, ``MAX_STEPS``...). Its step-wise rows without
  trajectory data hold nothing to show and are skipped.

The samples of one group (one task, several environments) share a group id:
the native manager's ``env_info`` names it, the proxy's is the trajectory id
without its environment, timestamp and branch.
"""

from __future__ import annotations

import re
from typing import Any

from rl_board.formats import chat_calls, pick
from rl_board.formats.base import Format, Record

_PROXY_ID = re.compile(r"^(?P<group>.+)_[^_]+_\d{8}_\d{6}_\d{6}(?:_b\d+)?$")
_COLUMNS = ("trajectory_data", "messages", "exp_name", "global_step")


def _identify(record: Record) -> bool:
    return (
        isinstance(record, dict)
        and isinstance(record.get("trajectory_data"), list)
        and isinstance(record.get("messages"), list)
    )


def _samples(record: Record) -> list[Record]:
    """One sample per row with trajectory data or messages; a column of another length is ignored."""
    if not _identify(record):
        return []
    n = len(record["trajectory_data"])
    cols = {k: record[k] for k in _COLUMNS if isinstance(record.get(k), list) and len(record[k]) == n}
    if "global_step" not in cols and pick.whole(record.get("global_step")) is not None:
        cols["global_step"] = [record["global_step"]] * n  # one step for the whole file
    out = []
    for i in range(n):
        row = {k: v[i] for k, v in cols.items()}
        data = pick.loaded(row["trajectory_data"])
        data = data if isinstance(data, dict) else {}
        chat = _conversation(pick.loaded(row.get("messages")), data)
        if not data and not chat:
            continue
        sample: Record = {}
        pick.put(sample, "step", pick.whole(row.get("global_step")))
        _texts(sample, chat, data)
        _describe(sample, data)
        pick.put(sample, "exp_name", pick.scalar(row.get("exp_name")))
        out.append(sample)
    return out


def _conversation(messages: Any, data: dict) -> list[dict]:
    """A row's messages: the ``messages`` column (a conversation, or ``[[...]]`` of them: the last one), else
    the copy the proxy keeps in its trajectory data."""
    if isinstance(messages, list) and messages and all(isinstance(m, list) for m in messages):
        messages = messages[-1]
    if not pick.dicts(messages):
        messages = data.get("messages")
    return [_calls_from_text(dict(m)) for m in pick.dicts(messages)]


def _calls_from_text(message: dict) -> dict:
    """An assistant reply decoded as text with its calls still in it (the native manager's): calls split
    out."""
    text = pick.text(message.get("content"))
    if (
        message.get("role") != "assistant"
        or message.get("tool_calls")
        or not text
        or chat_calls.CALL_OPEN not in text
    ):
        return message
    split, _ = chat_calls.assistant(text)
    return {**message, **split}


def _texts(sample: Record, chat: list[dict], data: dict) -> None:
    """Prompt, response and the turns (per-step rewards on the assistant turns)."""
    if not chat:
        return
    info = data.get("reward_info")
    rewards = info.get("step_rewards") if isinstance(info, dict) else None
    if isinstance(rewards, list):
        pick.end_aligned(chat, [pick.finite(r) for r in rewards])
    sample["prompt"] = pick.chat_prompt(chat) or ""
    sample["response"] = pick.answers(chat)
    sample["messages"] = chat


def _dict(value: Any) -> dict:
    """The value when it is a dict, else {}."""
    return value if isinstance(value, dict) else {}


def _describe(sample: Record, data: dict) -> None:
    """Reward, why it ended, its id and group, and the counts the trajectory data keeps."""
    info = _dict(data.get("reward_info"))
    failure = _dict(data.get("failure_info"))
    pick.put(sample, "reward", pick.finite(info.get("episode_reward")))
    step_reward = pick.finite(info.get("step_reward"))
    if step_reward is not None and step_reward != sample.get("reward"):
        sample["step_reward"] = step_reward  # the proxy's step mode: the reward of this step's row
    pick.put(
        sample,
        "finish_reason",
        pick.scalar(failure.get("stop_reason")) or pick.scalar(data.get("finish_reason")),
    )
    trajectory = pick.scalar(data.get("trajectory_id"))
    pick.put(sample, "id", trajectory)
    pick.put(sample, "group", _group(data, trajectory))
    lengths = _dict(data.get("length_info"))
    pick.put(sample, "num_actions", pick.whole(data.get("num_actions", lengths.get("num_actions"))))
    mode = pick.scalar(failure.get("failure_mode"))
    if mode and mode.lower() != "none":
        sample["failure_mode"] = mode


def _group(data: dict, trajectory: str | None) -> str | None:
    """The group of a trajectory: ``{tag}_{group}_{episode}_{seed}`` (see the module docstring)."""
    env = data.get("env_info")
    if isinstance(env, dict) and env.get("group_id") is not None:
        parts = [pick.scalar(env.get(k)) for k in ("tag", "group_id", "episode_id", "seed")]
        return "_".join(p for p in parts if p is not None)
    found = _PROXY_ID.match(trajectory or "")
    return found.group("group") if found else None


ROLL_AGENTIC = Format(
    name="roll-agentic",
    label="ROLL agentic rollout dump",
    identify=_identify,
    nested=_samples,
    columns=True,
    field_map=(
        ("messages", "messages"),
        ("trajectory_data.reward_info.episode_reward", "reward"),
        ("trajectory_data.finish_reason", "finish_reason"),
        ("trajectory_data.trajectory_id", "id"),
        ("global_step", "step"),
    ),
    notes="One JSON object of column lists per file; per-step rewards on the assistant turns; the native env "
    "manager's calls read from the reply's text.",
    kept=("id", "group", "exp_name", "step_reward", "num_actions", "failure_mode"),
)
