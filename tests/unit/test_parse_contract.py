"""The parse contract: every path that can read a block gives the same samples, refusals and warnings.

For each format, hypothesis writes records of that format's shape (with the
oddities real dumps have: NaN and missing rewards, steps as text, booleans,
chat message lists, odd extra columns, a broken line now and then), and every
parse path (``ingest.parse_paths``: pyarrow.json, the bulk path, the renamed
table path, Parquet's table path and the careful record path) must agree.
Cutting the same lines into two blocks must give what one block gives.
"""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rl_board import formats
from rl_board.formats import Reading
from rl_board.rollouts.read import ingest, jsonl
from rl_board.rollouts.read import records as rec

EXAMPLES = int(os.environ.get("RL_BOARD_FUZZ_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

words = st.text(alphabet="abc xyz_\u4e2d\u00e9", max_size=12)
plain = st.floats(-2, 2, width=32)
rewards = st.one_of(
    plain, plain, plain, st.none() | st.booleans() | st.just(float("nan")) | st.integers(-3, 3)
)
steps = st.one_of(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5).map(str))
chat = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user"]), "content": words}),
    min_size=1,
    max_size=3,
)
answer = st.lists(
    st.fixed_dictionaries({"role": st.just("assistant"), "content": words}), min_size=1, max_size=1
)
extras = st.one_of(
    st.just({}),
    st.just({}),
    st.dictionaries(
        st.sampled_from(["note", "level", "acc", "tag"]),
        st.none() | st.integers(0, 3) | words | st.booleans(),
        max_size=2,
    ),
)


def _maybe(record: dict[str, Any], **optional: Any) -> dict[str, Any]:
    return {**record, **{k: v for k, v in optional.items() if v is not None}}


native = st.builds(
    lambda step, p, r, reward, uid, lp, more: _maybe(
        {"step": step, "prompt": p, "response": r, "reward": reward, **more},
        uid=uid,
        logprobs=lp,
        ref_logprobs=lp,
    ),
    steps,
    st.one_of(words, words, chat),
    st.one_of(words, words, answer),
    rewards,
    st.none() | st.sampled_from(["a_0_1", "a_1_0", "b"]),
    st.none() | st.lists(st.floats(-5, 0, width=32), max_size=4),
    extras,
)
verl = st.builds(
    lambda step, p, r, score, uid, more: _maybe(
        {"input": p, "output": r, "score": score, "gts": "5", "step": step, **more}, uid=uid
    ),
    steps,
    words,
    words,
    rewards,
    st.none() | st.sampled_from(["u1_0_0", "u1_0_1", "u2_0_0"]),
    extras,
)
areal = st.builds(
    lambda v, p, r, reward, task: {
        "task_id": task,
        "sample_idx": 0,
        "prompt": p,
        "completion": r,
        "reward": reward,
        "tail_version": v,
        "head_version": v,
    },
    st.integers(0, 5),
    words,
    words,
    rewards,
    st.sampled_from(["t1", "t2", 7]),
)
skyrl = st.builds(
    lambda p, r, score, why: {
        "input_prompt": p,
        "output_response": r,
        "score": score,
        "stop_reason": why,
        "env_class": "gsm8k",
    },
    words,
    words,
    rewards | st.lists(st.floats(-1, 1, width=32), max_size=3),
    words,
)
nemo = st.builds(
    lambda p, answers, reward, kept: {
        "content": [[p, *[t for a in answers for t in (a, "<result>ok</result>")]]],
        "rewards": [reward],
        "idx": 0,
        "token_loss_mask": [[0, 0, *[m for _ in answers for m in (1, 1, 0)]]],
        "sample_loss_mask": [float(kept)],
    },
    words,
    st.lists(words, min_size=1, max_size=3),
    st.floats(-1, 1, width=32),
    st.booleans(),
)
roll = st.builds(
    lambda n, step: {
        "global_step": [step] * n,
        "id": [f"q{i % 2}" for i in range(n)],
        "prompt": [f"p{i % 2}" for i in range(n)],
        "responses": [f"r{i}" for i in range(n)],
        "scores": [float(i % 3) for i in range(n)],
    },
    st.integers(1, 6),
    st.integers(0, 3),
)


