"""Python's cyclic garbage collector, run rarely while a load runs.

A job makes and drops a block's worth of Python values (the records simdjson hands over, their lists
and dicts), none of them in cycles, and CPython collects every 700 new objects: a 1 GB load spent ~0.2 s
of its ~7 s of CPU in ~330 collections that freed nothing (the main process 81 ms, its forked helper
133 ms), most of it in the one full collection each made while a job's values were alive (51 and
104 ms). For the length of a load the first generation is collected every ``LOAD_GC_EVERY`` new objects
instead; afterwards the threshold the process had is back. Loads that overlap (a server's sessions load
in threads) count as one span, as ``heap.kept`` counts them. A helper forked inside a load, and a pool
worker (which only ever loads), collect as rarely.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

LOAD_GC_EVERY = 100_000  # new objects between two collections of the first generation during a load

_loads = 0  # how many ``rare`` this process is inside
_before: list[tuple[int, int, int]] = []  # the thresholds the first of overlapping loads found
_lock = threading.Lock()


@contextlib.contextmanager
def rare() -> Iterator[None]:
    """Within: the first generation is collected every ``LOAD_GC_EVERY`` new objects at most often (a
    process that already collects more rarely keeps its own). After the last of overlapping loads: the
    thresholds the first one found."""
    global _loads
    with _lock:
        _loads += 1
        if _loads == 1:
            found = gc.get_threshold()
            _before[:] = [found]
            gc.set_threshold(max(found[0], LOAD_GC_EVERY), *found[1:])
    try:
        yield
    finally:
        with _lock:
            _loads -= 1
            if _loads == 0:
                gc.set_threshold(*_before.pop())
