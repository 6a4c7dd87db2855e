"""Caching at the UI boundary: one shared store per run, small query results per signature.

``st.cache_resource`` holds one registry per server process; the registry
keeps one open :class:`RolloutStore` per (run path, cache dir), shared by
every browser tab and session. The first open reports progress with real
byte totals; each later access does a cheap stat check (``store.stale()``)
and lets the store ingest appended bytes (``store.refresh()``). A per-run lock
makes concurrent tabs wait for one load instead of loading twice.

``st.cache_data`` memoises derived frames keyed by run path and the store's
file signature, so a change in the files is a new key.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import streamlit as st

from rl_board import api
from rl_board.api import RolloutStore
from rl_board.config import server_config

Progress = Callable[[int, int], None]
MAX_OPEN_RUNS = 16


def cache_dir() -> str:
    return str(server_config().cache_dir)


class StoreRegistry:
    """Open stores by (run path, cache dir, field map); least recently used are dropped beyond a limit."""

    def __init__(self, limit: int = MAX_OPEN_RUNS) -> None:
        self.limit = limit
        self._stores: OrderedDict[tuple[str, str, str], RolloutStore] = OrderedDict()
        self._locks: dict[tuple[str, str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, key: tuple[str, str, str]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def is_open(self, run_path: str, cache_root: str, fields: dict[str, str] | None = None) -> bool:
        return (run_path, cache_root, _fields_key(fields)) in self._stores

    def get(
        self,
        run_path: str,
        cache_root: str,
        progress: Progress | None = None,
        allowed_roots: list[Path] | None = None,
        fields: dict[str, str] | None = None,
    ) -> RolloutStore:
        key = (run_path, cache_root, _fields_key(fields))
        with self._lock(key):
            store = self._stores.get(key)
            if store is None:
                store = api.open_run(
                    run_path,
                    cache_dir=cache_root,
                    progress=progress,
                    allowed_roots=allowed_roots,
                    fields=fields,
                )
            elif store.stale():
                store.refresh(progress=progress)
            with self._guard:
                self._stores[key] = store
                self._stores.move_to_end(key)
                while len(self._stores) > self.limit:
                    self._stores.popitem(last=False)
        return store


@st.cache_resource(show_spinner=False)
def registry() -> StoreRegistry:
    """The process-wide registry (one per server, shared by all sessions)."""
    return StoreRegistry()


def is_open(run_path: Path, fields: dict[str, str] | None = None) -> bool:
    return registry().is_open(str(run_path), cache_dir(), fields)


def store_for(
    run_path: Path, progress: Progress | None = None, fields: dict[str, str] | None = None
) -> RolloutStore:
    """The shared, up-to-date store of a run read with a field map (opened on first use)."""
    return registry().get(
        str(run_path), cache_dir(), progress, allowed_roots=list(server_config().roots), fields=fields
    )


def run_name(run_path: Path) -> str:
    """How the sidebar and links name a run: its path relative to the served root that holds it."""
    return api.relative_to_roots(run_path, list(server_config().roots))


def _fields_key(fields: dict[str, str] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((fields or {}).items()))


def tokenizer() -> api.TokenText | None:
    """The server's tokenizer (``serve --tokenizer``), loaded once; None when none was given."""
    path = server_config().tokenizer
    return None if path is None else _tokenizer(str(path))


@st.cache_resource(show_spinner="Loading the tokenizer…")
def _tokenizer(path: str) -> api.TokenText:
    return api.TokenText(Path(path))


@st.cache_data(show_spinner=False, ttl=10, max_entries=32)
def runs_under(root: str, cache_root: str) -> pd.DataFrame:
    """Runs under a (served) root; refreshed every few seconds so new runs appear."""
    return RolloutStore.list_runs(root, cache_dir=cache_root, allowed=list(server_config().roots))


@st.cache_data(show_spinner=False, ttl=5, max_entries=32)
def rollout_files_signature(root: str, cache_root: str) -> str:
    """Changes when any rollout run under a root gains, loses or changes a file (one walk, re-taken
    every 5 s)."""
    return api.catalogue(
        Path(root), skip=(Path(cache_root),), allowed=list(server_config().roots)
    ).rollout_signature()


@st.cache_data(show_spinner=False, ttl=10, max_entries=32)
def skipped_under(root: str, cache_root: str) -> pd.DataFrame:
    """Files under a root that are not read, with why (the root's catalogue; refreshed every few seconds)."""
    found = api.catalogue(Path(root), skip=(Path(cache_root),), allowed=list(server_config().roots))
    rows = [(found.name(s.path), s.reason) for s in found.skipped]
    return pd.DataFrame(rows, columns=["file", "why it is not read"])


@st.cache_data(show_spinner=False, max_entries=64)
def column_summary(
    run_path: str, signature: str, columns: tuple[str, ...], _store: RolloutStore
) -> pd.DataFrame:
    """Per-step statistics of some per-sample columns (reward components), keyed by the run's signature."""
    return _store.column_summary(list(columns))


