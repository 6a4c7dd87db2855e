"""prime-rl's episode traces (verifiers v1), read as trajectories.

``rollouts/step_N/{train|eval}/{all|effective}/traces.jsonl`` holds one
episode per line: ``id, env, task, group, run, ok, errors, traces``. A trace
keeps its messages as a graph: ``nodes[]`` each carry a ``message`` and the
index of their ``parent`` (none at a root); compaction and sub-agents add
leaves, so the conversation is the root-to-leaf walk that ends at the last
node. Assistant messages hold flat calls (``{id, name, arguments}``) and
their reasoning apart (``reasoning_content``, put back inside ``<think>``).

Why it ended: the trace's ``stop_condition``; without one, ``length`` when the
last call that did not fail finished ``length`` (verifiers' ``is_truncated``),
and ``error`` for an episode that failed. ``all/`` holds every episode,
``effective/`` the ones trained on; the sources layer hands the reader the ids
in ``effective/`` (option ``EFFECTIVE``), so each episode of ``all/`` says
whether it was kept and, if not, why (``formats.kept``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa

from rl_board.formats import kept, pick
from rl_board.formats.base import Adapted, Format, Options, Probe, Record
from rl_board.lazy import pc

EFFECTIVE = "effective_ids"  # option: the ids of the episodes in effective/ beside this all/ folder
NOT_EFFECTIVE = (
    "not in effective/: filtered out of training (stale, rejected by the curriculum, or no trainable trace)"
)
_EQUAL = f"not in effective/: {kept.ZERO_ADVANTAGE}"


def _identify(record: Record) -> bool:
    return (
        isinstance(record, dict)
        and isinstance(record.get("traces"), list)
        and any(k in record for k in ("env", "group", "task"))
    )


def _reply(message: dict) -> str:
    """An assistant turn, its reasoning (kept apart by prime-rl) put back inside <think>."""
    content = pick.text(message.get("content")) or ""
    reasoning = (pick.text(message.get("reasoning_content")) or "").strip()
    return f"<think>\n{reasoning}\n</think>\n{content}" if reasoning else content


def walk(nodes: list) -> list[dict]:
    """The nodes of the conversation that ends at the last node, root first (parent links followed).

    Nodes without any parent link (a linear log) are the conversation as they are.
    """
    if not any(isinstance(n, dict) and n.get("parent") is not None for n in nodes):
        return pick.dicts(nodes)
    path: list[dict] = []
    at: Any = len(nodes) - 1
    seen: set[int] = set()
    while isinstance(at, int) and not isinstance(at, bool) and 0 <= at < len(nodes) and at not in seen:
        seen.add(at)
        node = nodes[at]
        if not isinstance(node, dict):
            break
        path.append(node)
        at = node.get("parent")
    return path[::-1]


def _message(node: dict) -> dict | None:
    """A node's message with what the conversation view shows: role, text, calls, the call a result
    answers."""
    raw = node.get("message")
    if not isinstance(raw, dict):
        return None
    message = {
        k: raw[k] for k in ("role", "content", "tool_calls", "tool_call_id", "name") if raw.get(k) is not None
    }
    if raw.get("role") == "assistant":
        message["content"] = _reply(raw)
    return message


def _rewards(trace: dict) -> tuple[float | None, Record]:
    """reward = Σ score·weight (verifiers' rubric); each component kept as ``reward/<name>``."""
    rewards = trace.get("rewards")
    if not isinstance(rewards, dict):
        return None, {}
    total, parts = 0.0, {}
    for name, entry in rewards.items():
        score = pick.finite(entry.get("score") if isinstance(entry, dict) else entry)
        weight = pick.finite(entry.get("weight")) if isinstance(entry, dict) else None
        if score is not None:
            parts[f"reward/{name}"] = score
            total += score * (1.0 if weight is None else weight)
    return total, parts


def _failure(record: dict, trace: dict) -> str | None:
    """Why an episode failed (its first error, the episode's before its trace's), or None when it did not."""
    errors = pick.dicts(record.get("errors")) + pick.dicts(trace.get("errors"))
    failed = record.get("ok") is False or trace.get("ok") is False or bool(errors)
    if not failed:
        return None
    first = errors[0] if errors else {}
    return (
        kept.error_reason(first.get("type"), first.get("message"))
        if first
        else "error: the episode is not ok"
    )


def finish_reason(trace: dict, failed: bool) -> str | None:
    """The logged reason a trace ended (see the module docstring); the reader maps it to one vocabulary."""
    condition = trace.get("stop_condition")
    if isinstance(condition, str) and condition.strip():
        return condition
    if failed:
        return "error"
    calls = [c for c in pick.dicts(trace.get("calls")) if not c.get("error")]
    return "length" if calls and calls[-1].get("finish_reason") == "length" else None


def _advantage(nodes: list[dict]) -> float | None:
    """The advantage of a trained-on episode (``effective/`` nodes carry it per token; one value per
    sample)."""
    found = [n.get("advantages") for n in nodes if n.get("advantages") is not None]
    if not found:
        return None
    values = pick.row(found[-1])
    return pick.finite(values[0] if values else found[-1])


def _samples(record: Record) -> list[Record]:
    if not isinstance(record, dict):
        return []
    traces = record.get("traces")
    trace = traces[0] if isinstance(traces, list) and traces and isinstance(traces[0], dict) else {}
    logged = trace.get("nodes")
    nodes = walk(logged if isinstance(logged, list) else [])
    messages = [m for m in (_message(n) for n in nodes) if m is not None]
    sample: Record = {}
    if messages:
        sample["prompt"] = pick.chat_prompt(messages) or ""
        sample["response"] = pick.answers(messages)  # "" for an episode that failed before answering
        sample["messages"] = messages
    failure = _failure(record, trace)
    pick.put(sample, "finish_reason", finish_reason(trace, failure is not None))
    if failure is not None:
        sample.update({kept.KEPT: False, kept.DROPPED: failure})
    _describe(sample, record, trace)
    pick.put(sample, "advantage", _advantage(nodes))  # only in the trained-on ("effective") file
    return [sample]


def _describe(sample: Record, record: dict, trace: dict) -> None:
    """The episode's reward, its parts and metrics, and what identifies it (id, group, task, env)."""
    reward, parts = _rewards(trace)
    pick.put(sample, "reward", reward)
    pick.put(sample, "id", pick.scalar(record.get("id")))
    pick.put(sample, "group", pick.key(record.get("group")))
    pick.put(sample, "task", pick.key(record.get("task")))
    pick.put(sample, "env", pick.key(record.get("env"), ("name", "id")))  # name, as token exports' env_name
    if isinstance(record.get("ok"), bool):
        sample["ok"] = record["ok"]
    sample.update(parts)
    metrics = trace.get("metrics")
    for name, value in metrics.items() if isinstance(metrics, dict) else ():
        pick.put(sample, f"metric/{name}", pick.finite(value))


def _adapt(table: pa.Table, options: Options) -> Adapted:
    """Each episode of ``all/`` kept when ``effective/`` holds it; else why not (see ``formats.kept``)."""
    ids = options.get(EFFECTIVE)
    if not isinstance(ids, list) or "id" not in table.column_names:
        return Adapted(table)
    effective = frozenset(str(i) for i in ids)
    failed = [k is False for k in _values(table, kept.KEPT)]
    reasons = _values(table, kept.DROPPED)
    equal = _equal_rewards(table, failed)
    kept_out: list[bool | None] = []
    reasons_out: list[str | None] = []
    for episode, bad, why, flat in zip(table.column("id").to_pylist(), failed, reasons, equal, strict=True):
        if episode is not None and str(episode) in effective:
            kept_out.append(True)
            reasons_out.append(None)
        else:
            kept_out.append(False)
            reasons_out.append(why if bad else _EQUAL if flat else NOT_EFFECTIVE)
    return Adapted(kept.with_kept(table, kept_out, reasons_out))


def _equal_rewards(table: pa.Table, failed: list[bool]) -> list[bool]:
    """For each row: whether its group's episodes that did not fail all have one reward (and there are
    two)."""
    if kept.GROUP not in table.column_names:
        return [False] * table.num_rows
    codes = kept.group_codes(table).tolist()
    keys = [None if bad or k < 0 else k for k, bad in zip(codes, failed, strict=True)]
    rewards = _values(table, kept.REWARD)
    seen: dict[Any, set] = {}
    count: dict[Any, int] = {}
    for k, r in zip(keys, rewards, strict=True):
        if k is not None:
            seen.setdefault(k, set()).add(r)
            count[k] = count.get(k, 0) + 1
    return [k is not None and count[k] > 1 and len(seen[k]) == 1 for k in keys]


def _values(table: pa.Table, name: str) -> list[Any]:
    return table.column(name).to_pylist() if name in table.column_names else [None] * table.num_rows


PRIME_TRACES = "traces.jsonl"
_LEADING_ID = re.compile(rb'^\s*\{\s*"id"\s*:\s*"((?:[^"\\]|\\.)*)"')  # Episode.to_record writes its id first
_IDS_SEEN: dict[tuple[str, tuple[int, int]], tuple[str, ...]] = {}


def _effective(folder: Path, probe: Probe) -> Options:
    """For an ``all/`` folder of episodes: the ids of the trained-on ones in ``effective/`` beside it (no
    option while that file is not written: whether an episode was kept is then not known)."""
    if folder.name != "all":
        return {}
    path = folder.parent / "effective" / PRIME_TRACES
    version = probe.version(path)
    if version is None:
        return {}
    key = (str(path), version)
    if key not in _IDS_SEEN:
        if len(_IDS_SEEN) > 256:
            _IDS_SEEN.clear()
        _IDS_SEEN[key] = effective_ids(probe.read(path) or b"")
    return {EFFECTIVE: list(_IDS_SEEN[key])}


def effective_ids(data: bytes) -> tuple[str, ...]:
    """The episode ids of a traces file, in order: from each line's start when it begins with its id (as
    prime-rl writes it), else from the parsed line; a line not yet ended or not an episode gives none."""
    found: list[str] = []
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):  # still being written
            break
        episode = _episode_id(line)
        if episode is not None:
            found.append(episode)
    return tuple(found)


