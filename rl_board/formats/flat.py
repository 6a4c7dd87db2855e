"""Formats whose records are one flat sample each: rl-board's own, its Parquet dataset, verl, AReaL, SkyRL.

Each maps its keys onto rl-board's fields and keeps every other key as a
column; its ``adapt`` adds what the keys imply (a ``group`` column from verl's
``uid`` or AReaL's task id). TRL, whose reward is made of parts, has its own
module (``trl.py``).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from rl_board.formats.base import Adapted, Format, Options, Record
from rl_board.formats.schema import DERIVED_SAMPLE_FIELDS, DERIVED_TOKEN_LISTS, PROMPT, RESPONSE
from rl_board.lazy import pc

GROUP = "group"
RL_BOARD_KEYS = frozenset(
    {
        "prompt",
        "response",
        "reward",
        "response_tokens",
        "logprobs",
        "ref_logprobs",
        "ground_truth",
        "ref_response",
        "token_rewards",
    }
)


def groups_from_uid(table: pa.Table) -> pa.Table:
    """verl's ``uid``: a prompt's id (v0), or ``"{prompt id}_{session}_{index}"`` (v1); its first part is the
    group.

    Forks of verl that write rl-board's own format keep the ``uid`` too. A ``group`` the log has wins.
    """
    if "uid" not in table.column_names or GROUP in table.column_names:
        return table
    uid = table.column("uid")
    if not (pa.types.is_string(uid.type) or pa.types.is_large_string(uid.type)):
        return table
    return table.append_column(GROUP, pc.list_element(pc.split_pattern(uid, "_", max_splits=1), 0))


def _native(record: Record) -> bool:
    return bool(RL_BOARD_KEYS & record.keys())


def _native_adapt(table: pa.Table, options: Options) -> Adapted:
    return Adapted(groups_from_uid(table))


RL_BOARD = Format("rl-board", "rl-board rollout log", _native, adapt=_native_adapt)


# -- rl-board's Parquet dataset (rl-board export --format parquet, or a Spark job writing that layout) -------
SOURCE_COLUMNS = ("sample", "file", "line")  # where a sample came from, in the exported files


def is_dataset_table(names: set[str] | frozenset[str]) -> bool:
    """Whether a Parquet file's columns are an exported run's (its source columns beside a response)."""
    return set(SOURCE_COLUMNS) <= names and bool({RESPONSE, PROMPT} & names)


def from_dataset(table: pa.Table) -> pa.Table:
    """An exported step file read back as logged samples: derived columns dropped (they are recomputed
    exactly from the token arrays), the source file and line kept as ``source_file`` / ``source_line``."""
    drop = [c for c in (*DERIVED_SAMPLE_FIELDS, *DERIVED_TOKEN_LISTS, "sample") if c in table.column_names]
    return from_dataset_names(table.drop_columns(drop))


def from_dataset_names(table: pa.Table) -> pa.Table:
    """``file`` and ``line`` (where a sample was first logged) kept as ``source_file`` / ``source_line``."""
    names = [{"file": "source_file", "line": "source_line"}.get(n, n) for n in table.column_names]
    return table.rename_columns(names)


def _is_dataset(record: Record) -> bool:
    return is_dataset_table(frozenset(record))


def _dataset_adapt(table: pa.Table, options: Options) -> Adapted:
    return Adapted(from_dataset(table))


RL_BOARD_PARQUET = Format(
    "rl-board-parquet",
    "rl-board Parquet dataset (step=N/ folders)",
    _is_dataset,
    adapt=_dataset_adapt,
    field_map=(("file", "source_file"), ("line", "source_line")),
    notes="derived columns recomputed from the token arrays",
)

# -- verl: {step}.jsonl with input / output / gts / score -------------------------------------------------
VERL_MAP = {"input": "prompt", "output": "response", "score": "reward", "gts": "ground_truth"}


def _is_verl(record: Record) -> bool:
    return {"input", "output"} <= record.keys() and ("score" in record or "gts" in record)


VERL = Format(
    "verl",
    "verl rollout dump",
    _is_verl,
    renames=VERL_MAP,
    adapt=_native_adapt,
    field_map=tuple(VERL_MAP.items()),
    kept=("acc", "pred", "request_id", "uid"),
    open_calls_end="turn_limit",
)

# -- AReaL: rollout/{version}/{task_id}.jsonl ---------------------------------------------------------------
AREAL_MAP = {"completion": "response", "tail_version": "step"}


def _is_areal(record: Record) -> bool:
    return {"task_id", "completion"} <= record.keys() and "tail_version" in record


def _areal_adapt(table: pa.Table, options: Options) -> Adapted:
    """The samples of one task form its group."""
    if "task_id" not in table.column_names or GROUP in table.column_names:
        return Adapted(table)
    return Adapted(table.append_column(GROUP, pc.cast(table.column("task_id"), pa.string())))


AREAL = Format(
    "areal",
    "AReaL trajectory dump",
    _is_areal,
    renames=AREAL_MAP,
    adapt=_areal_adapt,
    field_map=tuple(AREAL_MAP.items()),
    kept=("task_id", "sample_idx", "seqlen", "prompt_len", "head_version"),
    numbered_step_folders=True,
)

# -- SkyRL: dumped_evals/global_step_{N}_evals/{data_source}.jsonl -------------------------------------------
SKYRL_MAP = {"input_prompt": "prompt", "output_response": "response", "stop_reason": "finish_reason"}


def _is_skyrl(record: Record) -> bool:
    return {"input_prompt", "output_response"} <= record.keys()


def _skyrl_adapt(table: pa.Table, options: Options) -> Adapted:
    """``score`` is the reward: a number, or a per-token list whose sum is the sequence's reward."""
    if "score" not in table.column_names or table.column("reward").null_count < table.num_rows:
        return Adapted(table)
    reward = pa.array([_score_sum(v) for v in table.column("score").to_pylist()], pa.float64())
    return Adapted(table.set_column(table.schema.get_field_index("reward"), "reward", reward))


def _score_sum(value: object) -> float | None:
    """A score as a number; a list of per-token scores (or its JSON text) as their sum (nulls skipped)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if value is None:
        return None
    if isinstance(value, (bool, int, float)):  # a boolean score counts 1 or 0, as a boolean reward does
        return float(value)
    if isinstance(value, list):
        numbers = [float(v) for v in value if isinstance(v, (bool, int, float))]
        return float(np.sum(numbers)) if numbers else None
    return None


SKYRL = Format(
    "skyrl",
    "SkyRL evaluation dump",
    _is_skyrl,
    renames=SKYRL_MAP,
    adapt=_skyrl_adapt,
    field_map=(*SKYRL_MAP.items(), ("score", "reward")),
    kept=("score", "env_class", "data_source", "env_extras"),
)
