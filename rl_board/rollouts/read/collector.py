"""Python's cyclic garbage collector, run rarely while a load runs.

A job makes and drops a block's worth of Python values (the records simdjson hands over, their lists
and dicts), none of them in cycles, and CPython collects every 700 new objects: a 1 GB load spent ~0.2 s
of its ~7 s of CPU in ~330 collections that freed nothing (the main process 81 ms, its forked helper
133 ms), most of it in the one full collection each made while a job's values were alive (51 and
104 ms). For the length of a load (``span.LoadSpan``: overlapping loads are one span) the first
generation is collected every ``config.RARE_GC_EVERY`` new objects instead; afterwards the thresholds the
first load found are back (a threshold other code set meanwhile is not kept). A process that collects more
rarely, or not at all (a threshold of 0), keeps its own. A helper forked inside a load, and a pool worker
(which only ever loads), collect as rarely.
"""

from __future__ import annotations

import contextlib
import gc

from rl_board import config
from rl_board.rollouts.read.span import LoadSpan

_before = (700, 10, 10)  # the thresholds the first of overlapping loads found (CPython's until then)


def _rarely() -> None:
    global _before
    _before = gc.get_threshold()
    every = _before[0]
    if every:  # 0: this process collects only when asked, and goes on so
        gc.set_threshold(max(every, config.RARE_GC_EVERY), *_before[1:])


def _as_before() -> None:
    gc.set_threshold(*_before)


_SPAN = LoadSpan(_rarely, _as_before)


def rare() -> contextlib.AbstractContextManager[None]:
    """Within: the first generation is collected every ``config.RARE_GC_EVERY`` new objects at most
    often. After the last of overlapping loads: the thresholds the first one found."""
    return _SPAN.held()
