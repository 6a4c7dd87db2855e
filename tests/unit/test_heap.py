"""A load keeps the memory its jobs free for the next job, and hands it back at the end (read/heap.py)."""

from __future__ import annotations

import re
import resource
from pathlib import Path

import pytest

from rl_board.rollouts.read import heap

pytestmark = pytest.mark.skipif(heap._LIBC is None, reason="the C library is not glibc")

MB = 1024 * 1024


def _faults(make: int) -> int:
    """Page faults taken to make (and write) a ``make``-byte object."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    piece = b"x" * make
    after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    del piece
    return after - before


def _rss_mb() -> float:
    return int(re.search(r"VmRSS:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1)) / 1024


def test_a_freed_piece_is_taken_again_without_faults_within_a_load() -> None:
    heap._LIBC.malloc_trim(0)  # no free memory left from earlier tests: the first piece is new memory
    with heap.kept():
        first = _faults(24 * MB)  # new memory: a fault a page
        again = _faults(24 * MB)
    assert first > 24 * MB // 4096 // 2
    assert again < first // 20


def test_what_a_load_freed_is_handed_back_after_it() -> None:
    with heap.kept():
        pieces = [b"y" * (8 * MB) for _ in range(24)]  # 192 MB in heap-sized pieces
        grown = _rss_mb()
        del pieces
        kept = _rss_mb()
    after = _rss_mb()
    assert kept > grown - 32  # freed, but kept in the heap while the load runs
    assert after < kept - 150  # given back at the end


def test_a_piece_past_glibcs_mapping_cap_is_kept_too_and_mapped_again_after() -> None:
    """A piece past 32 MB (a whole job's bytes) is served from the heap within a load, so it too is taken
    again without faults; after the load such pieces are their own mappings again, new memory each time."""
    heap._LIBC.malloc_trim(0)
    with heap.kept():
        first = _faults(96 * MB)
        again = _faults(96 * MB)
    assert first > 96 * MB // 4096 // 2
    assert again < first // 20
    assert _faults(96 * MB) > 96 * MB // 4096 // 2  # mapped, and unmapped when freed
    assert _faults(96 * MB) > 96 * MB // 4096 // 2


def test_overlapping_loads_hand_memory_back_after_the_last() -> None:
    """Two loads that overlap (a server's sessions): the heap is kept until the second ends too."""
    with heap.kept():
        with heap.kept():
            assert heap.keeping()
        assert heap.keeping()
        heap._LIBC.malloc_trim(0)
        first = _faults(96 * MB)
        again = _faults(96 * MB)  # still kept: the first one's ending handed nothing back
        assert again < first // 20
    assert not heap.keeping()
