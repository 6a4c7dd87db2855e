"""TRL's completions table, read as TRL means it.

``GRPOTrainer(log_completions=True)`` writes
``completions/completions_{step:05d}.parquet``: ``step``, ``prompt``,
``completion`` (text, or message lists for a conversational dataset), one
float column per reward function, then the ``log_extra`` columns (sorted by
name), then ``advantage``. The reward TRL trains on is the weighted sum of the
reward functions (``reward_weights``), NaN skipped, NaN for a row no function
could score; neither the weights nor which columns are reward functions are
in the file. So:

1. A field map ``reward = "a + 0.5*b"`` (rl-board.toml, ``--field``, the Fields
   panel) names them, weights included; the reader composes it.
2. Else the names TRL logged (``rewards/<fn>/mean`` in ``trainer_state.json``
   beside the run) are the reward functions, weighted 1, and a note says so.
3. Else the advantage TRL logged tells: it was computed from the reward, so
   the leading number columns whose sum reproduces it are the functions.
4. Else every leading number column counts, and a note asks to name them.

The samples of one prompt are the rows that repeat it back to back (TRL's
``num_generations``), so each gets a ``group`` id, as TRL groups them.

The table logs no finish reason. A tool run's completion that ends on an
assistant's calls with no tool message after them was stopped by the tool
loop before it ran them: read as ``tool_budget`` (``max_tool_calling_iterations``).
TRL also leaves that shape when the results would have pushed the completion
past ``max_completion_length`` (it rolls them back); the table cannot tell the
two apart, ``integrations.trl.RLBoardCallback`` can (it knows the limit).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pyarrow as pa

from rl_board import columns
from rl_board.formats import kept, rewards
from rl_board.formats.base import Adapted, Format, Options, Probe, Record
from rl_board.formats.flat import GROUP
from rl_board.formats.schema import KNOWN_FIELDS, PROMPT, REWARD, STEP
from rl_board.lazy import pc

ADVANTAGE = "advantage"
FUNCTIONS_OPTION = "reward_functions"  # names found beside the run (TRL's logged metrics)
_EPS = 1e-4  # TRL's std guard in the advantage
_NOT_PARTS = frozenset({ADVANTAGE, GROUP, "_line"})
TRL_MAP = {"completion": "response"}


def _is_trl(record: Record) -> bool:
    return {"prompt", "completion"} <= record.keys() and "task_id" not in record


def number_columns(table: pa.Table) -> list[str]:
    """The leading run of float columns among the log's own: where TRL puts its reward functions."""
    out: list[str] = []
    for f in table.schema:
        if f.name in KNOWN_FIELDS or f.name in _NOT_PARTS or f.name.startswith("_"):
            continue
        if not pa.types.is_floating(f.type):  # TRL's reward columns come from a float tensor
            if out:
                break
            continue
        out.append(f.name)
    return out


def group_ids(table: pa.Table) -> np.ndarray:
    """Each row's group: runs of one prompt repeated back to back, cut into TRL's ``num_generations``,
    numbered from 0 at each step (a file of several steps, as a tracker keeps them, numbers them as TRL's
    own file per step does). Worked out over whole columns: a row by row pass took ~0.5 us a row."""
    n = table.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    steps = _step_codes(table)
    prompts = kept.value_codes(table.column(PROMPT), nulls=True)
    changed = np.ones(n, dtype=bool)  # where a run of one prompt (at one step) starts
    changed[1:] = (prompts[1:] != prompts[:-1]) | (steps[1:] != steps[:-1])
    lengths = np.diff(np.append(np.flatnonzero(changed), n))
    size = max(int(np.gcd.reduce(lengths)), 1)
    _, first_row, step_of_row = np.unique(steps, return_index=True, return_inverse=True)
    return (np.arange(n) - first_row[step_of_row.reshape(-1)]) // size


def _step_codes(table: pa.Table) -> np.ndarray:
    """Each row's step as a code equal for equal steps (a missing step is a step of its own): the steps
    themselves need not be numbers."""
    if STEP not in table.column_names:
        return np.zeros(table.num_rows, dtype=np.int64)
    return kept.value_codes(table.column(STEP), nulls=True)