def _prime_nodes(p: str, r: str, tool: str | None, branch: bool) -> list[dict[str, Any]]:
    """A user turn, an abandoned reply (``branch``), a call and its result (``tool``), the answer."""
    nodes: list[dict[str, Any]] = [{"message": {"role": "user", "content": p}, "sampled": False}]
    if branch:
        nodes.append({"parent": 0, "message": {"role": "assistant", "content": "dropped"}, "sampled": True})
    at = 0
    if tool is not None:
        call = {"id": "c1", "name": tool, "arguments": '{"x": 1}'}
        nodes.append({"parent": at, "message": {"role": "assistant", "tool_calls": [call]}, "sampled": True})
        nodes.append(
            {"parent": len(nodes) - 1, "message": {"role": "tool", "tool_call_id": "c1", "content": r}}
        )
        at = len(nodes) - 1
    nodes.append({"parent": at, "message": {"role": "assistant", "content": r}, "sampled": True})
    return nodes


prime = st.builds(
    lambda p, r, score, group, tool, branch, ok, stop: {
        "id": f"e{len(p)}{len(r)}",
        "env": {"id": "math"},
        "group": {"id": group},
        "ok": ok,
        "errors": [] if ok else [{"type": "Boom", "message": "sandbox"}],
        "traces": [
            _maybe(
                {
                    "nodes": _prime_nodes(p, r, tool, branch),
                    "rewards": {"acc": {"score": score, "weight": 1.0}},
                    "calls": [{"node": 1, "finish_reason": "length"}],
                },
                stop_condition=stop,
            )
        ],
    },
    words,
    words,
    st.floats(0, 1, width=32),
    st.sampled_from(["g1", "g2"]),
    st.none() | st.sampled_from(["py", "web"]),
    st.booleans(),
    st.booleans(),
    st.none() | st.sampled_from(["agent_completed", "max_turns"]),
)
prime_tokens = st.builds(
    lambda n, lp: {
        "step": 2,
        "rank": 0,
        "token_ids": list(range(n + 2)),
        "loss_mask": [0, 0] + [1] * n,
        "advantages": [0.5] * (n + 2),
        "inference_logprobs": [lp] * (n + 2),
        "trainer_logprobs": [lp] * (n + 2),
    },
    st.integers(1, 4),
    st.floats(-3, 0, width=32),
)

roll_chat = st.sampled_from(
    [
        [
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "a"}],
                "tool_calls": [
                    {
                        "id": "t1",
                        "index": 0,
                        "type": "function",
                        "function": {"name": "py", "arguments": "{}"},
                    }
                ],
            },
            {
                "role": "tool",
                "content": [{"type": "text", "text": "Error: no"}],
                "tool_call_id": "t1",
                "name": None,
            },
        ],
        [
            [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": 'x\n<tool_call>\n{"name": "web", "arguments": {}}\n</tool_call>',
                },
            ]
        ],
    ]
)
roll_agentic = st.builds(
    lambda n, step, chat, why, reward: {
        "trajectory_data": [
            json.dumps(
                {
                    "trajectory_id": f"t_{i % 2}_0_1_{i}_20260101_000000_000000",
                    "reward_info": {"episode_reward": reward, "step_rewards": [reward]},
                    "failure_info": {"stop_reason": why},
                }
            )
            if i % 3
            else None
            for i in range(n)
        ],
        "messages": [json.dumps(chat) if i % 3 else None for i in range(n)],
        "tools": ["[]"] * n,
        "exp_name": ["x"] * n,
        "global_step": [step] * n,
    },
    st.integers(1, 6),
    st.integers(0, 3),
    roll_chat,
    st.sampled_from(["FINISH", "MAX_STEPS", "ABORT"]),
    plain,
)
open_instruct = st.builds(
    lambda step, p, n, reward, tools, why: {
        "step": step,
        "sample_idx": p,
        "prompt_idx": p,
        "prompt_tokens": [5, 6],
        "response_tokens": list(range(n)),
        "reward": reward,
        "advantage": 0.0 if p == 0 else 0.5,
        "finish_reason": why,
        "dataset": "d",
        "ground_truth": "4",
        "request_info": {
            "num_calls": len(tools),
            "timeouts": 0,
            "tool_errors": "",
            "tool_outputs": "out",
            "tool_call_stats": [{"tool_name": t, "success": ok, "runtime": 0.1} for t, ok in tools],
        },
        "logprobs": [-0.5] * n,
    },
    steps,
    st.integers(0, 2),
    st.integers(0, 4),
    plain,
    st.lists(st.tuples(st.sampled_from(["py", "web"]), st.booleans()), max_size=3),
    st.sampled_from(["stop", "length"]),
)

