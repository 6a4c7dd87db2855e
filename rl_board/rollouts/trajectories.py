"""Per-sample columns that describe a trajectory: turns, tool calls, tools used, tool errors, a final answer.

Derived at ingest with the other per-sample columns, from the ``messages`` a
sample keeps (``formats.trajectory``). A sample without messages is a
trajectory of its prompt and its answer: 2 turns (1 when one is missing), no
tool call, a final answer when it has a response.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from rl_board.formats import schema as S
from rl_board.formats import trajectory


def columns(table: pa.Table) -> dict[str, pa.Array]:
    """``turns``, ``tool_calls``, ``tool_errors``, ``tools``, ``final_answer`` for every row."""
    n = table.num_rows
    has_prompt = pc.fill_null(pc.greater(pc.utf8_length(table.column(S.PROMPT)), 0), False)
    has_response = pc.fill_null(pc.greater(pc.utf8_length(table.column(S.RESPONSE)), 0), False)
    turns = pc.add(pc.cast(has_prompt, pa.int64()), pc.cast(has_response, pa.int64())).to_pylist()
    calls, errors, tools, answered = [0] * n, [0] * n, [None] * n, has_response.to_pylist()
    messages = table.column(S.MESSAGES)
    if messages.null_count < n:
        for i, raw in enumerate(messages.to_pylist()):
            listed = trajectory.parsed(raw)
            if listed is None:
                continue
            stats = trajectory.stats(listed)
            turns[i], calls[i], errors[i] = stats.turns, stats.tool_calls, stats.tool_errors
            tools[i], answered[i] = stats.tools or None, stats.final_answer
    return {
        S.TURNS: pa.array(turns, pa.int64()),
        S.TOOL_CALLS: pa.array(calls, pa.int64()),
        S.TOOL_ERRORS: pa.array(errors, pa.int64()),
        S.TOOLS: pa.array(tools, pa.string()),
        S.FINAL_ANSWER: pa.array(answered, pa.bool_()),
    }
