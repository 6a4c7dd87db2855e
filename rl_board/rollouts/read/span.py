"""A process-wide setting held for the length of a load, from the first of loads that overlap to the last.

A server's sessions load in threads, so loads overlap and end in any order: the setting is made when the
first one begins and undone when the last one ends (``heap.kept``, ``collector.rare``). A helper forked
inside a load is inside it too (it inherits the count) and leaves through ``os._exit``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator


class LoadSpan:
    """``begin()`` when the first of overlapping loads begins, ``end()`` after the last one ends."""

    def __init__(self, begin: Callable[[], None], end: Callable[[], None]) -> None:
        self._begin, self._end = begin, end
        self._loads = 0
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):  # a child forked while another thread held the lock
            os.register_at_fork(after_in_child=self._new_lock)

    def _new_lock(self) -> None:
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """Whether a load is running in this process (or in the one that forked it)."""
        return self._loads > 0

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """One load's part of the span."""
        with self._lock:
            self._loads += 1
            if self._loads == 1:
                self._begin()
        try:
            yield
        finally:
            with self._lock:
                self._loads -= 1
                if self._loads == 0:
                    self._end()
