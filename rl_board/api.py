"""What pages (and other front ends) may ask of the data layer, in one narrow place.

Its names are imported on first use (``_LAZY``), so a CLI command that reads a cached run does not load the
metric readers, DuckDB or the rules.

Pages list runs, open a run, ask it questions by name (``ask``, ``QUESTIONS``:
one generic way, as TensorBoard's plugins read through one ``DataProvider``),
read metrics, run checks, look up a metric's meaning and export rows through
this module; they never import a reader, the cache or a rule module. The types they hold (``RolloutStore``,
``MetricsBundle``, ``Finding``, ...) are re-exported here so a page needs
nothing else from the data layer but the field catalogue
(``rollouts.fields``), ``where``, ``config`` and ``errors``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names as _LAZY (tests/unit/test_layers.py holds them equal)
    import pandas as pd

    from rl_board.config import Served
    from rl_board.formats.conversation import content_text as message_text
    from rl_board.formats.conversation import parsed as parsed_messages
    from rl_board.formats.fieldmap import MAPPABLE as MAPPABLE_FIELDS
    from rl_board.formats.fieldmap import parse_option as parse_field_option
    from rl_board.formats.trajectory import FINISH_REASONS
    from rl_board.formats.trajectory import result_of as tool_result
    from rl_board.health.checks import (
        REGISTRY,
        SETTINGS_FILE,
        SEVERITIES,
        Finding,
        Settings,
        duplicate_copies,
        load_settings,
    )
    from rl_board.metrics.background import IndexBuild
    from rl_board.metrics.dilogs import evaluation_summary
    from rl_board.metrics.glossary import GlossaryEntry, explain
    from rl_board.metrics.index import MetricsIndex
    from rl_board.metrics.kinds import label as metric_kind_label
    from rl_board.metrics.kinds import logs_copies as metric_kind_logs_copies
    from rl_board.metrics.kinds import metric_catalogue as catalogue
    from rl_board.metrics.parallel import MIN_PARALLEL
    from rl_board.metrics.reader import (
        OUTSIDE_KIND,
        MetricsBundle,
        RunInfo,
        RunSource,
        metrics_signature,
    )
    from rl_board.metrics.table import Problem
    from rl_board.rollouts import demo as demo_runs
    from rl_board.rollouts.dataset import write_dataset
    from rl_board.rollouts.demo_agent import AgentSpec, write_agent_run
    from rl_board.rollouts.demo_grpo import GrpoSpec, write_grpo_run
    from rl_board.rollouts.export import arrow_records, export_file_name, to_csv_bytes, to_jsonl_bytes
    from rl_board.rollouts.filters import SampleFilter
    from rl_board.rollouts.labels import MAX_NOTE, MAX_TAG, Label, LabelStore
    from rl_board.rollouts.labels import SUGGESTED as SUGGESTED_TAGS
    from rl_board.rollouts.opening import KeptSummary, summary_kept
    from rl_board.rollouts.patterns import LOOP as LOOP_REPETITION
    from rl_board.rollouts.patterns import MIN_FAMILY
    from rl_board.rollouts.patterns import MIN_SHARE as MIN_FAMILY_SHARE
    from rl_board.rollouts.prompts import prompt_id
    from rl_board.rollouts.questions import QUESTIONS, Question, ask
    from rl_board.rollouts.questions import lookup as question
    from rl_board.rollouts.report import BadLine, LoadReport
    from rl_board.rollouts.sql import DEFAULT_TIMEOUT as QUERY_TIMEOUT
    from rl_board.rollouts.sql import EXAMPLES as QUERY_EXAMPLES
    from rl_board.rollouts.sql import MACROS as QUERY_MACROS
    from rl_board.rollouts.sql import MAX_ROWS as QUERY_MAX_ROWS
    from rl_board.rollouts.sql import QueryError, QueryResult, run_query
    from rl_board.rollouts.sql import schema as query_schema
    from rl_board.rollouts.sql import start_database as start_query_database
    from rl_board.rollouts.store import RolloutStore, SampleDetail
    from rl_board.rollouts.tokens import TokenText
    from rl_board.rollouts.trajectories import messages_of as sample_turns
    from rl_board.sources import remote
    from rl_board.sources.catalogue import METRICS as METRICS_ROLE
    from rl_board.sources.catalogue import Catalogue, Source
    from rl_board.sources.roots import relative_to_roots, resolve_within

_LAZY: dict[str, tuple[str, str]] = {  # name here -> (module, name there), imported on first use
    "message_text": ("rl_board.formats.conversation", "content_text"),
    "parsed_messages": ("rl_board.formats.conversation", "parsed"),
    "Served": ("rl_board.config", "Served"),
    "MAPPABLE_FIELDS": ("rl_board.formats.fieldmap", "MAPPABLE"),
    "parse_field_option": ("rl_board.formats.fieldmap", "parse_option"),
    "FINISH_REASONS": ("rl_board.formats.trajectory", "FINISH_REASONS"),
    "tool_result": ("rl_board.formats.trajectory", "result_of"),
    "REGISTRY": ("rl_board.health.checks", "REGISTRY"),
    "SETTINGS_FILE": ("rl_board.health.checks", "SETTINGS_FILE"),
    "SEVERITIES": ("rl_board.health.checks", "SEVERITIES"),
    "Finding": ("rl_board.health.checks", "Finding"),
    "Settings": ("rl_board.health.checks", "Settings"),
    "duplicate_copies": ("rl_board.health.checks", "duplicate_copies"),
    "load_settings": ("rl_board.health.checks", "load_settings"),
    "IndexBuild": ("rl_board.metrics.background", "IndexBuild"),
    "evaluation_summary": ("rl_board.metrics.dilogs", "evaluation_summary"),
    "GlossaryEntry": ("rl_board.metrics.glossary", "GlossaryEntry"),
    "explain": ("rl_board.metrics.glossary", "explain"),
    "MetricsIndex": ("rl_board.metrics.index", "MetricsIndex"),
    "metric_kind_label": ("rl_board.metrics.kinds", "label"),
    "metric_kind_logs_copies": ("rl_board.metrics.kinds", "logs_copies"),
    "MIN_PARALLEL": ("rl_board.metrics.parallel", "MIN_PARALLEL"),
    "OUTSIDE_KIND": ("rl_board.metrics.reader", "OUTSIDE_KIND"),
    "MetricsBundle": ("rl_board.metrics.reader", "MetricsBundle"),
    "RunInfo": ("rl_board.metrics.reader", "RunInfo"),
    "RunSource": ("rl_board.metrics.reader", "RunSource"),
    "metrics_signature": ("rl_board.metrics.reader", "metrics_signature"),
    "catalogue": ("rl_board.metrics.kinds", "metric_catalogue"),
    "Problem": ("rl_board.metrics.table", "Problem"),
    "demo_runs": ("rl_board.rollouts", "demo"),
    "write_dataset": ("rl_board.rollouts.dataset", "write_dataset"),
    "AgentSpec": ("rl_board.rollouts.demo_agent", "AgentSpec"),
    "write_agent_run": ("rl_board.rollouts.demo_agent", "write_agent_run"),
    "GrpoSpec": ("rl_board.rollouts.demo_grpo", "GrpoSpec"),
    "write_grpo_run": ("rl_board.rollouts.demo_grpo", "write_grpo_run"),
    "arrow_records": ("rl_board.rollouts.export", "arrow_records"),
    "export_file_name": ("rl_board.rollouts.export", "export_file_name"),
    "to_csv_bytes": ("rl_board.rollouts.export", "to_csv_bytes"),
    "to_jsonl_bytes": ("rl_board.rollouts.export", "to_jsonl_bytes"),
    "SampleFilter": ("rl_board.rollouts.filters", "SampleFilter"),
    "MAX_NOTE": ("rl_board.rollouts.labels", "MAX_NOTE"),
    "MAX_TAG": ("rl_board.rollouts.labels", "MAX_TAG"),
    "Label": ("rl_board.rollouts.labels", "Label"),
    "LabelStore": ("rl_board.rollouts.labels", "LabelStore"),
    "SUGGESTED_TAGS": ("rl_board.rollouts.labels", "SUGGESTED"),
    "LOOP_REPETITION": ("rl_board.rollouts.patterns", "LOOP"),
    "MIN_FAMILY": ("rl_board.rollouts.patterns", "MIN_FAMILY"),
    "MIN_FAMILY_SHARE": ("rl_board.rollouts.patterns", "MIN_SHARE"),
    "prompt_id": ("rl_board.rollouts.prompts", "prompt_id"),
    "QUESTIONS": ("rl_board.rollouts.questions", "QUESTIONS"),
    "Question": ("rl_board.rollouts.questions", "Question"),
    "ask": ("rl_board.rollouts.questions", "ask"),
    "question": ("rl_board.rollouts.questions", "lookup"),
    "KeptSummary": ("rl_board.rollouts.opening", "KeptSummary"),
    "summary_kept": ("rl_board.rollouts.opening", "summary_kept"),
    "BadLine": ("rl_board.rollouts.report", "BadLine"),
    "LoadReport": ("rl_board.rollouts.report", "LoadReport"),
    "QUERY_TIMEOUT": ("rl_board.rollouts.sql", "DEFAULT_TIMEOUT"),
    "QUERY_EXAMPLES": ("rl_board.rollouts.sql", "EXAMPLES"),
    "QUERY_MACROS": ("rl_board.rollouts.sql", "MACROS"),
    "QUERY_MAX_ROWS": ("rl_board.rollouts.sql", "MAX_ROWS"),
    "QueryError": ("rl_board.rollouts.sql", "QueryError"),
    "QueryResult": ("rl_board.rollouts.sql", "QueryResult"),
    "run_query": ("rl_board.rollouts.sql", "run_query"),
    "start_query_database": ("rl_board.rollouts.sql", "start_database"),
    "query_schema": ("rl_board.rollouts.sql", "schema"),
    "RolloutStore": ("rl_board.rollouts.store", "RolloutStore"),
    "SampleDetail": ("rl_board.rollouts.store", "SampleDetail"),
    "TokenText": ("rl_board.rollouts.tokens", "TokenText"),
    "sample_turns": ("rl_board.rollouts.trajectories", "messages_of"),
    "remote": ("rl_board.sources", "remote"),
    "METRICS_ROLE": ("rl_board.sources.catalogue", "METRICS"),
    "Catalogue": ("rl_board.sources.catalogue", "Catalogue"),
    "Source": ("rl_board.sources.catalogue", "Source"),
    "relative_to_roots": ("rl_board.sources.roots", "relative_to_roots"),
    "resolve_within": ("rl_board.sources.roots", "resolve_within"),
}


__all__ = [
    "BadLine",
    "Catalogue",
    "Finding",
    "GlossaryEntry",
    "LoadReport",
    "MAPPABLE_FIELDS",
    "MetricsBundle",
    "Problem",
    "REGISTRY",
    "RolloutStore",
    "RunInfo",
    "SETTINGS_FILE",
    "SEVERITIES",
    "SampleDetail",
    "SampleFilter",
    "Settings",
    "Source",
    "TokenText",
    "catalogue",
    "check_metrics",
    "check_run",
    "duplicate_copies",
    "evaluation_summary",
    "explain",
    "arrow_records",
    "export_file_name",
    "list_runs",
    "load_settings",
    "metrics_signature",
    "open_run",
    "parse_field_option",
    "prompt_id",
    "read_metrics",
    "relative_to_roots",
    "resolve_within",
    "to_csv_bytes",
    "to_jsonl_bytes",
]

__all__ += [
    "IndexBuild",
    "MIN_PARALLEL",
    "MetricsIndex",
    "OUTSIDE_KIND",
    "RunSource",
    "metric_runs",
    "metric_runs_signature",
    "refused_metric_runs",
    "metrics_index_build",
]  # sweeps
__all__ += ["metric_kind_label", "metric_kind_logs_copies"]  # metric kinds, named for a page
__all__ += ["AgentSpec", "GrpoSpec", "demo_runs", "write_agent_run", "write_grpo_run"]  # the demo runs
__all__ += [
    "METRICS_ROLE",
    "remote",
    "write_dataset",
]  # a catalogue's metric sources, logs in buckets, Parquet out
__all__ += ["message_text", "parsed_messages"]  # a sample's conversation
__all__ += [
    "FINISH_REASONS",
    "sample_turns",
    "tool_result",
]  # a trajectory: why it ended, the result that answered a call
__all__ += [
    "LOOP_REPETITION",
    "MIN_FAMILY",
    "MIN_FAMILY_SHARE",
]  # failure patterns: a loop, a family's least size
__all__ += [
    "Label",
    "LabelStore",
    "MAX_NOTE",
    "MAX_TAG",
    "SUGGESTED_TAGS",
    "label_store",
]  # labels on samples
__all__ += [
    "QUERY_EXAMPLES",
    "QUERY_MACROS",
    "QUERY_MAX_ROWS",
    "QUERY_TIMEOUT",
    "QueryError",
    "QueryResult",
    "query_schema",
    "run_query",
    "start_query_database",
]  # SQL over a run
__all__ += [
    "QUESTIONS",
    "Question",
    "ask",
    "question",
]  # what a page asks of a run, by name (one generic way)

__all__ += ["KeptSummary", "summary_kept"]  # a cached run's summary, answered from its cache
__all__ += ["Served", "metric_files_signature"]  # the roots a door may read and its cache, as one value

Progress = Callable[[int, int], None]


def __getattr__(name: str) -> Any:
    """A name of the data layer, imported when first asked for: a CLI command loads only what it uses."""
    if name not in _LAZY:
        raise AttributeError(f"module 'rl_board.api' has no attribute {name!r}")
    module, attr = _LAZY[name]
    found = importlib.import_module(module)
    value = getattr(found, attr) if hasattr(found, attr) else importlib.import_module(f"{module}.{attr}")
    globals()[name] = value
    return value


def with_stores() -> None:
    """Runs kept inside a tracker's store (a Trackio project's runs) are found and read once the metric
    kinds that keep them have registered (``sources.members``): every door that opens runs calls this. The
    kinds are imported when the rollout layer first asks for one (a run inside a store file, a run list)."""
    from rl_board.sources import members

    if "rl_board.metrics.kinds" not in sys.modules:
        members.register_later(lambda: importlib.import_module("rl_board.metrics.kinds"))


def list_runs(root: Path | str, served: Served) -> pd.DataFrame:
    """Rollout runs under a root (see ``RolloutStore.list_runs``)."""
    from rl_board.rollouts.store import RolloutStore

    with_stores()
    return RolloutStore.list_runs(root, cache_dir=served.cache_dir, allowed=served.allowed)


def open_run(
    path: Path | str,
    served: Served,
    *,
    progress: Progress | None = None,
    fields: dict[str, str] | None = None,
) -> RolloutStore:
    """A run's store, its cache built or brought up to date, read with a field map when one is given."""
    from rl_board.rollouts.store import RolloutStore

    with_stores()
    return RolloutStore.open(
        path, cache_dir=served.cache_dir, progress=progress, allowed_roots=served.allowed, fields=fields
    )