def with_groups(table: pa.Table) -> pa.Table:
    """The table with a ``group`` column (``group_ids`` as text) unless it has one."""
    if GROUP in table.column_names or not table.num_rows:
        return table
    ids = columns.from_numpy(group_ids(table), pa.int64())
    return table.append_column(GROUP, pc.cast(ids, pa.string()))


def _adapt(table: pa.Table, options: Options) -> Adapted:
    table = with_groups(table)
    if rewards.components_of(table.schema) is not None or table.column(REWARD).null_count < table.num_rows:
        return Adapted(table)  # a field map made or named the reward
    terms, how = reward_functions(table, options)
    if not terms:
        return Adapted(table)
    adapted = Adapted(rewards.with_reward(table, terms, how))
    if how == ALL_NUMBERS and len(terms) > 1:
        names = " + ".join(terms)
        adapted.notes.append(
            (
                0,
                f"reward = {names}: TRL does not say which of these number columns are reward "
                "functions and which are log_extra columns; if some are not, name the reward in "
                f'rl-board.toml [fields] as reward = "{names}" minus those',
            )
        )
    return adapted


LOGGED, ADVANTAGES, ALL_NUMBERS = "TRL's logged metrics", "TRL's advantages", "all number columns"


def reward_functions(table: pa.Table, options: Options) -> tuple[dict[str, float], str]:
    """Which columns are the reward functions (each weighted 1), and how that was found."""
    candidates = number_columns(table)
    logged = [n for n in options.get(FUNCTIONS_OPTION) or () if n in table.column_names]
    if logged:
        return dict.fromkeys(logged, 1.0), LOGGED
    if len(candidates) <= 1:
        return dict.fromkeys(candidates, 1.0), ALL_NUMBERS if candidates else ""
    found = prefix_from_advantages(table, candidates)
    if found is not None:
        return dict.fromkeys(candidates[:found], 1.0), ADVANTAGES
    return dict.fromkeys(candidates, 1.0), ALL_NUMBERS


def prefix_from_advantages(table: pa.Table, candidates: list[str]) -> int | None:
    """How many leading columns, summed unweighted, give the advantages TRL logged (None if no count does).

    A column that is constant within every group changes no advantage, so several counts can fit; the
    most is taken, as TRL's reward functions come before its log_extra columns.
    """
    if ADVANTAGE not in table.column_names or not table.num_rows:
        return None
    logged = columns.to_numpy(pc.cast(table.column(ADVANTAGE), pa.float64()))
    if not np.isfinite(logged).any():
        return None
    groups = kept.group_codes(with_groups(table))  # per step: TRL's groups never span steps
    alone = groups < 0  # a row of no group (in a log's own group column) is a group of its own
    groups[alone] = len(groups) + np.flatnonzero(alone)
    fits = None
    for k in range(1, len(candidates) + 1):
        reward = rewards.weighted_sum(table, dict.fromkeys(candidates[:k], 1.0)).to_numpy(
            zero_copy_only=False
        )
        if any(_close(expected, logged) for expected in trl_advantages(reward, groups)):
            fits = k
    return fits


def trl_advantages(reward: np.ndarray, groups: np.ndarray) -> list[np.ndarray]:
    """The advantages TRL would log for this reward, one array per setting of ``scale_rewards``.

    ``(r - group mean) / (std + 1e-4)``, the std over the group ("group") or the batch ("batch"), or no
    division ("none"); NaN-aware, with NaN advantages (unscorable rows) set to 0, as TRL does.
    """
    mean, std = _group_stats(reward, groups)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, as TRL's own
        centred = reward - mean
        outs = [centred, centred / (std + _EPS)]
        if np.isfinite(reward).sum() > 1:
            outs.append(centred / (_nanstd(reward) + _EPS))
    return [np.nan_to_num(a, nan=0.0) for a in outs]