prime_v0 = st.builds(
    lambda p, r, reward, cut, stop: _maybe(
        {
            "prompt": [{"role": "user", "content": p}],
            "completion": [{"role": "assistant", "content": r}],
            "reward": reward,
            "is_truncated": cut,
        },
        stop_condition=stop,
    ),
    words,
    words,
    plain,
    st.booleans(),
    st.none() | st.sampled_from(["agent_completed", "max_turns"]),
)

JSONL = {
    "prime-rl-v0": prime_v0,
    "prime-rl": prime,
    "roll-agentic": roll_agentic,
    "open-instruct": open_instruct,
    "prime-rl-tokens": prime_tokens,
    "rl-board": native,
    "verl": verl,
    "areal": areal,
    "skyrl": skyrl,
    "nemo-rl": nemo,
    "roll": roll,
}
NAMES = {
    "prime-rl-v0": "rollouts/step_2/train_rollouts.jsonl",
    "prime-rl": "rollouts/step_2/train/all/traces.jsonl",
    "prime-rl-tokens": "token_exports/step_2/rank_0.jsonl",
    "rl-board": "r0.jsonl",
    "verl": "3.jsonl",
    "areal": "t1.jsonl",
    "skyrl": "global_step_3_evals/gsm8k.jsonl",
    "nemo-rl": "train_data_step2.jsonl",
    "roll": "rollout_dump_data.step_2.jsonl",
    "roll-agentic": "rollout_dump_data.step_2.jsonl",
    "open-instruct": "run_rollouts_000000.jsonl",
}
ONE_LINE = ("roll", "roll-agentic")  # a file is one object of column lists: a broken line is the whole file