def read_metrics(
    root: Path | str, served: Served, *, sources: list[RunSource] | None = None
) -> MetricsBundle:
    """The metric runs under a root (all, or the given ones of ``metric_runs``), through the metrics cache;
    nothing outside the served roots."""
    from rl_board.metrics.reader import load_metrics

    return load_metrics(
        root, cache_dir=served.metrics_cache_dir, allowed_roots=served.allowed, sources=sources
    )


def metric_files_signature(root: Path | str, served: Served) -> str:
    """A digest of every metric file under a root (one stat each): a log that grows is a new key."""
    from rl_board.metrics.reader import metrics_signature

    return metrics_signature(root, cache_dir=served.metrics_cache_dir, allowed_roots=served.allowed)


def refused_metric_runs(sources: list[RunSource]) -> list[Problem]:
    """The runs ``metric_runs`` found behind links out of the served folders: named, never read."""
    from rl_board.metrics.reader import split_refused

    return split_refused(sources, None)[0]


def metric_runs_signature(root: Path | str, sources: list[RunSource], served: Served) -> str:
    """A digest of the files of these runs (``metrics_signature`` of part of a root): stats, no reads."""
    from rl_board.metrics.reader import sources_signature

    return sources_signature(Path(root), sources, served.allowed)


def metric_runs(root: Path | str, served: Served) -> list[RunSource]:
    """The metric runs under a root, found by walking it (nothing is read: a run list shows at once)."""
    from rl_board.metrics.reader import discover

    return discover(Path(root), skip=(served.cache_dir,), allowed=served.allowed)


