"""Merging the small segments that following a growing run leaves behind.

Every refresh that finds new lines writes one segment; a run followed all day
would end with thousands of tiny files, each one more memory map to open.
When a file has more than ``MAX_SMALL`` small segments, every stretch of
consecutive small segments is rewritten as one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rl_board import config
from rl_board.rollouts.cache.manifest import FileEntry, Segment
from rl_board.rollouts.cache.segments import map_segment, shift_lines, write_segment

MAX_SMALL = 16


def compact(directory: Path, entry: FileEntry) -> bool:
    """Merge stretches of small segments of one file; True if anything changed."""
    small_bytes = config.sizes().compact_small_bytes
    if sum(seg.bytes < small_bytes for seg in entry.segments) <= MAX_SMALL:
        return False
    merged: list[Segment] = []
    for stretch in _stretches(entry.segments):
        merged.append(_merge(directory, stretch) if len(stretch) > 1 else stretch[0])
    entry.segments = merged
    return True


def _stretches(segments: list[Segment]) -> list[list[Segment]]:
    """Consecutive small segments grouped; each big one alone."""
    out: list[list[Segment]] = []
    small_bytes = config.sizes().compact_small_bytes
    for seg in segments:
        small = seg.bytes < small_bytes
        if small and out and out[-1][-1].bytes < small_bytes:
            out[-1].append(seg)
        else:
            out.append([seg])
    return out


def _merge(directory: Path, stretch: list[Segment]) -> Segment:
    from rl_board.rollouts.read import records  # the parsers' table helpers: most syncs merge nothing

    base = stretch[0].line_offset
    tables = []
    for seg in stretch:  # each segment's lines counted from the stretch's first line
        table = map_segment(directory, seg)
        tables.append(shift_lines(table, np.full(table.num_rows, seg.line_offset - base, np.int64)))
    record = write_segment(directory, records.unify_tables(tables).combine_chunks())
    return Segment(**record, line_offset=base)