def _line(record: dict[str, Any], broken: bool) -> bytes:
    text = json.dumps(record, ensure_ascii=False)
    return (text[: len(text) // 2] if broken else text).encode() + b"\n"


def rows(block: jsonl.ParsedBlock) -> list[dict[str, Any]]:
    """The samples as plain values: NaN as a marker (NaN != NaN), lists compared by value."""
    return [{k: _plain(v) for k, v in row.items()} for row in block.table.to_pylist()]


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def assert_same(found: dict[str, jsonl.ParsedBlock | None]) -> None:
    taken = {name: block for name, block in found.items() if block is not None}
    assert "careful" in taken
    first_name, first = next(iter(taken.items()))
    for name, block in taken.items():
        where = f"{name} vs {first_name}"
        assert block.table.column_names == first.table.column_names, where
        assert rows(block) == rows(first), where
        assert block.bad == first.bad, where
        assert block.warnings == first.warnings, where
        assert block.blank == first.blank, where


@SETTINGS
@given(fmt=st.sampled_from(sorted(JSONL)), data=st.data())
def test_every_path_reads_a_block_alike(fmt: str, data: st.DataObject) -> None:
    records = data.draw(st.lists(JSONL[fmt], min_size=1, max_size=6))
    broken = data.draw(st.lists(st.booleans(), min_size=len(records), max_size=len(records)))
    raw = b"".join(_line(r, b and fmt not in ONE_LINE) for r, b in zip(records, broken, strict=True))
    assert_same(ingest.parse_paths(Path(NAMES[fmt]), raw, Reading(fmt)))


@SETTINGS
@given(fmt=st.sampled_from(sorted(JSONL)), data=st.data())
def test_two_blocks_read_as_one(fmt: str, data: st.DataObject) -> None:
    records = data.draw(st.lists(JSONL[fmt], min_size=2, max_size=6))
    cut = data.draw(st.integers(1, len(records) - 1))
    lines = [_line(r, False) for r in records]
    whole, _ = ingest.parse_any(Path(NAMES[fmt]), b"".join(lines), Reading(fmt))
    head, n_head = ingest.parse_any(Path(NAMES[fmt]), b"".join(lines[:cut]), Reading(fmt))
    tail, _ = ingest.parse_any(Path(NAMES[fmt]), b"".join(lines[cut:]), Reading(fmt), first_line=n_head + 1)
    joined = rec.unify_tables([head.table, tail.table])  # as a run joins its blocks
    # A column the log fills with values of several JSON kinds is typed per block (text when they clash), so
    # a cut may type it otherwise; every other column reads the same.
    mixed = _mixed_kinds(records)
    keep = [c for c in whole.table.column_names if c not in mixed]
    assert sorted(joined.column_names) == sorted(whole.table.column_names)
    assert rows(jsonl.ParsedBlock(joined.select(keep))) == rows(jsonl.ParsedBlock(whole.table.select(keep)))
    assert head.bad + tail.bad == whole.bad and head.warnings + tail.warnings == whole.warnings


def _mixed_kinds(records: list[dict[str, Any]]) -> set[str]:
    """Keys whose values are of more than one JSON kind (a number and a list, a boolean and a string...)."""
    kinds: dict[str, set[str]] = {}
    for record in records:
        for key, value in record.items():
            if value is not None:
                kinds.setdefault(key, set()).add(
                    "number" if isinstance(value, (int, float)) else type(value).__name__
                )
    return {key for key, found in kinds.items() if len(found) > 1}


trl_row = st.fixed_dictionaries(
    {
        "prompt": words,
        "completion": words,
        "accuracy": st.floats(0, 1, width=32) | st.just(math.nan),
        "fmt": st.floats(0, 1, width=32) | st.just(math.nan),
    }
)


def _trl_table(step: int, groups: list[list[dict[str, Any]]], conversational: bool, extra: bool) -> pa.Table:
    rows_ = [dict(r, prompt=g[0]["prompt"]) for g in groups for r in g]  # a group shares its prompt
    table: dict[str, list[Any]] = {"step": [step] * len(rows_)}
    if conversational:
        table["prompt"] = [[{"role": "user", "content": r["prompt"]}] for r in rows_]
        table["completion"] = [[{"role": "assistant", "content": r["completion"]}] for r in rows_]
    else:
        table["prompt"] = [r["prompt"] for r in rows_]
        table["completion"] = [r["completion"] for r in rows_]
    table["accuracy"] = [r["accuracy"] for r in rows_]
    table["fmt"] = [r["fmt"] for r in rows_]
    if extra:
        table["length"] = [float(len(r["completion"])) for r in rows_]
    table["advantage"] = [0.0] * len(rows_)
    return pa.table(table)


@SETTINGS
@given(
    groups=st.lists(st.lists(trl_row, min_size=2, max_size=2), min_size=1, max_size=3),
    conversational=st.booleans(),
    extra=st.booleans(),
)
def test_trl_tables_read_alike_on_both_paths(groups: list, conversational: bool, extra: bool) -> None:
    buffer = io.BytesIO()
    pq.write_table(_trl_table(3, groups, conversational, extra), buffer)
    reading = Reading("trl", {}, {"reward_functions": ["accuracy", "fmt"]})
    found = ingest.parse_paths(Path("completions_00003.parquet"), buffer.getvalue(), reading)
    assert found["table"] is not None, "the table path must take TRL's own tables"
    assert_same(found)
    table = found["table"].table
    for row in table.to_pylist():  # the reward: the functions' sum, NaN skipped, NaN when none scored
        parts = [v for v in (row["accuracy"], row["fmt"]) if not math.isnan(v)]
        assert (
            math.isnan(row["reward"]) if not parts else math.isclose(row["reward"], sum(parts), rel_tol=1e-6)
        )


exported = st.lists(
    st.fixed_dictionaries(
        {"prompt": words, "response": words, "reward": plain, "logprobs": st.lists(plain, max_size=3)}
    ),
    min_size=1,
    max_size=5,
)


@SETTINGS
@given(exported)
def test_an_exported_dataset_reads_alike_on_both_paths(samples: list[dict[str, Any]]) -> None:
    table = pa.Table.from_pylist(
        [dict(s, sample=i, file="r0.jsonl", line=i + 1) for i, s in enumerate(samples)]
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    found = ingest.parse_paths(Path("step=2/part-0.parquet"), buffer.getvalue(), Reading("rl-board-parquet"))
    assert found["table"] is not None
    assert_same(found)
    assert found["table"].table.column("step").to_pylist() == [2] * len(samples)


def test_every_format_is_exercised() -> None:
    """A new format needs its generator here."""
    covered = set(JSONL) | {"trl", "rl-board-parquet"}
    assert {f.name for f in formats.FORMATS} <= covered
