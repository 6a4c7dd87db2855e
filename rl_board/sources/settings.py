"""rl-board.toml: settings kept beside the logs, read once per file change.

``[fields]`` names which of a log's keys holds the prompt, the response, the
reward... (a field map, see ``formats/fieldmap.py``). A run's folder or any
folder above it may hold the file; the nearest file wins per field, and the
caller's overrides (``--field`` on the CLI, the sidebar for the open run) win
over the files.
"""

from __future__ import annotations

import functools
from pathlib import Path

from rl_board.formats.fieldmap import MAPPABLE, FieldMap

SETTINGS_FILE = "rl-board.toml"
SEARCH_UP = 6


def for_file(path: Path, overrides: FieldMap | None = None) -> FieldMap:
    """The effective map of one file: rl-board.toml files above it, then the caller's overrides."""
    merged: FieldMap = {}
    folder = path if path.is_dir() else path.parent
    for parent in reversed([folder, *list(folder.parents)[: SEARCH_UP - 1]]):
        settings = parent / SETTINGS_FILE
        if settings.is_file():
            merged.update(_from_toml(str(settings), settings.stat().st_mtime_ns))
    merged.update(overrides or {})
    return merged


@functools.lru_cache(maxsize=256)
def _from_toml(path: str, mtime_ns: int) -> FieldMap:
    """``[fields]`` of one settings file; a file that does not parse maps nothing (health reports it)."""
    try:
        import tomllib  # Python 3.11+; older Pythons simply have no field maps from files
    except ImportError:
        return {}
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    table = data.get("fields")
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if k in MAPPABLE and isinstance(v, str) and v}
