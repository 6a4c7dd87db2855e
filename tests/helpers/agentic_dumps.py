"""Agent episodes written in the on-disk shapes of prime-rl (verifiers v1), ROLL's agentic pipeline and
open-instruct, each following the trainer's own writer (see ``shared/reference/agentic-formats.md``):

- prime-rl ``monitors/file.py``: ``rollouts/step_N/train/{all,effective}/traces.jsonl``, one
  ``Episode.to_record()`` per line (id first, ``None`` left out), the message graph in ``traces[0].nodes``
  with ``parent`` links and flat calls; ``all/`` in arrival order, ``effective/`` the trained-on subset with
  ``advantages`` on its sampled nodes.
- ROLL ``write_to_json_process``: ``rollout_dump_data.step_N.jsonl``, ONE object of column lists, each cell
  JSON text; the proxy env manager's OpenAI messages (content parts, nested ``function`` calls) or the
  native step env manager's ``[[...]]`` (replies as decoded text, calls inside it) with step rows that hold
  nulls.
- open-instruct ``rl_utils._save_rollouts``: ``{run}_rollouts_000000.jsonl``, token ids, ``request_info``.

Each writer returns the ``Expected`` of every sample in reading order (``agent_episodes``).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

from tests.helpers.agent_episodes import Call, Episode, Expected, episode, expected_of, plain_messages

_VOCAB = {"stop": "stop", "length": "length", "max_turns": "turn_limit"}


class CallIds:
    """Deterministic ids for the calls of one conversation (a result carries the id of the call it
    answers)."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.known = prefix, {}

    def __call__(self, call: Call) -> str:
        return self.known.setdefault(id(call), f"{self.prefix}{len(self.known)}")


def _lines(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows), encoding="utf-8")


# --------------------------------------------------------------------------- prime-rl


def _prime_nodes(rng: random.Random, messages: list[dict], abandon: bool) -> tuple[list[dict], list[dict]]:
    """The message graph of a conversation (and the model calls that made its assistant nodes); with
    ``abandon``, a dead-end branch hangs off the prompt first (as a compaction or a retry leaves one)."""
    nodes: list[dict] = []
    calls: list[dict] = []

    def add(message: dict, parent: int | None, sampled: bool) -> int:
        node: dict = {} if parent is None else {"parent": parent}
        node.update(
            {"message": message, "sampled": sampled, "token_ids": [rng.randint(5, 900)], "mask": [sampled]}
        )
        nodes.append(node)
        return len(nodes) - 1

    ids = CallIds("call_")
    at = add(_prime_message(messages[0], ids), None, False)
    at = add(_prime_message(messages[1], ids), at, False)
    prompt = at
    if abandon:
        dead = add({"role": "assistant", "content": "An attempt that was dropped."}, prompt, True)
        calls.append({"node": dead, "finish_reason": "stop"})
    for m in messages[2:]:
        at = add(_prime_message(m, ids), at, m["role"] == "assistant")
        if m["role"] == "assistant":
            calls.append({"node": at, "finish_reason": "tool_calls" if m["calls"] else "stop"})
    return nodes, calls


def _prime_message(m: dict, ids: CallIds) -> dict:
    if m["role"] == "assistant":
        out: dict = {"role": "assistant", "content": m["content"]}
        if m["calls"]:
            out["tool_calls"] = [
                {"id": ids(c), "name": c.name, "arguments": c.arguments_json} for c in m["calls"]
            ]
        return out
    if m["role"] == "tool":
        return {"role": "tool", "tool_call_id": ids(m["call"]), "content": m["content"]}
    return {"role": m["role"], "content": m["content"]}


