"""``summary.json`` beside a run's manifest: what the run holds in numbers, for one state of its files.

Written by the load that builds a run's view (its sample and step counts, for the run list) and completed
by the first question that works out the run's whole summary (``RolloutStore.run_summary``: steps, counts
per step, fields, per-step statistics). A later look at the unchanged run, one whose cache holds every file
as it is, answers ``rl-board summary`` and ``runs`` from this file: no segment is mapped, no frame built.

The state is the run's signature (``state``: each file's name, size, mtime, the bytes read and how it was
read, and the field map); a file that changes makes a new state, and a summary of another state is never
used. A cache of another version is emptied whole (``manifest.read_manifest``), this file with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from rl_board import private
from rl_board.formats.fieldmap import FieldMap
from rl_board.rollouts.cache.manifest import FileEntry

FILE = "summary.json"
SUMMARY = "summary"  # the key of the whole summary, once worked out for this state
# Who worked it out: a summary kept by another release, or before a change to what it holds or how it is
# worked out (bump SHAPE then), is worked out again.
SHAPE = 1
MADE_BY = "made_by"


def _maker() -> str:
    from rl_board import __version__

    return f"{__version__}/{SHAPE}"


def state(entries: list[FileEntry], fields: FieldMap) -> str:
    """The run's signature: changes exactly when a file's data, or how it is read, changed."""
    raw = json.dumps(
        [
            sorted(fields.items()),
            *((e.name, e.size, e.mtime_ns, e.consumed, e.error, e.reading) for e in entries),
        ]
    )
    return hashlib.sha1(raw.encode()).hexdigest()[:16]


def read(directory: Path) -> dict[str, Any]:
    """What the file holds ({} when there is none or it does not parse)."""
    try:
        data = json.loads((directory / FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_counts(directory: Path, signature: str, *, samples: int, steps: int) -> None:
    """The counts of a state just loaded; a summary already kept for this very state stays."""
    old = read(directory)
    data: dict[str, Any] = {"samples": samples, "steps": steps, "state": signature}
    if SUMMARY in old and _mine(old, signature):
        data[SUMMARY], data[MADE_BY] = old[SUMMARY], old[MADE_BY]
    if data != old:
        _write(directory, data)


def keep(directory: Path, signature: str, summary: dict[str, Any]) -> None:
    """Keep the whole summary of ``signature``, when that is still the state the file is of."""
    data = read(directory)
    if data.get("state") == signature and (data.get(SUMMARY) != summary or data.get(MADE_BY) != _maker()):
        _write(directory, {**data, SUMMARY: summary, MADE_BY: _maker()})


def kept(directory: Path, signature: str) -> dict[str, Any] | None:
    """The whole summary kept for ``signature``, if there is one."""
    data = read(directory)
    found = data.get(SUMMARY)
    return found if _mine(data, signature) and isinstance(found, dict) else None


def _mine(data: dict[str, Any], signature: str) -> bool:
    """Whether what is kept is of this state of the files and by this rl-board release."""
    return data.get("state") == signature and data.get(MADE_BY) == _maker()


def _write(directory: Path, data: dict[str, Any]) -> None:
    # A read-only cache still serves; the run list just shows no counts, and the summary is worked out.
    with contextlib.suppress(OSError):
        private.write_text(directory / FILE, json.dumps(data))
