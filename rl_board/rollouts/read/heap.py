"""Freed memory kept in this process's heap while a load runs, so that the next block reuses it.

glibc gives memory back to the kernel once the free top of its heap passes ``M_TRIM_THRESHOLD``, and
serves a request past ``M_MMAP_THRESHOLD`` from a new mapping that is unmapped when freed. A load takes
and frees the same pieces (a job's bytes, its columns) over and over, and every page of new
memory costs a fault on first touch: the main process of a 1 GB load took ~12,000 faults per 80 MB job,
~0.04 s of system time each on this VM, where its forked helper, whose heap stayed grown, took a few
hundred. For the length of a load both thresholds are raised, and no piece is a mapping of its own (not
even one past glibc's cap of 32 MB: a job of rl-board's own format reads its ~84 MB of bytes at once), so
freed pieces stay for the next job; afterwards mappings are back (past ``Sizes.load_heap_piece_bytes``),
the trim threshold goes back to where glibc's own rule would have taken it and what the load freed is
handed back (``malloc_trim``). Where the C library is not
glibc (no ``malloc_trim``), nothing changes.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
from typing import Any

from rl_board import config
from rl_board.rollouts.read.span import LoadSpan

_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
_MMAP_MAX_DEFAULT = 65536  # glibc's own (DEFAULT_MMAP_MAX)
_KEPT = 2**31 - 1  # free memory a load keeps: all of it (the most a C int says)


def _glibc() -> Any | None:
    """This process's C library when it is glibc (it has ``mallopt`` and ``malloc_trim``), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
    except OSError:  # pragma: no cover - a Linux without a dynamic loader
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


_LIBC = _glibc()


def _keep() -> None:
    if _LIBC is None:
        return
    _LIBC.mallopt(_M_MMAP_THRESHOLD, config.sizes().load_heap_piece_bytes)
    _LIBC.mallopt(_M_MMAP_MAX, 0)  # not even a piece past glibc's cap: a job's 84 MB of bytes is one
    _LIBC.mallopt(_M_TRIM_THRESHOLD, _KEPT)


def _hand_back() -> None:
    if _LIBC is None:
        return
    _LIBC.mallopt(_M_MMAP_MAX, _MMAP_MAX_DEFAULT)
    piece = config.sizes().load_heap_piece_bytes
    _LIBC.mallopt(_M_TRIM_THRESHOLD, 2 * piece)  # glibc's own rule: twice the mapping threshold
    _LIBC.malloc_trim(0)


_SPAN = LoadSpan(_keep, _hand_back)


def keeping() -> bool:
    """Whether freed memory stays in this process's heap now (within a load's ``kept``, with glibc): a
    piece of any size is then taken again without new pages."""
    return _LIBC is not None and _SPAN.active


def kept() -> contextlib.AbstractContextManager[None]:
    """Within: freed memory stays in the heap. After the last of loads that overlap (a server's sessions
    load in threads): the loads' free memory is handed back."""
    return _SPAN.held()