def _prime_episode(
    rng: random.Random, ep: Episode, group: str, step: int, failed: bool
) -> tuple[dict, list[dict]]:
    messages = plain_messages(ep)[:2] if failed else plain_messages(ep)
    nodes, calls = _prime_nodes(rng, messages, abandon=not failed and rng.random() < 0.4)
    trace: dict = {
        "id": f"{rng.getrandbits(64):016x}",
        "task": {"type": "ToolTask", "data": {"q": ep.task}},
        "agent": {"name": "solver", "trainable": True},
        "tools": [],
        "nodes": nodes,
        "calls": calls,
        "rewards": {} if failed else {"correct": {"score": ep.reward, "weight": 1.0}},
        "metrics": {"turns": float(len(ep.turns))},
        "is_completed": True,
        "ok": not failed,
    }
    if failed:
        trace["stop_condition"] = "error"
    elif ep.end == "length":  # no stop condition: the last call finished "length"
        calls[-1]["finish_reason"] = "length"
    else:
        trace["stop_condition"] = {"stop": "agent_completed", "max_turns": "max_turns"}[ep.end]
    errors = [{"type": "SandboxError", "message": "the sandbox stopped answering"}] if failed else []
    trace["errors"] = errors
    record = {
        "id": f"{rng.getrandbits(128):032x}",
        "env": {"id": "tool-env", "name": "tools"},
        "task": {"type": "ToolTask", "key": ep.task[:12]},
        "group": {"id": group},
        "run": {"type": "train", "id": "r1", "work": {"type": "train", "step": step}},
        "ok": not failed,
        "errors": errors,
        "traces": [trace],
    }
    return record, messages


def write_prime_rl(
    out: Path, *, steps: int = 2, groups: int = 4, size: int = 3, seed: int = 0
) -> list[Expected]:
    """``all/`` and ``effective/`` per step. Kept: the episodes of groups whose rewards differ (not failed),
    but for one group per step dropped as stale; a failed episode per step."""
    rng = random.Random(seed)
    expected: list[Expected] = []
    for step in range(1, steps + 1):
        written, effective = [], []
        for g in range(groups):
            group = f"{rng.getrandbits(64):016x}"
            eps = [episode(rng, step * 100 + g * 10 + i) for i in range(size)]
            if g == 0:  # a group with one reward: zero advantage
                for ep in eps:
                    ep.reward = 1.0
            elif len({ep.reward for ep in eps}) == 1:
                eps[0].reward = 1.0 - eps[0].reward if eps[0].reward != 0.5 else 0.0
            members = [
                (_prime_episode(rng, ep, group, step, failed=(g == 1 and i == 0)), ep, g == 1 and i == 0)
                for i, ep in enumerate(eps)
            ]
            live = [m for m in members if not m[2]]
            rewards = [ep.reward for _, ep, _ in live]
            stale = g == groups - 1
            kept_group = len(set(rewards)) > 1 and not stale
            for (record, messages), ep, failed in members:
                written.append(
                    (record, messages, ep, failed, kept_group and not failed, stale, len(set(rewards)) == 1)
                )
                if kept_group and not failed:
                    effective.append(_with_advantages(record, ep.reward - sum(rewards) / len(rewards)))
        rng.shuffle(written)  # all/: arrival order
        _lines(out / "rollouts" / f"step_{step}" / "train" / "all" / "traces.jsonl", [w[0] for w in written])
        _lines(out / "rollouts" / f"step_{step}" / "train" / "effective" / "traces.jsonl", effective)
        expected += [_prime_expected(step, *w) for w in written]
    return expected


def _with_advantages(record: dict, advantage: float) -> dict:
    copy = json.loads(json.dumps(record))
    for node in copy["traces"][0]["nodes"]:
        if node["sampled"]:
            node["advantages"] = [advantage] * len(node["token_ids"])
    return copy


def _prime_expected(
    step: int,
    record: dict,
    messages: list[dict],
    ep: Episode,
    failed: bool,
    kept: bool,
    stale: bool,
    equal: bool,
) -> Expected:
    if failed:
        return expected_of(
            step, messages, "error", 0.0, kept=False, dropped="error: SandboxError: the sandbox"
        )
    dropped = (
        None if kept else "not in effective/: zero advantage" if equal else "not in effective/: filtered"
    )
    return expected_of(
        step,
        messages,
        _VOCAB[ep.end],
        ep.reward,
        kept=kept,
        dropped=dropped,
        extra={"group": record["group"]["id"]},
    )