def _episode_id(line: bytes) -> str | None:
    match = _LEADING_ID.match(line)
    if match is not None:
        try:
            value = json.loads(b'"' + match.group(1) + b'"')
        except ValueError:
            return None
        return value if isinstance(value, str) else None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    episode = record.get("id") if isinstance(record, dict) else None
    return str(episode) if isinstance(episode, (str, int)) and not isinstance(episode, bool) else None


def _copy_aside(path: Path, probe: Probe) -> str:
    """prime-rl writes the trained-on episodes twice: all/ and effective/ (all/ says which were kept)."""
    if path.parent.name == "effective" and probe.is_dir(path.parent.parent / "all"):
        return "repeats the trained-on episodes of the all/ folder beside it (all/ marks them kept)"
    return ""


PRIME_RL = Format(
    name="prime-rl",
    label="prime-rl rollout traces",
    identify=_identify,
    nested=_samples,
    adapt=_adapt,
    field_map=(
        ("traces[0].nodes", "prompt"),
        ("traces[0].nodes", "response"),
        ("traces[0].nodes", "messages"),
        ("traces[0].stop_condition", "finish_reason"),
        ("traces[0].rewards", "reward"),
        ("group.id", "group"),
    ),
    notes="Step from the path (rollouts/step_N/...); run.work.step can be one behind (async). The "
    "conversation is the walk from the root to the last node; episodes of all/ missing from effective/ are "
    "marked not kept.",
    kept=(
        "id",
        "group",
        "task",
        "env",
        "ok",
        "advantage",
        "kept",
        "dropped_reason",
        "reward/<name>",
        "metric/<name>",
    ),
    set_aside=_copy_aside,
    companions=_effective,
)


