"""Index builds that run behind a page: one thread per root, shared by every viewer of it.

The Metrics page must not wait for thousands of runs to be read before it
draws anything: it starts (or joins) the build of its root's index here and
shows its progress; the next look after the build finishes finds the index
in the cache. A build whose files changed since is started again.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from rl_board.errors import RLBoardError
from rl_board.metrics.index import MetricsIndex, metrics_index
from rl_board.metrics.parallel import MIN_PARALLEL
from rl_board.metrics.reader import RunSource

NICENESS = 10
"""Readers of a build run below the server's priority: a viewer's clicks come first."""
START_AFTER_S = 2.0
"""A build that will need worker processes starts reading this long after it was asked for: the page
that asked is drawn first (on 2 cores, readers starting with it made a 2,000-run sweep's first visit
~1 s slower, even at the lowest priority)."""
RECHECK_S = 5.0
"""A finished build is trusted this long; after it, the next look re-checks the files (a cheap walk)."""


@dataclass
class IndexBuild:
    """One build's progress and outcome (read by pages while a worker thread writes it)."""

    done: int = 0
    total: int = 0
    index: MetricsIndex | None = None
    error: str = ""
    finished_at: float = 0.0
    thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for the build to end; whether it has."""
        if self.thread is not None:
            self.thread.join(timeout=seconds)
        return not self.running


_BUILDS: dict[tuple[str, str, str], IndexBuild] = {}
_LOCK = threading.Lock()


def index_build(
    root: Path,
    cache_dir: Path,
    allowed_roots: list[Path] | None = None,
    sources: list[RunSource] | None = None,
) -> IndexBuild:
    """The build of `root`'s index: running, finished, or started now (never two at once for a root).

    ``sources``: the root's runs as the caller just found them, so a build does not walk it again.
    """
    key = (str(root), str(cache_dir), repr(sorted(str(r) for r in allowed_roots or [])))
    with _LOCK:
        build = _BUILDS.get(key)
        if build is not None and (build.running or time.monotonic() - build.finished_at < RECHECK_S):
            return build
        fresh = IndexBuild(total=len(sources) if sources is not None else 0)
        if build is not None and build.index is not None:
            fresh.index = build.index  # what was known stays shown while it is re-checked
        delay = START_AFTER_S if fresh.index is None and fresh.total >= MIN_PARALLEL else 0.0
        fresh.thread = threading.Thread(
            target=_build,
            args=(fresh, root, cache_dir, allowed_roots, sources, delay),
            name="rl-board-metrics-index",
            daemon=True,
        )
        _BUILDS[key] = fresh
        fresh.thread.start()
        return fresh


def _build(
    build: IndexBuild,
    root: Path,
    cache_dir: Path,
    allowed_roots: list[Path] | None,
    sources: list[RunSource] | None,
    delay: float,
) -> None:
    """Run one build; a failure is kept as text for the page (the data layer raises only for a gone root)."""
    time.sleep(delay)
    try:
        build.index = metrics_index(
            root,
            cache_dir=cache_dir,
            allowed_roots=allowed_roots,
            progress=build.progress,
            niceness=NICENESS,
            sources=sources,
        )
    except (OSError, RLBoardError) as err:
        build.error = f"{type(err).__name__}: {err}"
    finally:
        build.finished_at = time.monotonic()