# --------------------------------------------------------------------------- ROLL agentic


def _parts(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


def _openai(messages: list[dict]) -> list[dict]:
    """ProxyEnvManager's messages: content parts, nested ``function`` calls with an index, results by id."""
    out, ids = [], CallIds("tc-")
    for m in messages:
        if m["role"] == "assistant":
            msg: dict = {"role": "assistant", "content": _parts(m["content"])}
            if m["calls"]:
                msg["tool_calls"] = [
                    {
                        "id": ids(c),
                        "index": k,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments_json},
                    }
                    for k, c in enumerate(m["calls"])
                ]
            out.append(msg)
        elif m["role"] == "tool":
            out.append(
                {
                    "role": "tool",
                    "content": _parts(m["content"]),
                    "tool_call_id": ids(m["call"]),
                    "name": None,
                }
            )
        else:
            out.append({"role": m["role"], "content": _parts(m["content"])})
    return out


def _decoded(messages: list[dict]) -> list[dict]:
    """AgentNativeStepEnvManager's messages: each reply decoded as text, its calls inside it (Qwen's tags)."""
    out = []
    for m in messages:
        if m["role"] == "assistant":
            calls = "".join(
                f"\n<tool_call>\n{json.dumps({'name': c.name, 'arguments': c.arguments})}\n</tool_call>"
                for c in m["calls"]
            )
            out.append({"role": "assistant", "content": m["content"] + calls})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


def write_roll_agentic(
    out: Path, *, native: bool, steps: int = 2, groups: int = 3, size: int = 3, seed: int = 0
) -> list[Expected]:
    rng = random.Random(seed)
    expected: list[Expected] = []
    for step in range(steps):
        columns: dict[str, list] = {"trajectory_data": [], "messages": [], "tools": [], "exp_name": []}
        for g in range(groups):
            for env in range(size):
                ep = episode(rng, step * 100 + g * 10 + env)
                messages = plain_messages(ep)
                row = _roll_native if native else _roll_proxy
                expected.append(row(rng, columns, step, g, env, ep, messages))
        columns["global_step"] = [step] * len(columns["messages"])
        path = out / f"rollout_dump_data.step_{step}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(columns, ensure_ascii=False) + "\n", encoding="utf-8")
    return expected


def _roll_proxy(
    rng: random.Random, columns: dict, step: int, g: int, env: int, ep: Episode, messages: list[dict]
) -> Expected:
    group = f"proxy_{g}_{step}_{1234 + g}"
    trajectory = f"{group}_{env}_20260819_1536{10 + env:02d}_{rng.randint(0, 999999):06d}"
    finish = {"stop": "stop", "length": "length", "max_turns": "max_turns"}[ep.end]
    openai = _openai(messages)
    data = {
        "trajectory_id": trajectory,
        "timestamp": "20260819_153610",
        "num_actions": len(ep.turns) + 1,
        "branch_or_step_idx": 0,
        "num_branches_or_steps": 1,
        "reward_info": {"episode_reward": ep.reward, "step_reward": ep.reward},
        "messages": openai,
        "finish_reason": finish,
    }
    _roll_row(columns, data, openai)
    return expected_of(step, messages, _VOCAB[ep.end], ep.reward, extra={"group": group, "id": trajectory})


