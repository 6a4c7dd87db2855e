"""Trajectories as data: per-sample columns (turns, tool calls, tools used, tool errors, a final answer), and
the tables of turns, tool calls, steps and tools that pages, SQL and health rules ask for.

Derived at ingest with the other per-sample columns, from the ``messages`` a
sample keeps (``formats.trajectory``). Every sample is a trajectory. One kept
as a prompt and an answer (no messages) is the trajectory of its prompt's
turns (a system and a user turn when its text is chat-marked, else the prompt
as one user turn) and its answer as one assistant turn
(``chat_text.single_turn_messages``): counted from the columns at ingest
(``chat_text.prompt_turns``, one split per distinct prompt), its turns made
when asked. It has no tool call and a final answer when it has a response;
when its log counted tool calls without showing them as turns
(``tool_call_log``, open-instruct), those are its calls, tool errors and
tools, and rows of the tool-call table (with no turn, arguments or result).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from rl_board.formats import chat_text, trajectory
from rl_board.formats import schema as S
from rl_board.lazy import pc, pd


def columns(table: pa.Table) -> dict[str, pa.Array]:
    """``turns``, ``tool_calls``, ``tool_errors``, ``tools``, ``final_answer`` for every row."""
    n = table.num_rows
    has_response = pc.fill_null(pc.greater(pc.utf8_length(table.column(S.RESPONSE)), 0), False)
    messages = table.column(S.MESSAGES)
    kept_as_text = pc.if_else(pc.is_null(messages), table.column(S.PROMPT), pa.scalar(None, pa.string()))
    turns = pc.add(chat_text.prompt_turns(kept_as_text), pc.cast(has_response, pa.int64())).to_pylist()
    tools: list[str | None] = [None] * n
    calls, errors, answered = [0] * n, [0] * n, has_response.to_pylist()
    logged = _logged_calls(table)
    if messages.null_count < n or logged is not None:
        listed_all = messages.to_pylist()
        for i in range(n):
            listed = trajectory.parsed(listed_all[i])
            if listed is not None:
                stats = trajectory.stats(listed)
                turns[i], calls[i], errors[i] = stats.turns, stats.tool_calls, stats.tool_errors
                tools[i], answered[i] = stats.tools or None, stats.final_answer
            elif logged is not None and logged[i]:
                calls[i], errors[i], tools[i] = _log_stats(logged[i])
    return {
        S.TURNS: pa.array(turns, pa.int64()),
        S.TOOL_CALLS: pa.array(calls, pa.int64()),
        S.TOOL_ERRORS: pa.array(errors, pa.int64()),
        S.TOOLS: pa.array(tools, pa.string()),
        S.FINAL_ANSWER: pa.array(answered, pa.bool_()),
    }


def _logged_calls(table: pa.Table) -> list[list[dict]] | None:
    """Each row's calls in ``tool_call_log`` (None when the table has no such column)."""
    if S.TOOL_CALL_LOG not in table.column_names:
        return None
    return [logged_calls(v) for v in table.column(S.TOOL_CALL_LOG).to_pylist()]


def _log_stats(calls: list[dict]) -> tuple[int, int, str | None]:
    """Calls, failed calls and the tools used (sorted, comma-separated) of a logged call list."""
    names = sorted({c["name"] for c in calls} - {""})
    return len(calls), sum(bool(c["error"]) for c in calls), ",".join(names) or None


def logged_calls(raw: object) -> list[dict]:
    """The calls of one ``tool_call_log`` value: ``{"name", "error"}`` each (error None when not logged)."""
    listed = trajectory.parsed(raw) if isinstance(raw, str) else None
    return [
        {
            "name": str(c.get("name") or ""),
            "error": c.get("error") if isinstance(c.get("error"), bool) else None,
        }
        for c in listed or ()
        if isinstance(c, dict)
    ]


TURN_COLUMNS = (
    "step",
    "sample",
    "turn",
    "role",
    "content",
    "reasoning",
    "tool_name",
    "tool_call_id",
    "n_tool_calls",
    "error",
    "reward",
    "tokens",
    "n_tokens",
    "trained",
)
CALL_COLUMNS = ("step", "sample", "turn", "call", "name", "arguments", "id", "answered", "error", "result")


def turn_table(frame: pd.DataFrame) -> pa.Table:
    """One row per message of every sample (``frame``: step, sample, messages, and prompt and response for the
    samples kept as text: see the module docstring), ordered by step, sample and turn."""
    has = frame[S.MESSAGES].notna().to_numpy() if len(frame) else np.zeros(0, bool)
    logged = _message_rows(frame[has])
    if S.PROMPT not in frame.columns or has.all():
        return logged
    text = frame[~has]
    prompts = pa.array(text[S.PROMPT].tolist(), pa.string())
    marked = chat_text.marked_prompts(prompts).to_numpy(zero_copy_only=False)
    parts = [logged, _split_rows(text[marked]), _plain_rows(text[~marked])]
    table = pa.concat_tables([p for p in parts if p.num_rows] or [logged])
    return table.sort_by([("step", "ascending"), ("sample", "ascending"), ("turn", "ascending")])


