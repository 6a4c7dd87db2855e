"""open-instruct's rollout traces (``--save_traces``), read as trajectories without turns.

``{run}_rollouts_{shard:06d}.jsonl`` (``rl_utils._save_rollouts``) holds one
line per sample: ``step, sample_idx, prompt_idx, prompt_tokens,
response_tokens, reward, advantage, finish_reason, dataset, ground_truth,
request_info, logprobs``. The tokens are token ids (ints), not text, so the
response is kept as ``response_token_ids`` (a tokenizer turns them into text,
as for NeMo-RL) and the sample has no prompt or response text.

Tool use is logged as counts, not turns: ``request_info`` has ``num_calls``,
``tool_errors`` and ``tool_outputs`` (each a text of the whole sample),
``timeouts`` and ``tool_call_stats[{tool_name, success, runtime}]``, one entry
per call. No message is made up from that: the calls become the
``tool_call_log`` column (one ``{"name", "error", "runtime"}`` per call, JSON
text), which the trajectory columns and the tool tables count where a sample
has no messages; the texts stay as ``tool_outputs`` / ``tool_errors``. The
samples of one prompt share ``prompt_idx`` within a step: their group.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rl_board.formats import pick
from rl_board.formats.base import Format, Record
from rl_board.formats.schema import TOOL_CALL_LOG


def _ids(value: Any) -> list[int] | None:
    """A list of token ids (ints, no bools); None for anything else."""
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    return value


def _identify(record: Record) -> bool:
    if not isinstance(record, dict) or "request_info" not in record and "finish_reason" not in record:
        return False
    prompt, response = record.get("prompt_tokens"), record.get("response_tokens")
    if not isinstance(prompt, list) or not isinstance(response, list):
        return False
    return all(
        not v or _ids(v[:1]) is not None for v in (prompt, response)
    )  # ints, not rl-board's token strings


def _samples(record: Record) -> list[Record]:
    if not _identify(record):
        return []
    sample: Record = {}
    pick.put(sample, "step", pick.whole(record.get("step")))
    response = _ids(record.get("response_tokens"))
    pick.put(sample, "response_token_ids", response)
    prompt = _ids(record.get("prompt_tokens"))
    pick.put(sample, "n_prompt_tokens", len(prompt) if prompt is not None else None)
    logprobs = record.get("logprobs")
    if isinstance(logprobs, list) and response is not None and len(logprobs) == len(response):
        sample["logprobs"] = [math.nan if x is None else x for x in (pick.finite(v) for v in logprobs)]
    for name in ("reward", "advantage"):
        pick.put(sample, name, pick.finite(record.get(name)))
    pick.put(sample, "finish_reason", pick.scalar(record.get("finish_reason")))
    pick.put(sample, "group", pick.scalar(pick.whole(record.get("prompt_idx"))))
    pick.put(sample, "sample_idx", pick.whole(record.get("sample_idx")))
    pick.put(sample, "dataset", pick.scalar(record.get("dataset")))
    truth = record.get("ground_truth")
    pick.put(
        sample,
        "ground_truth",
        pick.scalar(truth) if not isinstance(truth, (list, dict)) else json.dumps(truth),
    )
    _tools(sample, record.get("request_info"))
    return [sample]


def _tools(sample: Record, info: Any) -> None:
    """The tool calls a sample made, as counted by open-instruct (see the module docstring)."""
    if not isinstance(info, dict):
        return
    calls = [
        {
            "name": pick.scalar(s.get("tool_name")) or "",
            "error": s.get("success") is False,
            "runtime": pick.finite(s.get("runtime")),
        }
        for s in pick.dicts(info.get("tool_call_stats"))
    ]
    count = pick.whole(info.get("num_calls"))
    if not calls and count:  # an older log: the count without the calls' names
        calls = [{"name": "", "error": None, "runtime": None}] * count
    if calls:
        sample[TOOL_CALL_LOG] = json.dumps(calls)
    for name in ("tool_outputs", "tool_errors"):
        text = info.get(name)
        if isinstance(text, str) and text.strip():
            sample[name] = text
    pick.put(sample, "tool_timeouts", pick.whole(info.get("timeouts")))


OPEN_INSTRUCT = Format(
    name="open-instruct",
    label="open-instruct rollout traces",
    identify=_identify,
    nested=_samples,
    field_map=(
        ("response_tokens", "response_token_ids"),
        ("reward", "reward"),
        ("advantage", "advantage"),
        ("finish_reason", "finish_reason"),
        ("prompt_idx", "group"),
        ("request_info.tool_call_stats", TOOL_CALL_LOG),
    ),
    notes="Token ids, no text (serve --tokenizer decodes them); tool calls are counted, not shown as turns.",
    kept=(
        "response_token_ids",
        "n_prompt_tokens",
        "advantage",
        "group",
        "sample_idx",
        "dataset",
        TOOL_CALL_LOG,
        "tool_outputs",
        "tool_errors",
        "tool_timeouts",
    ),
)
