"""rl-board from Python: the questions its pages and its CLI answer, asked from a notebook.

    import rl_board
    run = rl_board.open("rollout_samples/ppo_math")      # a folder, one file, or s3://... / hf://...
    run.steps, run.num_samples
    run.samples(step=3, columns=["reward", "response"])   # one row per sample
    run.tokens(step=3, sample=0)                          # one row per response token
    run.sql("SELECT step, avg(reward) FROM samples GROUP BY step")
    rl_board.scalars("runs/")                             # run, source, tag, step, value, wall_time
    rl_board.check("runs/").findings                      # what `rl-board check --json` prints

Each answer is the one the CLI prints for the same question (the CLI asks
through here: ``cli/check.py``, ``cli/scalars.py``, ``cli/query.py``), read
through the same cache. Errors are rl-board's own (``rl_board.errors``), with
messages fit to show. Nothing here imports Streamlit.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_board.errors import NotFoundError

# Each question imports what answers it: `rl-board scalars` reads no rollout, `summary` no metric index.
if TYPE_CHECKING:
    import pandas as pd

    from rl_board.formats.fieldmap import FieldMap
    from rl_board.metrics.index import MetricsIndex
    from rl_board.rollouts.store import RolloutStore

Findings = list[dict[str, Any]]


def local_copy(path: str | Path, cache_dir: str | Path | None) -> Path:
    """A path as given, or a URL's copy in the cache brought up to date now (new bytes only)."""
    from rl_board.config import default_cache_dir
    from rl_board.sources import remote

    if not remote.is_url(str(path)):
        return Path(path).expanduser()
    return remote.mirror(str(path), Path(cache_dir).expanduser() if cache_dir else default_cache_dir()).local


class Run:
    """An opened rollout run: its steps and samples, their tokens, and SQL over them (``samples``, ``steps``,
    ``turns``, ``tool_calls``...: the views of ``rl-board query``). ``store`` is the whole store, for what
    this short list does not name."""

    def __init__(self, store: RolloutStore) -> None:
        self.store = store

    def __repr__(self) -> str:
        return (
            f"rl_board.Run({str(self.store.run_dir)!r}: {self.num_samples} samples, {len(self.steps)} steps)"
        )

    @property
    def path(self) -> Path:
        return self.store.run_dir

    @property
    def steps(self) -> builtins.list[int]:
        return self.store.steps

    @property
    def num_samples(self) -> int:
        return self.store.num_samples

    def samples(self, step: int | None = None, columns: builtins.list[str] | None = None) -> pd.DataFrame:
        """One row per sample (every step when ``step`` is None): step, sample, file, line and the columns
        asked for (every logged and derived one when None)."""
        return self.store.samples(step=step, columns=columns)

    def tokens(self, step: int, sample: int) -> pd.DataFrame:
        """One row per response token of one sample: its text, log-probs, KL terms, rewards and values where
        logged."""
        return self.store.sample(step=step, index=sample).tokens

    def sql(self, query: str, *, timeout: float | None = None, max_rows: int | None = None) -> pd.DataFrame:
        """One read-only SQL statement (DuckDB) over the run's views: every row, or the first ``max_rows``."""
        from rl_board.rollouts import sql

        options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        return sql.run_query(self.store, query, max_rows=max_rows or sys.maxsize, **options).frame


def open(
    path_or_url: str | Path, *, fields: FieldMap | None = None, cache_dir: str | Path | None = None
) -> Run:
    """A rollout run, its cache built or brought up to date. ``fields`` maps rl-board's names to the log's
    (``{"reward": "score"}``), as rl-board.toml does."""
    from rl_board.api import with_stores
    from rl_board.rollouts.store import RolloutStore

    with_stores()
    store = RolloutStore.open(path_or_url, cache_dir=cache_dir, fields=fields)
    if not store.report.files:
        raise NotFoundError(f"no rollout files in {path_or_url} (list them with `rl-board runs`)")
    return Run(store)


def scalars(path_or_url: str | Path, *, cache_dir: str | Path | None = None) -> pd.DataFrame:
    """Every scalar point of every metric run under a path (TensorBoard, trackers, text logs...): a long
    frame ``run, source, tag, step, value, wall_time``."""
    from rl_board.config import metrics_cache_dir
    from rl_board.metrics.reader import load_metrics

    bundle = load_metrics(local_copy(path_or_url, cache_dir), cache_dir=metrics_cache_dir(cache_dir))
    return bundle.scalars.reset_index(drop=True)


def metrics_index(path_or_url: str | Path, *, cache_dir: str | Path | None = None) -> MetricsIndex:
    """The metric runs under a path with each tag's points and step range, read once and kept (what
    ``rl-board scalars`` lists; ``scalars`` reads the points themselves)."""
    from rl_board.config import metrics_cache_dir
    from rl_board.metrics.index import metrics_index as build

    return build(local_copy(path_or_url, cache_dir), cache_dir=metrics_cache_dir(cache_dir))


@dataclass
class CheckReport:
    """The health rules' findings under a path and the problems met reading it (``rl-board check --json``)."""

    findings: Findings = field(default_factory=builtins.list)
    problems: builtins.list[dict[str, Any]] = field(default_factory=builtins.list)

    @property
    def errors(self) -> int:
        """Findings of severity ``error`` (``rl-board check`` then exits 1)."""
        return sum(f["severity"] == "error" for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {"findings": self.findings, "problems": self.problems}

    def frame(self) -> pd.DataFrame:
        """The findings as a table, one row per finding."""
        import pandas as pd

        return pd.DataFrame(self.findings)


def check(
    path_or_url: str | Path,
    *,
    cache_dir: str | Path | None = None,
    fields: FieldMap | None = None,
    settings: Sequence[str] = (),
) -> CheckReport:
    """The health rules on every metric and rollout run under a path; ``settings`` overrides thresholds as
    ``check --set`` does (``"rule.param=value"``)."""
    from rl_board.config import metrics_cache_dir
    from rl_board.health.checks import check_rollout_runs, check_scalars, load_settings, parse_set_option
    from rl_board.metrics.reader import load_metrics
    from rl_board.metrics.reader import metric_catalogue as catalogue
    from rl_board.metrics.table import Problem

    path = local_copy(path_or_url, cache_dir)
    bundle = load_metrics(path, cache_dir=metrics_cache_dir(cache_dir))
    rules, setting_problems = load_settings(path)
    for text in settings:
        parse_set_option(rules, text)
    found = catalogue(path, fields=fields)
    if not bundle.runs and not found.rollout_folders():
        quiet = "".join(f"; {found.name(Path(p.file))}: {p.reason}" for p in bundle.skipped[:5])
        raise NotFoundError(f"nothing to check: {found.nothing_readable()}{quiet}")
    findings = check_scalars(bundle.scalars, histograms=bundle.histograms, settings=rules)
    rollout_problems: list[Problem] = []
    if path.is_dir():
        rollout_findings, rollout_problems = check_rollout_runs(
            path, cache_dir=cache_dir, settings=rules, fields=fields
        )
        findings.extend(rollout_findings)
    problems = [p.shown_under(bundle.root) for p in (*setting_problems, *bundle.problems, *rollout_problems)]
    return CheckReport([f.to_dict() for f in findings], problems)