def messages_of(prompt: str | None, response: str | None, messages: str | None) -> list[dict[str, Any]]:
    """One sample's turns, as the turn table has them: its messages, else those told from its text."""
    listed = trajectory.parsed(messages)
    if listed is not None:
        return listed
    marked = bool(chat_text.marked_prompts(pa.array([prompt], pa.string()))[0].as_py())
    return trajectory.normalize(chat_text.single_turn_messages(prompt, response, marked=marked))


def _message_rows(frame: pd.DataFrame) -> pa.Table:
    """The turn rows of samples that keep their messages."""
    rows: dict[str, list] = {name: [] for name in TURN_COLUMNS}
    for step, sample, raw in zip(frame[S.STEP], frame["sample"], frame[S.MESSAGES], strict=True):
        _add_turns(rows, int(step), int(sample), trajectory.parsed(raw) or ())
    return _turns(rows)


def _split_rows(frame: pd.DataFrame) -> pa.Table:
    """The turn rows of samples kept as text whose prompt is chat-marked (split here, as they are asked
    for)."""
    rows: dict[str, list] = {name: [] for name in TURN_COLUMNS}
    for step, sample, prompt, response in zip(
        frame[S.STEP], frame["sample"], frame[S.PROMPT], frame[S.RESPONSE], strict=True
    ):
        messages = chat_text.single_turn_messages(prompt, response, marked=True)
        _add_turns(rows, int(step), int(sample), trajectory.normalize(messages))
    return _turns(rows)


def _plain_rows(frame: pd.DataFrame) -> pa.Table:
    """The turn rows of samples kept as plain text, from the columns: the prompt as turn 0 (user), the answer
    after it (assistant); an empty side has no turn."""
    steps = pa.array(frame[S.STEP].to_numpy(np.int64))
    samples = pa.array(frame["sample"].to_numpy(np.int64))
    prompts = pa.array(frame[S.PROMPT].tolist(), pa.string())
    responses = pa.array(frame[S.RESPONSE].tolist(), pa.string())
    has_prompt = pc.fill_null(pc.greater(pc.utf8_length(prompts), 0), False)
    has_response = pc.fill_null(pc.greater(pc.utf8_length(responses), 0), False)
    user = pa.table(
        {
            "step": steps,
            "sample": samples,
            "turn": pa.array(np.zeros(len(frame), np.int64)),
            "role": pa.array(["user"] * len(frame), pa.string()),
            "content": prompts,
        }
    ).filter(has_prompt)
    answer = pa.table(
        {
            "step": steps,
            "sample": samples,
            "turn": pc.cast(has_prompt, pa.int64()),
            "role": pa.array(["assistant"] * len(frame), pa.string()),
            "content": responses,
        }
    ).filter(has_response)
    both = pa.concat_tables([user, answer])
    n = both.num_rows
    return pa.table(
        {
            name: both.column(name) if name in both.column_names else pa.nulls(n, _TURN_TYPES[name])
            for name in TURN_COLUMNS
        }
    )


def _add_turns(rows: dict[str, list], step: int, sample: int, messages: Any) -> None:
    for turn, m in enumerate(messages):
        tool = m.get("role") == "tool"
        values = (
            step,
            sample,
            turn,
            m.get("role"),
            m.get("content"),
            m.get("reasoning"),
            m.get("name") if tool else None,
            m.get("tool_call_id"),
            len(m.get("tool_calls") or ()),
            m.get("error") if tool else None,
            _number(m.get("reward")),
            _span(m.get("tokens")),
            _length(m.get("tokens")),
            m.get("trained"),
        )
        for name, value in zip(TURN_COLUMNS, values, strict=True):
            rows[name].append(value)


def _turns(rows: dict[str, list]) -> pa.Table:
    return pa.table({name: pa.array(values, _TURN_TYPES[name]) for name, values in rows.items()})


