"""What a metric kind tells the catalogue it found: the shape of a claim, and who may make one.

The catalogue walks a root once. At each folder it asks every metric kind
(``rl_board.metrics.kinds``) whether the folder, or one of its files, is a
run of that kind. The kinds live above this layer, so the catalogue knows
them only by this protocol and is handed them by its caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Found:
    """One metric run a kind recognised.

    ``path`` is the run's folder or file (its cache entry is keyed on it);
    ``files`` are the files a read opens; ``part`` names one run inside a
    store that holds several (a Trackio run, an MLflow run id) and ``label``
    the name it is shown under; ``whole`` says the folder is claimed whole:
    no kind is asked about anything below it, and only rollouts (the tables a
    trainer logged to the tracker) are looked for there. ``rollout_head`` is
    the first sample row of the rollouts a run keeps inside the store itself
    (Trackio's tables and traces: ``sources.members``), None when it keeps
    none; its keys tell the rollout format.
    """

    path: Path
    files: tuple[Path, ...] = ()
    reason: str = ""
    part: str = ""
    label: str = ""
    named_by: Path | None = None
    whole: bool = False
    skipped: str = ""
    quiet: bool = False
    rollout_head: Mapping[str, Any] | None = field(default=None, hash=False, compare=False)


class MetricClaims(Protocol):
    """The recognising half of a metric kind (``rl_board.metrics.kind.MetricKind``)."""

    @property
    def name(self) -> str:  # read-only: a kind's name is a class variable
        ...

    def claim_folder(
        self, folder: Path, dirs: list[str], files: list[str], allowed: list[Path] | None = None
    ) -> list[Found]:
        """Runs this folder is, or holds among its files; ``dirs`` and ``files`` are its entries' names.
        With ``allowed`` (a server's roots), nothing outside them is opened or listed."""
        ...

    def claim_file(self, path: Path, allowed: list[Path] | None = None) -> list[Found]:
        """Runs one file is (a store that holds several gives one each); [] when it is not this kind's."""
        ...
