"""How much each trajectory used each tool, for every trajectory of a run at once: the messages' JSON read by
DuckDB (in C++, on every core), not one trajectory at a time in Python.

A page that shows every tool over every step of a run of 10,000 trajectories
of 20 turns would otherwise parse 35 MB of JSON into Python objects (about a
second here); this takes a fifth of that. Per trajectory and tool: the calls
the assistant made to it, and the tool's results that say the call failed (a
result names its tool: from the log, else from the call it answers; see
``formats.trajectory.normalize``), so the errors add up to the trajectory's
``n_tool_errors``. Messages DuckDB cannot read in that one shape are read by
the same walk in Python; a unit test holds the two equal.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable

import pyarrow as pa

from rl_board.formats import schema as S
from rl_board.formats import trajectory

log = logging.getLogger(__name__)
USAGE_COLUMNS = ("step", "sample", "tool", "calls", "errors")
NO_NAME = "(no name)"
_SHAPE = '[{"role": "VARCHAR", "name": "VARCHAR", "error": "BOOLEAN", "tool_calls": [{"name": "VARCHAR"}]}]'
_QUERY = f"""
WITH m AS (
  SELECT step, sample, unnest(from_json(messages, '{_SHAPE}')) AS msg
  FROM src WHERE messages IS NOT NULL AND json_valid(messages) AND json_type(messages) = 'ARRAY'),
used AS (
  SELECT step, sample, unnest(msg.tool_calls).name AS tool, 1 AS calls, 0 AS errors
  FROM m WHERE msg.role = 'assistant'
  UNION ALL
  SELECT step, sample, msg.name AS tool, 0 AS calls, 1 AS errors FROM m WHERE msg.role = 'tool' AND msg.error)
SELECT step, sample, coalesce(nullif(tool, ''), '{NO_NAME}') AS tool, sum(calls)::BIGINT AS calls,
       sum(errors)::BIGINT AS errors
FROM used GROUP BY ALL ORDER BY step, sample, tool
"""
_TYPES = pa.schema(
    [
        ("step", pa.int64()),
        ("sample", pa.int64()),
        ("tool", pa.string()),
        ("calls", pa.int64()),
        ("errors", pa.int64()),
    ]
)


def usage_table(messages: pa.Table) -> pa.Table:
    """Per trajectory and tool it used (``messages``: columns step, sample, messages): ``step, sample, tool,
    calls, errors``, ordered by step, sample and tool."""
    import duckdb

    con = duckdb.connect(config={"enable_external_access": False})
    try:
        con.register("src", messages.select([S.STEP, "sample", S.MESSAGES]))
        found = con.sql(_QUERY).to_arrow_table()
    except duckdb.Error as exc:  # an odd shape (a number where text belongs...): the walk in Python reads it
        log.info("tool use read one trajectory at a time (%s)", str(exc).splitlines()[0][:200])
        return usage_walk(messages)
    finally:
        con.close()
    return found.select(list(USAGE_COLUMNS)).cast(_TYPES)


def usage_walk(messages: pa.Table) -> pa.Table:
    """``usage_table`` one trajectory at a time, in Python: the definition the query is held to."""
    rows: list[tuple[int, int, str, int, int]] = []
    columns = (
        messages.column(S.STEP).to_pylist(),
        messages.column("sample").to_pylist(),
        messages.column(S.MESSAGES).to_pylist(),
    )
    for step, sample, raw in zip(*columns, strict=True):
        calls: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        for m in trajectory.parsed(raw) or ():
            if not isinstance(m, dict):
                continue
            if m.get("role") == "assistant":
                calls.update(_name(c.get("name")) for c in m.get("tool_calls") or () if isinstance(c, dict))
            elif m.get("role") == "tool" and m.get("error"):
                errors[_name(m.get("name"))] += 1
        rows += [(int(step), int(sample), tool, calls[tool], errors[tool]) for tool in sorted(calls | errors)]
    return pa.table(
        [pa.array(list(col), _TYPES.field(k).type) for k, col in enumerate(zip(*rows, strict=True))]
        if rows
        else [pa.array([], t.type) for t in _TYPES],
        schema=_TYPES,
    )


def with_logged(
    usage: pa.Table, steps: Iterable[int], samples: Iterable[int], logs: Iterable[object]
) -> pa.Table:
    """``usage`` plus the calls a log counted without turns (``tool_call_log``, open-instruct), per sample and
    tool."""
    from rl_board.rollouts.trajectories import logged_calls

    rows: list[tuple[int, int, str, int, int]] = []
    for step, sample, raw in zip(steps, samples, logs, strict=True):
        calls: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        for call in logged_calls(raw):
            calls[_name(call["name"])] += 1
            errors[_name(call["name"])] += bool(call["error"])
        rows += [(int(step), int(sample), tool, calls[tool], errors[tool]) for tool in sorted(calls)]
    if not rows:
        return usage
    extra = pa.table(
        [pa.array(list(col), _TYPES.field(k).type) for k, col in enumerate(zip(*rows, strict=True))],
        schema=_TYPES,
    )
    merged = (
        pa.concat_tables([usage.cast(_TYPES), extra])
        .group_by(["step", "sample", "tool"])
        .aggregate([("calls", "sum"), ("errors", "sum")])
    )
    merged = merged.select(["step", "sample", "tool", "calls_sum", "errors_sum"]).rename_columns(
        list(USAGE_COLUMNS)
    )
    return merged.sort_by([("step", "ascending"), ("sample", "ascending"), ("tool", "ascending")]).cast(
        _TYPES
    )


def _name(value: object) -> str:
    return str(value) if value not in (None, "") else NO_NAME
