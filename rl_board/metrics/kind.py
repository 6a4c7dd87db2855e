"""The contract of a metric kind: how its runs are found, how they are read, what they are called.

A kind (TensorBoard, a text log, W&B, MLflow...) is one module that defines
a ``MetricKind`` subclass, plus one line in ``rl_board.metrics.kinds``. The
catalogue asks it which folders and files are its runs (``claim_folder``,
``claim_file``); ``metrics.reader`` asks it to read one (``read``, or
``read_from`` for a store that only grows) and caches the answer. Nothing
else in the code names a kind.

A read never raises for bad data: what it could not use becomes a
``Problem`` of the result, and the rest is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from rl_board.metrics.table import ReadResult, merge_results
from rl_board.sources.claims import Found


@dataclass(frozen=True)
class RunSource:
    """Where one metric run's data lives: its name, its kind's name, its folder or file, the files a read
    opens, and (for a store holding several runs) which one it is."""

    run: str
    kind: str
    path: Path
    files: tuple[Path, ...] = ()
    part: str = ""


@dataclass
class Appended:
    """What a read of a growing store got from where the last one stopped.

    ``committed``: complete records, kept in the cache; ``tail``: a record
    still being written, shown now and read again next time; ``resume``:
    where the next read starts (JSON-shaped; a byte ``offset``, when given,
    is one whose preceding bytes must be unchanged for the resume to be sound:
    a store without one, a database, checks its own resume point).
    """

    committed: ReadResult
    tail: ReadResult
    resume: dict[str, Any] = field(default_factory=dict)
    restarted: bool = False
    """The store was rewritten, not appended to (a database replaced): ``committed`` is read from the start
    and what was cached before is dropped."""


RUN_KIND = "run_kind"
"""``extras`` key: the kind a run turned out to be on reading (a text log: its line format); absent: the
kind."""
NOT_METRICS = "not_metrics"
"""``extras`` key: the file held no metric after all (a text log with no metric line): skipped, with why."""


class MetricKind:
    """One kind of metric store. Subclasses set ``name`` and ``label`` and override what they need."""

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    variants: ClassVar[dict[str, str]] = {}
    """Kinds a run of this kind may turn out to be on reading (``RUN_KIND``), with their labels."""
    appends: ClassVar[bool] = False
    """True for a store a running job only appends to: it is read with ``read_from``."""
    keeps_rollouts: ClassVar[bool] = False
    """True for a store that keeps runs' samples inside it (Trackio's tables and traces: ``rollout_rows``)."""
    logs_copies: ClassVar[bool] = False
    """True when a run logs each statistic more than once (DI-engine): the page offers to show one copy."""

    def claim_folder(
        self, folder: Path, dirs: list[str], files: list[str], allowed: list[Path] | None = None
    ) -> list[Found]:
        """Runs this folder is (``Found.whole``) or holds among its own files."""
        return []

    def claim_file(self, path: Path, allowed: list[Path] | None = None) -> list[Found]:
        """Runs one file is; only asked of files no folder claim took (nor a rollout format)."""
        return []

    def may_claim(self, path: Path) -> bool:
        """Whether a file could be this kind's by its name alone: one linked from outside the served
        folders is then named as a refused metric source (it is never opened to find out)."""
        return False

    def merge_extras(self, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        """The facts of a resumed read: what was cached, updated by what the new part found."""
        return {**old, **new}

    def read(self, source: RunSource, allowed_roots: list[Path] | None) -> ReadResult:
        """Every point of one run. With ``allowed_roots``, no file outside them is opened."""
        appended = self.read_from(source, None, allowed_roots)
        merged = merge_results([appended.committed, appended.tail])
        merged.extras = {**appended.committed.extras, **appended.tail.extras}
        return merged

    def read_from(
        self, source: RunSource, resume: dict[str, Any] | None, allowed_roots: list[Path] | None
    ) -> Appended:
        """An appending store's points from ``resume`` on (None: from the start)."""
        raise NotImplementedError(f"{type(self).__name__} reads whole runs only")

    def watched(self, source: RunSource) -> list[Path]:
        """The files whose size and mtime decide whether a cached read is still good."""
        return list(source.files) or [source.path]

    def rollout_rows(self, store: Path, part: str, allowed_roots: list[Path] | None) -> list[dict[str, Any]]:
        """The samples one run keeps inside this kind's store (a tracker's tables and traces), as rollout
        rows, in the order logged; [] when it keeps none. Only kinds whose claims carry a
        ``Found.rollout_head`` are asked (``sources.members``)."""
        return []

    def label_of(self, run_kind: str) -> str:
        """How a run of this kind (or of one of its variants) is named on the page."""
        return self.variants.get(run_kind, self.label)


@dataclass
class LoggedTable:
    """A table a trainer logged to a tracker beside its scalars (TRL's completions, verl's generations).

    ``rows`` are as logged, one list per row in ``columns`` order; ``step`` is the trainer step the
    table was logged at when the store says (None when only its position does); ``where`` names the
    file (and line or record) it came from, for messages.
    """

    key: str
    step: int | None
    columns: list[str]
    rows: list[list[Any]]
    where: str
