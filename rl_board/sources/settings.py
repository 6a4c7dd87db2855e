"""rl-board.toml: settings kept beside the logs, read once per file change.

``[fields]`` names which of a log's keys holds the prompt, the response, the
reward... (a field map, see ``formats/fieldmap.py``). A run's folder or any
folder above it may hold the file; the nearest file wins per field, and the
caller's overrides (``--field`` on the CLI, the sidebar for the open run) win
over the files.
"""

from __future__ import annotations

import functools
import importlib
import os
import stat
from pathlib import Path

from rl_board.formats.fieldmap import MAPPABLE, FieldMap

SETTINGS_FILE = "rl-board.toml"
SEARCH_UP = 6


def for_file(
    path: Path, overrides: FieldMap | None = None, *, seen: dict[str, int] | None = None
) -> FieldMap:
    """The effective map of one file: rl-board.toml files above it, then the caller's overrides.

    ``seen`` remembers, for one walk, which folders hold a settings file (its mtime, or -1 for none):
    the folders of a big tree share their parents, which need not be looked at again.
    """
    merged: FieldMap = {}
    folder = str(path if path.is_dir() else path.parent)
    chain = [folder]
    while len(chain) < SEARCH_UP and os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    for parent in reversed(chain):
        mtime = seen.get(parent) if seen is not None else None
        if mtime is None:
            mtime = _settings_mtime(os.path.join(parent, SETTINGS_FILE))
            if seen is not None:
                seen[parent] = mtime
        if mtime >= 0:
            merged.update(_from_toml(os.path.join(parent, SETTINGS_FILE), mtime))
    merged.update(overrides or {})
    return merged


def _settings_mtime(path: str) -> int:
    """The settings file's mtime, or -1 when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return -1
    return st.st_mtime_ns if stat.S_ISREG(st.st_mode) else -1


@functools.lru_cache(maxsize=256)
def _from_toml(path: str, mtime_ns: int) -> FieldMap:
    """``[fields]`` of one settings file; a file that does not parse maps nothing (health reports it)."""
    try:  # by name: mypy checks for Python 3.10, which has no tomllib
        tomllib = importlib.import_module("tomllib")
    except ImportError:  # tomllib is 3.11+: older Pythons simply have no field maps from files
        return {}
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    table = data.get("fields")
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if k in MAPPABLE and isinstance(v, str) and v}
