"""Caching at the UI boundary for training metrics and health findings.

``st.cache_data`` entries are keyed by the logs root and a signature of its
metric files (``metrics_signature``: one stat per file, itself cached for a
few seconds), so a log that grows is a new key and a page rerun costs one
dictionary lookup. Findings are keyed by the same signature (or a rollout
run's store signature) plus the effective health settings. Metrics are read
with the served roots as ``allowed_roots``: a link planted under a root that
leads elsewhere is refused, never followed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from rl_board import api
from rl_board.api import (
    Finding,
    IndexBuild,
    MetricsBundle,
    Problem,
    RolloutStore,
    RunSource,
    Settings,
    load_settings,
)
from rl_board.config import server_config

SIGNATURE_TTL_S = 5


@st.cache_data(show_spinner=False, ttl=SIGNATURE_TTL_S, max_entries=32)
def signature(root: str) -> str:
    """The metric files' signature under a root (re-taken every few seconds)."""
    return api.metric_files_signature(root, server_config().served)


@st.cache_data(show_spinner="Reading training metrics…", max_entries=8)
def bundle(root: str, files_signature: str) -> MetricsBundle:
    """Every metric run under a root, read through the on-disk cache, nothing outside the served roots."""
    return api.read_metrics(root, server_config().served)


def metrics_under(root: Path) -> MetricsBundle:
    """The metrics under a (served) root, up to date within a few seconds."""
    return bundle(str(root), signature(str(root)))


@st.cache_data(show_spinner=False, ttl=SIGNATURE_TTL_S, max_entries=32)
def run_list(root: str) -> list[RunSource]:
    """The metric runs under a root, found by a walk (re-taken every few seconds); nothing is read."""
    return api.metric_runs(root, server_config().served)


@st.cache_data(show_spinner=False, ttl=SIGNATURE_TTL_S, max_entries=64)
def runs_signature(root: str, runs: tuple[str, ...]) -> str:
    """The signature of the chosen runs' files alone (a sweep's other runs are not stat-ed)."""
    return api.metric_runs_signature(root, _sources(root, runs), server_config().served)


@st.cache_data(show_spinner="Reading the chosen runs…", max_entries=16)
def runs_bundle(root: str, runs: tuple[str, ...], files_signature: str) -> MetricsBundle:
    """The chosen runs' points (a chart needs no other run's), through the on-disk cache."""
    return api.read_metrics(root, server_config().served, sources=_sources(root, runs))


def _sources(root: str, runs: tuple[str, ...]) -> list[RunSource]:
    """The chosen runs as the walk found them."""
    chosen = set(runs)
    return [s for s in run_list(root) if s.run in chosen]


def chosen_runs(root: Path, runs: list[str]) -> MetricsBundle:
    """The metrics of the chosen runs under a (served) root, up to date within a few seconds."""
    key = tuple(runs)
    return runs_bundle(str(root), key, runs_signature(str(root), key))


def index_build(root: Path) -> IndexBuild:
    """The background build of every run's tags under a root (shared by every session; never waited for)."""
    return api.metrics_index_build(root, server_config().served, sources=run_list(str(root)))


@dataclass(frozen=True)
class HealthSettings:
    """The effective settings of a logs root, with a key for caches and the problems of its file."""

    settings: Settings
    key: str
    problems: list[Problem]


def health_settings(root: Path) -> HealthSettings:
    """`rl-board.toml` of the root (read on every run: it is one small file)."""
    settings, problems = load_settings(root)
    key = json.dumps([settings.params, settings.severity, sorted(settings.disabled)], sort_keys=True)
    return HealthSettings(settings, key, problems)


@st.cache_data(show_spinner=False, max_entries=16)
def scalar_findings(
    root: str, files_signature: str, settings_key: str, _bundle: MetricsBundle, _settings: Settings
) -> list[Finding]:
    """Scalar rule findings of every metric run under a root."""
    return api.check_metrics(_bundle, _settings)


@st.cache_data(show_spinner=False, max_entries=128)
def rollout_findings(
    run_path: str,
    store_signature: str,
    run: str,
    settings_key: str,
    _store: RolloutStore,
    _settings: Settings,
) -> list[Finding]:
    """Rollout rule findings of one run, named `run` (its name in the sidebar)."""
    return api.check_run(run, _store, _settings)


def clear() -> None:
    """Forget every cached metric table and finding (tests, and a manual refresh)."""
    for fn in (signature, bundle, run_list, runs_signature, runs_bundle, scalar_findings, rollout_findings):
        fn.clear()