def _group_stats(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's group's NaN-aware mean and sample std (TRL's ``nanmean`` and ``nanstd``); NaN for a group
    with no finite value, and the std NaN for a group of fewer than two numbers. Whole columns: one pass
    per group cost ~50 us each, ~0.1 s for a TRL file of 20k samples."""
    if not len(values):
        return np.full(0, np.nan), np.full(0, np.nan)
    _, row_group = np.unique(groups, return_inverse=True)
    row_group = row_group.reshape(-1)
    numbers = ~np.isnan(values)
    count = np.bincount(row_group, weights=numbers)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(row_group, weights=np.where(numbers, values, 0.0)) / count
        deviation = np.where(numbers, values - mean[row_group], 0.0)
        std = np.sqrt(np.bincount(row_group, weights=deviation * deviation) / (count - 1))
    std[count < 2] = np.nan
    scored = np.bincount(row_group, weights=np.isfinite(values)) > 0
    mean[~scored] = np.nan
    std[~scored] = np.nan
    return mean[row_group], std[row_group]


def _nanstd(values: np.ndarray) -> float:
    """TRL's ``nanstd``: the sample std (Bessel) over the values that are not NaN."""
    numbers = values[~np.isnan(values)]
    return float(np.std(numbers, ddof=1)) if len(numbers) > 1 else math.nan


def _close(expected: np.ndarray, logged: np.ndarray) -> bool:
    """Equal to float32 precision (TRL computes in float32), on the rows where both are numbers."""
    both = np.isfinite(expected) & np.isfinite(logged)
    if not both.any():
        return False
    return bool(np.allclose(expected[both], logged[both], rtol=1e-3, atol=1e-3))


TRAINER_STATE = "trainer_state.json"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_REWARD_MEAN = re.compile(r"^(?:train/)?rewards/(.+)/mean$")
_NAMES_SEEN: dict[tuple[str, tuple[int, int]], tuple[str, ...]] = {}


def trainer_state(base: Path, probe: Probe) -> Path | None:
    """``checkpoint-N/trainer_state.json`` of the highest N under ``base`` that the probe may read."""
    found = [
        (int(m.group(1)), base / name / TRAINER_STATE)
        for name in probe.names(base)
        if (m := _CHECKPOINT.match(name))
    ]
    return next((path for _, path in sorted(found, reverse=True) if probe.version(path) is not None), None)


def reward_function_names(path: Path, probe: Probe) -> tuple[str, ...]:
    """The reward functions TRL logged a mean for, in the order it logged them (read once per file
    version)."""
    version = probe.version(path)
    if version is None:
        return ()
    key = (str(path), version)
    if key not in _NAMES_SEEN:
        if len(_NAMES_SEEN) > 64:
            _NAMES_SEEN.clear()
        _NAMES_SEEN[key] = _logged_reward_names(probe.read(path))
    return _NAMES_SEEN[key]


def _logged_reward_names(data: bytes | None) -> tuple[str, ...]:
    try:
        history = json.loads(data or b"").get("log_history") or []
    except (ValueError, AttributeError):
        return ()
    names: dict[str, None] = {}
    for entry in history:
        for key in entry if isinstance(entry, dict) else ():
            match = _REWARD_MEAN.match(str(key))
            if match:
                names.setdefault(match.group(1))
    return tuple(names)


def _companions(folder: Path, probe: Probe) -> Options:
    """The reward functions named in the newest checkpoint beside ``completions/`` (see the module
    docstring)."""
    base = folder.parent if folder.name == "completions" else folder
    state = trainer_state(base, probe)
    names = reward_function_names(state, probe) if state is not None else ()
    return {FUNCTIONS_OPTION: list(names)} if names else {}


TRL = Format(
    "trl",
    "TRL completions table",
    _is_trl,
    renames=TRL_MAP,
    adapt=_adapt,
    field_map=(("completion", "response"),),
    notes="reward = the weighted sum of the reward-function columns (NaN skipped; NaN when none scored)",
    kept=("advantage", "group"),
    open_calls_end="tool_budget",
    companions=_companions,
)