def metrics_index_build(
    root: Path | str, served: Served, *, sources: list[RunSource] | None = None
) -> IndexBuild:
    """The background build of a root's metrics index (every run's tags), started if none is under way;
    ``sources`` are its runs as ``metric_runs`` just found them."""
    from rl_board.metrics.background import index_build

    return index_build(Path(root), served.metrics_cache_dir, served.allowed, sources)


def label_store() -> LabelStore:
    """The labels file this process was configured with (``Settings.labels``: $RL_BOARD_LABELS, ``serve
    --labels``, else the user's data folder), never a file beside the logs unless chosen so."""
    from rl_board import config
    from rl_board.rollouts.labels import LabelStore

    return LabelStore(config.settings().labels)


def check_metrics(bundle: MetricsBundle, settings: Settings) -> list[Finding]:
    """Findings of the rules on training metrics, for every metric run of a bundle."""
    from rl_board.health.checks import check_scalars

    return check_scalars(bundle.scalars, histograms=bundle.histograms, settings=settings)


def check_run(name: str, store: RolloutStore, settings: Settings) -> list[Finding]:
    """Findings of the rules on rollouts for one run, named ``name``."""
    from rl_board.health.checks import RolloutRun, check_rollouts

    return check_rollouts(RolloutRun.from_store(name, store), settings=settings)