def _roll_native(
    rng: random.Random, columns: dict, step: int, g: int, env: int, ep: Episode, messages: list[dict]
) -> Expected:
    replies = sum(1 for m in messages if m["role"] == "assistant")
    step_rewards = [round(rng.uniform(-0.2, 0.2), 3) for _ in range(replies - 1)] + [ep.reward]
    for _ in range(replies - 1):  # the step rows before the last hold no trajectory data
        for name in ("trajectory_data", "messages", "tools"):
            columns[name].append(None)
        columns["exp_name"].append("agentic-demo")
    env_info = {"env_id": env, "group_id": g, "tag": "native", "seed": 77 + g, "episode_id": step}
    stop = {"stop": "FINISH", "length": "MAX_LENGTH", "max_turns": "MAX_STEPS"}[ep.end]
    data = {
        "trajectory_id": f"native_0_{replies}_{g}_{env}_{step}_{77 + g}_20260819_153610_000001",
        "env_info": env_info,
        "length_info": {"num_actions": replies},
        "reward_info": {"episode_reward": sum(step_rewards), "step_rewards": step_rewards},
        "failure_info": {"failure_mode": "", "stop_reason": stop, "has_failure": False},
    }
    _roll_row(columns, data, [_decoded(messages)])
    return expected_of(
        step,
        messages,
        _VOCAB[ep.end],
        sum(step_rewards),
        turn_rewards=step_rewards,
        extra={"group": f"native_{g}_{step}_{77 + g}"},
    )


def _roll_row(columns: dict, data: dict, messages: list) -> None:
    columns["trajectory_data"].append(json.dumps(data))
    columns["messages"].append(json.dumps(messages))
    columns["tools"].append(
        json.dumps([{"type": "function", "function": {"name": n}} for n in ("python", "search")])
    )
    columns["exp_name"].append("agentic-demo")


# --------------------------------------------------------------------------- open-instruct


def write_open_instruct(
    out: Path, *, steps: int = 2, prompts: int = 3, size: int = 4, seed: int = 0, run: str = "grpo_tools"
) -> list[Expected]:
    """One shard; a prompt per step whose samples share one reward (zero advantage)."""
    rng = random.Random(seed)
    rows, expected = [], []
    for step in range(1, steps + 1):
        for p in range(prompts):
            eps = [episode(rng, step * 100 + p * 10 + i, ends=("stop", "length")) for i in range(size)]
            if p == 0:
                for ep in eps:
                    ep.reward = 0.0
            rewards = [ep.reward for ep in eps]
            mean = sum(rewards) / size
            std = (sum((r - mean) ** 2 for r in rewards) / size) ** 0.5
            for i, ep in enumerate(eps):
                advantage = (ep.reward - mean) / (std + 1e-8)
                rows.append(_open_instruct_row(rng, step, p * size + i, p, ep, advantage))
                stats = rows[-1]["request_info"]["tool_call_stats"]
                expected.append(
                    Expected(
                        step,
                        Counter(),
                        Counter(s["tool_name"] for s in stats),
                        sum(not s["success"] for s in stats),
                        _VOCAB[ep.end],
                        ep.reward,
                        kept=p != 0,
                        dropped="zero advantage" if p == 0 else None,
                        turns=0,
                    )
                )
    _lines(out / f"{run}_rollouts_{0:06d}.jsonl", rows)
    return expected


def _open_instruct_row(
    rng: random.Random, step: int, index: int, prompt: int, ep: Episode, advantage: float
) -> dict:
    calls = ep.calls
    n = rng.randint(6, 20)
    info = {
        "num_calls": len(calls),
        "timeouts": 0,
        "tool_errors": "".join(c.result for c in calls if c.failed),
        "tool_outputs": "".join(c.result for c in calls),
        "tool_runtimes": round(sum(rng.uniform(0.01, 0.5) for _ in calls), 3),
        "tool_calleds": bool(calls),
        "tool_call_stats": [
            {"tool_name": c.name, "success": not c.failed, "runtime": round(rng.uniform(0.01, 0.5), 3)}
            for c in calls
        ],
        "rollout_state": {},
    }
    return {
        "step": step,
        "sample_idx": index,
        "prompt_idx": prompt,
        "prompt_tokens": [rng.randint(10, 50000) for _ in range(8)],
        "response_tokens": [rng.randint(10, 50000) for _ in range(n)],
        "reward": ep.reward,
        "advantage": advantage,
        "finish_reason": ep.end,
        "dataset": "tool_math",
        "ground_truth": str(rng.randint(1, 99)),
        "request_info": info,
        "logprobs": [round(-rng.random(), 4) for _ in range(n)],
    }
