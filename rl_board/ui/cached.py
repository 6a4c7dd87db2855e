"""Caching at the UI boundary: one shared store per run, small query results per signature.

``st.cache_resource`` holds one registry per server process; the registry
keeps one open :class:`RolloutStore` per (run path, cache dir), shared by
every browser tab and session. The first open reports progress with real
byte totals; each later access does a cheap stat check (``store.stale()``)
and lets the store ingest appended bytes (``store.refresh()``). A per-run lock
makes concurrent tabs wait for one load instead of loading twice.

``ask`` answers what a page asks of a run by name (``api.QUESTIONS``, one generic way, as TensorBoard's
plugins read through one ``DataProvider``), memoised by ``st.cache_data`` keyed by the run, the store's file
signature and the question's parameters, so a change in the files is a new key.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rl_board import api
from rl_board.api import RolloutStore, Served
from rl_board.config import server_config

Progress = Callable[[int, int], None]
MAX_OPEN_RUNS = 16


def served() -> Served:
    """The roots this server may read and its cache: passed whole to every door of the data layer."""
    return server_config().served


class StoreRegistry:
    """Open stores by (run path, served roots and cache, field map); least recently used are dropped beyond a
    limit."""

    def __init__(self, limit: int = MAX_OPEN_RUNS) -> None:
        self.limit = limit
        self._stores: OrderedDict[tuple[str, Served, str], RolloutStore] = OrderedDict()
        self._locks: dict[tuple[str, Served, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, key: tuple[str, Served, str]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def is_open(self, run_path: str, where: Served, fields: dict[str, str] | None = None) -> bool:
        return (run_path, where, _fields_key(fields)) in self._stores

    def get(
        self,
        run_path: str,
        where: Served,
        progress: Progress | None = None,
        fields: dict[str, str] | None = None,
    ) -> RolloutStore:
        key = (run_path, where, _fields_key(fields))
        with self._lock(key):
            store = self._stores.get(key)
            if store is None:
                store = api.open_run(run_path, where, progress=progress, fields=fields)
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
    return registry().is_open(str(run_path), served(), fields)


def store_for(
    run_path: Path, progress: Progress | None = None, fields: dict[str, str] | None = None
) -> RolloutStore:
    """The shared, up-to-date store of a run read with a field map (opened on first use)."""
    return registry().get(str(run_path), served(), progress, fields=fields)


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
def runs_under(root: str, where: Served) -> pd.DataFrame:
    """Runs under a (served) root; refreshed every few seconds so new runs appear."""
    return api.list_runs(root, where)


@st.cache_data(show_spinner=False, ttl=5, max_entries=32)
def rollout_files_signature(root: str, where: Served) -> str:
    """Changes when any rollout run under a root gains, loses or changes a file (one walk, re-taken
    every 5 s)."""
    return api.catalogue(Path(root), skip=(where.cache_dir,), allowed=where.allowed).rollout_signature()


@st.cache_data(show_spinner=False, ttl=10, max_entries=32)
def skipped_under(root: str, where: Served) -> pd.DataFrame:
    """Files under a root that are not read, with why (the root's catalogue; refreshed every few seconds)."""
    found = api.catalogue(Path(root), skip=(where.cache_dir,), allowed=where.allowed)
    rows = [(found.name(s.path), s.reason) for s in found.skipped]
    return pd.DataFrame(rows, columns=["file", "why it is not read"])


# -- what a page asks of a run: one generic way (``api.QUESTIONS``), one cache per question -----------------


def ask(store: RolloutStore, question: str, **params: Any) -> Any:
    """The answer of a question about the run of ``store`` (``api.QUESTIONS``: ``step_summary``, ``groups``,
    ...), worked out once per state of the run: ``ask(store, "groups", step=3, threshold=None)``.

    Keyed by the run (``store.source``), its file signature, the question, its parameters (plain values:
    numbers, strings, tuples, None, a ``KLEstimator``) and the question's ``version`` of what else its answer
    depends on (the labels file's state for the run); the store itself is not hashed. Each question keeps its
    own cache of ``Question.keep`` answers and shows ``Question.spinner`` while a slow one is worked out.
    """
    found = api.question(question)
    version = found.version(store, **params) if found.version is not None else ""
    key = tuple(sorted(params.items()))
    return _answerer(found)(found.name, store.source, store.signature, version, key, store)


_ANSWERERS: dict[str, Callable[..., Any]] = {}
_ANSWERERS_LOCK = threading.Lock()


def _answerer(question: api.Question) -> Callable[..., Any]:
    """The ``st.cache_data`` function of one question, made on its first use.

    Streamlit keys a function's cache by its qualified name and source, so each question's function is named
    after it: its own cache, with its own size and spinner. The question's name is hashed too, so answers of
    two questions never mix even if a Streamlit version keyed them alike.
    """
    with _ANSWERERS_LOCK:
        known = _ANSWERERS.get(question.name)
        if known is None:

            def answer(
                name: str,
                run: str,
                signature: str,
                version: str,
                params: tuple[tuple[str, Any], ...],
                _store: RolloutStore,
            ) -> Any:
                return question.answer(_store, **dict(params))

            answer.__qualname__ = f"ask[{question.name}]"
            known = st.cache_data(show_spinner=question.spinner or False, max_entries=question.keep)(answer)
            _ANSWERERS[question.name] = known
        return known
