"""The metrics a Hugging Face ``Trainer`` (TRL's among them) keeps in ``checkpoint-N/trainer_state.json``.

``log_history`` is one dict per logging step: ``step``, ``epoch`` and every
metric the trainer logged then (TRL's GRPO: ``reward``, ``reward_std``,
``rewards/<fn>/mean``, ``frac_reward_zero_std``, ``kl``, ``completions/mean_length``...).
Each checkpoint holds the whole history up to it, so only the newest
checkpoint's file is a metric source (the catalogue picks it).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rl_board.metrics.kind import MetricKind, RunSource
from rl_board.metrics.table import Problem, ReadResult, TableSet
from rl_board.sources import companions
from rl_board.sources.claims import Found

SOURCE = "trainer_state"
_NOT_METRICS = frozenset({"step", "epoch"})


class TrainerStateKind(MetricKind):
    """The newest checkpoint's ``trainer_state.json``, named for the output folder the checkpoints are in
    (older checkpoints' copies hold a part of the same history: passed over)."""

    name = "trainer-state"
    label = "HF trainer state"

    def claim_file(self, path: Path, allowed: list[Path] | None = None) -> list[Found]:
        if path.name != companions.TRAINER_STATE:
            return []
        newest = companions.newest_trainer_state(path.parent.parent, allowed)
        if newest is None or newest != path:
            return [Found(path, quiet=True)]
        return [
            Found(
                path,
                (path,),
                "a Hugging Face trainer's logged metrics (log_history)",
                named_by=path.parent.parent,
            )
        ]

    def read(self, source: RunSource, allowed_roots: list[Path] | None) -> ReadResult:
        return read_trainer_state(source.path, source.run)


def read_trainer_state(path: Path, run: str) -> ReadResult:
    """Every numeric entry of ``log_history`` as a scalar by step; a file that is not one is a problem."""
    tables = TableSet()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        tables.problems.append(Problem(str(path), f"not a readable trainer state ({err})"))
        return tables.result()
    history = data.get("log_history") if isinstance(data, dict) else None
    if not isinstance(history, list):
        tables.problems.append(Problem(str(path), "no log_history in this trainer state"))
        return tables.result()
    for number, entry in enumerate(history, start=1):
        step = entry.get("step") if isinstance(entry, dict) else None
        if not isinstance(step, (int, float)) or isinstance(step, bool) or not math.isfinite(step):
            tables.problems.append(Problem(str(path), "log_history entry without a step", number))
            continue
        for tag, value in entry.items():
            if tag not in _NOT_METRICS and _number(value):
                tables.scalars.add(
                    run=run, source=SOURCE, tag=tag, step=int(step), value=float(value), wall_time=math.nan
                )
    return tables.result({"formats": [SOURCE]})


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
