"""Segment files: one Arrow IPC file per parsed block, written atomically, checksummed, mapped.

Uncompressed so they can be memory-mapped; the line numbers inside count from
the block's start, and a run view adds each segment's ``line_offset`` to them
(``shift_lines``, once over the whole run).
"""

from __future__ import annotations

import os
import uuid
import zlib
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa

from rl_board import columns, private
from rl_board.formats.schema import LINE


class SegmentRef(Protocol):
    """What mapping needs to know of a segment (manifest.Segment has it)."""

    name: str
    line_offset: int


def write_segment(directory: Path, table: pa.Table) -> dict:
    """Write an Arrow IPC file atomically; return its manifest record."""
    name = f"seg-{uuid.uuid4().hex}.arrow"
    tmp = directory / (name + ".tmp")
    sink = pa.BufferOutputStream()  # in memory first: the CRC is taken there, not by reading the file back
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max(table.num_rows, 1))
    data = sink.getvalue()
    crc = zlib.crc32(memoryview(data))
    try:
        private.open_file(tmp, "wb").close()  # made 0600 before a byte is in it
        with pa.OSFile(str(tmp), "wb") as f:
            f.write(data)
    except OSError:  # a full disk: leave nothing half-written behind
        tmp.unlink(missing_ok=True)
        raise
    del data
    st = tmp.stat()
    os.replace(tmp, directory / name)
    return {"name": name, "rows": table.num_rows, "bytes": st.st_size, "crc": crc, "mtime_ns": st.st_mtime_ns}


def file_crc(path: Path) -> int:
    """CRC32 of a whole file, read in blocks so it does not count as resident memory."""
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(4 * 1024 * 1024):
            crc = zlib.crc32(chunk, crc)
    return crc


def map_segment(directory: Path, seg: SegmentRef) -> pa.Table:
    """Memory-map one segment, its line numbers as stored: counted from ``seg.line_offset`` (a run view
    shifts all of its segments' at once, ``shift_lines``)."""
    source = pa.memory_map(str(directory / seg.name), "r")
    return pa.ipc.open_file(source).read_all()


def shift_lines(table: pa.Table, offsets: np.ndarray) -> pa.Table:
    """``table`` with ``offsets[i]`` added to row i's line number: one pass over a whole run's rows, where
    one per segment cost ~0.1 ms each (a 10 GB run has ~670 segments)."""
    i = table.schema.get_field_index(LINE)
    lines = columns.to_numpy(table.column(i)) + offsets  # (pc.add of an int imports pandas)
    return table.set_column(i, LINE, columns.from_numpy(lines, table.schema.field(i).type))