def call_table(frame: pd.DataFrame) -> pa.Table:
    """One row per tool call: its turn, name, arguments, and the result that answered it (if one did).

    ``frame``: step, sample, messages and, when the run has it, ``tool_call_log`` (calls without turns).
    """
    rows: dict[str, list] = {name: [] for name in CALL_COLUMNS}
    logs = frame[S.TOOL_CALL_LOG] if S.TOOL_CALL_LOG in frame.columns else [None] * len(frame)
    for step, sample, raw, log in zip(frame[S.STEP], frame["sample"], frame[S.MESSAGES], logs, strict=True):
        messages = trajectory.parsed(raw) or []
        if not messages:
            _logged_rows(rows, int(step), int(sample), logged_calls(log))
        for turn, m in enumerate(messages):
            for k, call in enumerate(m.get("tool_calls") or ()):
                result = trajectory.result_of(messages, turn, k)
                values = (
                    int(step),
                    int(sample),
                    turn,
                    k,
                    call.get("name"),
                    call.get("arguments"),
                    call.get("id"),
                    result is not None,
                    bool(result.get("error")) if result else None,
                    result.get("content") if result else None,
                )
                for name, value in zip(CALL_COLUMNS, values, strict=True):
                    rows[name].append(value)
    return pa.table({name: pa.array(values, _CALL_TYPES[name]) for name, values in rows.items()})


def _logged_rows(rows: dict[str, list], step: int, sample: int, calls: list[dict]) -> None:
    """Calls a log counted without turns: name and error only (no turn, arguments, id or result)."""
    for k, call in enumerate(calls):
        values = (step, sample, None, k, call["name"], None, None, None, call["error"], None)
        for name, value in zip(CALL_COLUMNS, values, strict=True):
            rows[name].append(value)


def step_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per step: turns and tool calls per trajectory, the tool error rate, the share with no final answer, and
    the share of each finish reason (``finish_<reason>``)."""
    by_step = frame.groupby(S.STEP, sort=True)
    out = pd.DataFrame(
        {
            "trajectories": by_step.size(),
            "turns_mean": by_step[S.TURNS].mean(),
            "tool_calls_mean": by_step[S.TOOL_CALLS].mean(),
        }
    )
    calls = by_step[S.TOOL_CALLS].sum()
    out["tool_error_rate"] = (by_step[S.TOOL_ERRORS].sum() / calls).where(calls > 0)
    out["no_final_answer_share"] = 1.0 - by_step[S.FINAL_ANSWER].mean()
    if S.FINISH_REASON in frame.columns and frame[S.FINISH_REASON].notna().any():
        shares = pd.crosstab(frame[S.STEP], frame[S.FINISH_REASON], normalize="index")
        for reason in shares.columns:
            out[f"finish_{reason}"] = shares[reason]
    return out.reset_index()


def tool_table(usage: pa.Table, rewards: pd.DataFrame) -> pd.DataFrame:
    """Per tool and step: calls, errors, error rate, trajectories that called it and their mean reward.

    ``usage``: per trajectory and tool, ``step, sample, tool, calls, errors`` (``calls.usage_table``);
    ``rewards``: step, sample, reward of every sample (the reward of a trajectory that used the tool).
    """
    frame = usage.select(["step", "sample", "tool", "calls", "errors"]).to_pandas()
    if frame.empty:
        return pd.DataFrame(
            columns=["tool", "step", "calls", "errors", "error_rate", "trajectories", "reward_mean"]
        )
    grouped = frame.groupby(["tool", "step"], sort=True)
    out = pd.DataFrame({"calls": grouped["calls"].sum(), "errors": grouped["errors"].sum()})
    out["error_rate"] = (out["errors"] / out["calls"]).where(out["calls"] > 0)
    used = frame.loc[frame["calls"] > 0, ["tool", "step", "sample"]].merge(
        rewards, on=["step", "sample"], how="left"
    )
    per = used.groupby(["tool", "step"], sort=True)
    out["trajectories"] = per.size().reindex(out.index, fill_value=0)
    out["reward_mean"] = per[S.REWARD].mean().reindex(out.index) if S.REWARD in used.columns else np.nan
    return out.reset_index()


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _length(value: object) -> int | None:
    span = _span(value)
    return None if span is None else span[1] - span[0]


def _span(value: object) -> list[int] | None:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return [int(v) for v in value]
    return None


_TURN_TYPES = {
    "step": pa.int64(),
    "sample": pa.int64(),
    "turn": pa.int64(),
    "role": pa.string(),
    "content": pa.string(),
    "reasoning": pa.string(),
    "tool_name": pa.string(),
    "tool_call_id": pa.string(),
    "n_tool_calls": pa.int64(),
    "error": pa.bool_(),
    "reward": pa.float64(),
    "tokens": pa.list_(pa.int64()),
    "n_tokens": pa.int64(),
    "trained": pa.bool_(),
}
_CALL_TYPES = {
    "step": pa.int64(),
    "sample": pa.int64(),
    "turn": pa.int64(),
    "call": pa.int64(),
    "name": pa.string(),
    "arguments": pa.string(),
    "id": pa.string(),
    "answered": pa.bool_(),
    "error": pa.bool_(),
    "result": pa.string(),
}
CALL_TYPES = _CALL_TYPES  # the types of the call table, for other builders of it
