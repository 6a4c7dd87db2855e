"""The registry of metric kinds: every store rl-board reads scalar metrics from, one line each.

A new kind is one module defining a ``kind.MetricKind`` subclass plus one
line here. The order is the order a file is offered to the kinds (the first
that reads it takes it) and the order folders are asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rl_board.metrics.dilogs import DiEngineKind
from rl_board.metrics.kind import MetricKind
from rl_board.metrics.mlflow_store import MlflowKind
from rl_board.metrics.stdout import TextLogKind
from rl_board.metrics.swanlab_log import SwanlabKind
from rl_board.metrics.tensorboard import TensorboardKind
from rl_board.metrics.trackio_db import TrackioKind
from rl_board.metrics.trainer_state import TrainerStateKind
from rl_board.metrics.wandb_log import WandbKind
from rl_board.sources import members
from rl_board.sources.catalogue import Catalogue, catalogue

KINDS: tuple[MetricKind, ...] = (
    WandbKind(),  # a W&B run folder is claimed whole: its debug logs are no text logs to read
    SwanlabKind(),
    DiEngineKind(),  # before TensorBoard: its event files are part of the experiment
    TensorboardKind(),
    TrainerStateKind(),
    TextLogKind(),
    MlflowKind(),  # a database is offered to MLflow first: it knows its own tables
    TrackioKind(),
)
_BY_NAME = {kind.name: kind for kind in KINDS}
for _kind in KINDS:
    if _kind.keeps_rollouts:  # its runs' samples are found and read as rollout runs
        members.register(_kind)


def by_name(name: str) -> MetricKind:
    """The kind named ``name`` (KeyError for a name no kind has)."""
    return _BY_NAME[name]


def label(run_kind: str) -> str:
    """How a run kind (a kind's name or one of its variants) is named on a page."""
    for kind in KINDS:
        if run_kind == kind.name or run_kind in kind.variants:
            return kind.label_of(run_kind)
    return run_kind


def logs_copies(run_kind: str) -> bool:
    """Whether runs of this kind log each statistic more than once (see ``MetricKind.logs_copies``)."""
    return any(run_kind == k.name and k.logs_copies for k in KINDS)


def names() -> list[str]:
    """Every kind's name, and every variant a run of a kind can turn out to be."""
    return [n for kind in KINDS for n in (kind.name, *kind.variants)]


def metric_catalogue(root: Path, **options: Any) -> Catalogue:
    """The root's catalogue with every metric kind looking for its runs (``sources.catalogue`` options)."""
    return catalogue(root, metric_kinds=KINDS, **options)
