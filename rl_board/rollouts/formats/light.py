"""Formats whose records are one flat sample each: rl-board's own, verl, TRL, AReaL, SkyRL.

Each maps its keys onto rl-board's fields and keeps every other key as a
column. verl's v1 ``uid`` and AReaL's task id become a ``group`` column (the
samples of one prompt); TRL's reward functions stay as their own columns and
``reward`` is their row sum (NaN skipped), as TRL itself adds them up.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from rl_board.rollouts import dataset
from rl_board.rollouts.formats.base import Format, Record, number, renamed
from rl_board.rollouts.read.tables import row_sum
from rl_board.rollouts.schema import KNOWN_FIELDS as KNOWN

RL_BOARD_KEYS = frozenset({"prompt", "response", "reward", "response_tokens", "logprobs", "ref_logprobs",
                           "ground_truth", "ref_response", "token_rewards"})  # fmt: skip
TRL_FIXED = frozenset({"step", "prompt", "completion", "advantage"})


def _native(record: Record) -> bool:
    return bool(RL_BOARD_KEYS & record.keys())


def _as_is(record: Record) -> list[Record]:
    return [record]


RL_BOARD = Format("rl-board", "rl-board rollout log", _native, _as_is, renames={})


# -- rl-board's Parquet dataset (rl-board export --format parquet, or a Spark job writing that layout) -------
def _is_dataset(record: Record) -> bool:
    return dataset.is_dataset_table(frozenset(record))


def _from_dataset(record: Record) -> list[Record]:
    return dataset.from_dataset(pa.Table.from_pylist([record])).to_pylist()


RL_BOARD_PARQUET = Format("rl-board-parquet", "rl-board Parquet dataset (step=N/ folders)", _is_dataset,
                          _from_dataset, (("file", "source_file"), ("line", "source_line")),
                          notes="derived columns recomputed from the token arrays", renames={},
                          table_post=dataset.from_dataset)  # fmt: skip

# -- verl: {step}.jsonl with input / output / gts / score -------------------------------------------------
VERL_MAP = {"input": "prompt", "output": "response", "score": "reward", "gts": "ground_truth"}


def _is_verl(record: Record) -> bool:
    return {"input", "output"} <= record.keys() and ("score" in record or "gts" in record)


def _verl(record: Record) -> list[Record]:
    out = renamed(record, VERL_MAP)
    uid = record.get("uid")
    if isinstance(uid, str) and "_" in uid:
        out["group"] = uid.split("_", 1)[0]
    return [out]


def _verl_groups(table: pa.Table) -> pa.Table:
    """v1 trainer: ``uid`` = "{prompt uuid}_{session}_{index}"; samples of one prompt share the first part."""
    if "uid" not in table.column_names or "group" in table.column_names:
        return table
    uid = table.column("uid")
    if not pa.types.is_string(uid.type):
        return table
    return table.append_column("group", pc.list_element(pc.split_pattern(uid, "_", max_splits=1), 0))


VERL = Format("verl", "verl rollout dump", _is_verl, _verl, tuple(VERL_MAP.items()),
              kept=("acc", "pred", "request_id", "uid"), renames=VERL_MAP, table_post=_verl_groups)  # fmt: skip

# -- TRL: completions/completions_{step:05d}.parquet ---------------------------------------------------


def _is_trl(record: Record) -> bool:
    return {"prompt", "completion"} <= record.keys() and "task_id" not in record


def _trl(record: Record) -> list[Record]:
    out = renamed(record, {"completion": "response"})
    parts = [number(v) for k, v in record.items() if k not in TRL_FIXED and _numeric(v)]
    finite = [p for p in parts if p is not None and math.isfinite(p)]
    if parts:
        out["reward"] = math.fsum(finite) if finite else 0.0
    return [out]


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _trl_reward(table: pa.Table) -> pa.Table:
    """reward = the row sum of the reward-function columns, unless a field map named the reward."""
    reward = table.column("reward")
    if reward.null_count < table.num_rows:
        return table
    parts = [name for name in table.column_names if name not in TRL_FIXED and name not in KNOWN
             and name != "response" and _numeric_type(table.schema.field(name).type)]
    if not parts:
        return table
    return table.set_column(table.schema.get_field_index("reward"), "reward", row_sum(table, parts))


def _numeric_type(kind: pa.DataType) -> bool:
    return pa.types.is_floating(kind) or pa.types.is_integer(kind)


TRL = Format("trl", "TRL completions table", _is_trl, _trl, (("completion", "response"),),
             notes="reward = sum of the reward-function columns (NaN skipped)",
             renames={"completion": "response"}, table_post=_trl_reward)  # fmt: skip

# -- AReaL: rollout/{version}/{task_id}.jsonl ---------------------------------------------------------------
AREAL_MAP = {"completion": "response", "tail_version": "step"}


def _is_areal(record: Record) -> bool:
    return {"task_id", "completion"} <= record.keys() and "tail_version" in record


def _areal(record: Record) -> list[Record]:
    out = renamed(record, AREAL_MAP)
    out["group"] = str(record.get("task_id"))
    return [out]


def _areal_groups(table: pa.Table) -> pa.Table:
    if "task_id" not in table.column_names or "group" in table.column_names:
        return table
    return table.append_column("group", pc.cast(table.column("task_id"), pa.string()))


AREAL = Format("areal", "AReaL trajectory dump", _is_areal, _areal, tuple(AREAL_MAP.items()),
               kept=("task_id", "sample_idx", "seqlen", "prompt_len", "head_version"), renames=AREAL_MAP,
               table_post=_areal_groups)  # fmt: skip

# -- SkyRL: dumped_evals/global_step_{N}_evals/{data_source}.jsonl -------------------------------------------
SKYRL_MAP = {"input_prompt": "prompt", "output_response": "response", "score": "reward"}


def _is_skyrl(record: Record) -> bool:
    return {"input_prompt", "output_response"} <= record.keys()


def _skyrl(record: Record) -> list[Record]:
    out = renamed(record, SKYRL_MAP)
    score = record.get("score")
    if isinstance(score, list):  # a per-token score: the sequence reward is its sum
        values = [number(v) for v in score]
        out["reward"] = math.fsum(v for v in values if v is not None)
    return [out]


SKYRL = Format("skyrl", "SkyRL evaluation dump", _is_skyrl, _skyrl, tuple(SKYRL_MAP.items()),
               kept=("stop_reason", "env_class", "data_source", "env_extras"), renames=SKYRL_MAP)  # fmt: skip