@st.cache_data(show_spinner=False, max_entries=64)
def groups(
    run_path: str, signature: str, step: int, threshold: float | None, _store: RolloutStore
) -> pd.DataFrame:
    """The groups of one step (a threshold of None: the run's highest reward)."""
    return _store.groups(step=step, threshold=threshold)


@st.cache_data(show_spinner=False, max_entries=32)
def prompts(run_path: str, signature: str, _store: RolloutStore) -> pd.DataFrame:
    """Every prompt of a run across training (the run's highest reward = solved)."""
    return _store.prompts()


@st.cache_data(show_spinner=False, max_entries=32)
def mismatch_summary(run_path: str, signature: str, _store: RolloutStore) -> pd.DataFrame:
    """Per-step train-vs-inference mismatch of a run that logs the trainer's log-probs."""
    return _store.mismatch_summary()


@st.cache_data(show_spinner=False, max_entries=32)
def length_distribution(run_path: str, signature: str, _store: RolloutStore) -> tuple:
    """Length bins per step and the truncation share (see ``RolloutStore.length_distribution``)."""
    return _store.length_distribution()


@st.cache_data(show_spinner=False, max_entries=32)
def group_stats(run_path: str, signature: str, _store: RolloutStore) -> pd.DataFrame:
    """Per step: groups, mean solved share, zero-variance share (all steps; the run's highest reward =
    solved)."""
    return _store.group_stats()


@st.cache_data(show_spinner=False, max_entries=64)
def run_max_reward(run_path: str, signature: str, _store: RolloutStore) -> float | None:
    """The highest reward of a run (the default threshold for "solved")."""
    return _store.reward_threshold()


@st.cache_data(show_spinner=False, max_entries=64)
def step_summary(run_path: str, signature: str, _store: RolloutStore) -> pd.DataFrame:
    """Per-step statistics of a run, keyed by its path and file signature."""
    return _store.step_summary()


@st.cache_data(show_spinner=False, max_entries=64)
def step_frame(
    run_path: str, signature: str, step: int, columns: tuple[str, ...], _store: RolloutStore
) -> pd.DataFrame:
    """Numeric per-sample columns of one step (for the step charts and metrics)."""
    present = [c for c in columns if _store.has(c)]
    return _store.samples(step=step, columns=present)


@st.cache_data(show_spinner=False, max_entries=32)
def trajectory_summary(run_path: str, signature: str, _store: RolloutStore) -> pd.DataFrame:
    """Per step of an agent run: turns and tool calls per trajectory, tool error rate, finish-reason
    shares."""
    return _store.trajectory_summary()


@st.cache_data(show_spinner=False, max_entries=32)
def tools_summary(run_path: str, signature: str, _store: RolloutStore) -> pd.DataFrame:
    """Per tool and step of an agent run: calls, errors, error rate, trajectories, their mean reward."""
    return _store.tools_summary()


@st.cache_data(show_spinner=False, max_entries=64)
def tool_calls(run_path: str, signature: str, step: int, _store: RolloutStore) -> pd.DataFrame:
    """Every tool call of one step, with its arguments and the result that answered it."""
    return _store.tool_calls(step=step).to_pandas()


# -- failure patterns: worked out once per state of the run (the store memoises the families too) ------------


@st.cache_data(show_spinner="Finding families of near-identical answers…", max_entries=16)
def pattern_families(run_path: str, signature: str, _store: RolloutStore) -> pd.DataFrame:
    """The run's template families, largest first (size, share, first and last step, rewards, an example)."""
    return _store.pattern_families()


@st.cache_data(show_spinner=False, max_entries=16)
def family_shares(run_path: str, signature: str, _store: RolloutStore) -> pd.DataFrame:
    """Per step, each template family's share of the step's answers."""
    return _store.family_shares()


@st.cache_data(show_spinner=False, max_entries=16)
def signals_by_step(run_path: str, signature: str, _store: RolloutStore) -> pd.DataFrame:
    """Per step: samples, loops and mixed-script answers."""
    return _store.signals_by_step()


# -- labels: cached on the labels file's version of the run, so a click reads the file once ------------------


@st.cache_data(show_spinner=False, max_entries=32)
def run_labels(
    run_path: str,
    signature: str,
    labels_file: str,
    version: str,
    _store: RolloutStore,
    _labels: api.LabelStore,
) -> pd.DataFrame:
    """Every label of the run with the sample it is on now (``RolloutStore.labels``)."""
    return _store.labels(_labels)


@st.cache_data(show_spinner=False, max_entries=32)
def tags_by_sample(
    run_path: str,
    signature: str,
    labels_file: str,
    version: str,
    _store: RolloutStore,
    _labels: api.LabelStore,
) -> pd.DataFrame:
    """``step, sample, tags`` (comma-joined) of every labelled sample of the run."""
    return _store.tags_by_sample(_labels)
