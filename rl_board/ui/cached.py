"""Streamlit caching around the store: one load per run and file signature.

``st.cache_resource`` holds one open store per (run path, cache dir), shared by
every browser tab and session. Each access checks the files' stat signature
and, if they changed, lets the store ingest what was appended.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from rl_board.data.cache import default_cache_dir
from rl_board.data.store import RolloutStore


def cache_dir() -> str:
    return str(default_cache_dir())


@st.cache_resource(show_spinner=False, max_entries=16)
def _open_store(run_path: str, cache_root: str) -> RolloutStore:
    return RolloutStore.open(run_path, cache_dir=cache_root)


def store_for(run_path: Path) -> RolloutStore:
    """The shared store of a run (opened and cached on first use)."""
    return _open_store(str(run_path), cache_dir())


@st.cache_data(show_spinner=False, ttl=10, max_entries=32)
def runs_under(root: str, cache_root: str) -> pd.DataFrame:
    return RolloutStore.list_runs(root, cache_dir=cache_root)
