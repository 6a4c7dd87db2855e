"""Running the health rules: every rule set registered, one call per kind of input.

Import this module (not the rule modules) to check something: it loads both
rule sets, so the registry is complete, and keeps callers from depending on
which module a rule lives in.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rl_board.errors import RLBoardError
from rl_board.health import (  # noqa: F401  (rules register on import)
    pattern_rules,
    rollout_rules,
    scalar_rules,
    trainer_rules,
    trajectory_rules,
)
from rl_board.health.engine import (
    REGISTRY,
    SETTINGS_FILE,
    SEVERITIES,
    Finding,
    RunSeries,
    Settings,
    duplicate_copies,
    load_settings,
    parse_set_option,
    run_rules,
    worst_severity,
)
from rl_board.health.rollout_rules import RolloutRun, check_rollouts
from rl_board.metrics import kinds as _kinds  # noqa: F401  (runs inside trackers' stores register on import)
from rl_board.metrics.table import Problem
from rl_board.rollouts.store import RolloutStore

__all__ = [
    "REGISTRY",
    "SETTINGS_FILE",
    "SEVERITIES",
    "Finding",
    "RolloutRun",
    "Settings",
    "check_rollout_runs",
    "check_rollouts",
    "check_scalars",
    "duplicate_copies",
    "load_settings",
    "parse_set_option",
    "worst_severity",
]


def check_scalars(
    scalars: pd.DataFrame, *, histograms: pd.DataFrame | None = None, settings: Settings | None = None
) -> list[Finding]:
    """Run the scalar rules on every run of a long scalar table (and its histograms)."""
    findings: list[Finding] = []
    for run in sorted(scalars["run"].unique()) if len(scalars) else []:
        hist = histograms[histograms["run"] == run] if histograms is not None and len(histograms) else None
        findings.extend(run_rules("scalars", RunSeries.build(str(run), scalars, hist), settings=settings))
    return findings


def check_rollout_runs(
    root: str | Path,
    *,
    cache_dir: str | Path | None = None,
    settings: Settings | None = None,
    fields: dict[str, str] | None = None,
) -> tuple[list[Finding], list[Problem]]:
    """Open every rollout run under `root` (through the cache) and check it.

    Run names are the folders relative to `root`, as `RolloutStore.list_runs`
    gives them. A run that cannot be opened becomes a problem, not an error.
    """
    findings: list[Finding] = []
    problems: list[Problem] = []
    for row in RolloutStore.list_runs(root, cache_dir=cache_dir, fields=fields).itertuples():
        try:
            store = RolloutStore.open(row.path, cache_dir=cache_dir, fields=fields)
        except RLBoardError as err:
            problems.append(Problem(str(row.path), f"rollout run not checked: {err}"))
            continue
        findings.extend(check_rollouts(RolloutRun.from_store(str(row.run), store), settings=settings))
    return findings, problems