# -- before Jul 2026: rollouts/step_N/train_rollouts.jsonl, verifiers v0 ``RolloutOutput`` -------------------
TRUNCATED, FINISH = "is_truncated", "finish_reason"
V0_MAP = {"completion": "response", "stop_condition": "finish_reason"}


def _is_v0(record: Record) -> bool:
    return {"prompt", "completion"} <= record.keys() and (TRUNCATED in record or "stop_condition" in record)


def _v0_adapt(table: pa.Table, options: Options) -> Adapted:
    """A rollout cut short with no stop condition logged ended at a length cap (verifiers'
    ``is_truncated``)."""
    if TRUNCATED not in table.column_names or not pa.types.is_boolean(table.schema.field(TRUNCATED).type):
        return Adapted(table)
    finish = table.column(FINISH)
    cut = pc.and_(pc.is_null(finish), pc.fill_null(table.column(TRUNCATED), False))
    words = pc.if_else(cut, pa.scalar("length"), finish)
    return Adapted(table.set_column(table.schema.get_field_index(FINISH), FINISH, words))


PRIME_RL_V0 = Format(
    "prime-rl-v0",
    "prime-rl rollouts (verifiers v0)",
    _is_v0,
    renames=V0_MAP,
    adapt=_v0_adapt,
    field_map=tuple(V0_MAP.items()),
    notes="a rollout with is_truncated and no stop_condition ended at a length cap",
    kept=(TRUNCATED, "metrics", "info"),
)
