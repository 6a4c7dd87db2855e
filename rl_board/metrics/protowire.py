"""Protobuf's wire format decoded by hand, for the tracker logs whose records are protobuf messages (W&B's
and SwanLab's run logs): one message at a time in Python (``message_fields``), or many messages at once,
column-wise with numpy (``walk``), and byte spans cut out of a buffer as one Arrow array (``slices``).

The wire format (protobuf.dev/programming-guides/encoding): a message is a run of fields, each a tag
varint (field number << 3 | wire type) and a value: a varint (wire type 0), 8 bytes (1), a length varint
and that many bytes (2: bytes, strings, sub-messages), or 4 bytes (5). A field absent from a proto3
message reads as its zero value; a field given twice keeps its last value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

VARINT, FIXED64, DELIMITED, FIXED32 = 0, 1, 2, 5
MAX_FIELDS = 64
"""Fields read of a message in no known layout before it is given up on as not one of the messages read."""

Layout = tuple[tuple[int, int], ...]
"""A message's fields as (number, wire type), in the order a writer puts them (by number: protobuf's
serializers do); each under 16, so its tag is one byte."""


# ---------------------------------------------------------------- one message, in Python


def varint(raw: bytes, i: int) -> tuple[int, int]:
    """The varint at ``raw[i]`` and where the next thing starts; ValueError when it is not one."""
    value = shift = 0
    while True:
        if i >= len(raw) or shift > 63:
            raise ValueError("bad varint")
        byte = raw[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if byte < 0x80:
            return value, i


def message_fields(raw: bytes) -> dict[int, list[Any]]:
    """One message's fields (number -> values: int for a varint, bytes otherwise); ValueError when it does
    not parse."""
    out: dict[int, list[Any]] = {}
    i = 0
    while i < len(raw):
        tag, i = varint(raw, i)
        wire = tag & 7
        value: int | bytes
        if wire == VARINT:
            value, i = varint(raw, i)
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            value, i = raw[i : i + width], i + width
        elif wire == DELIMITED:
            length, i = varint(raw, i)
            value, i = raw[i : i + length], i + length
        else:
            raise ValueError(f"wire type {wire}")
        if i > len(raw):
            raise ValueError("truncated")
        out.setdefault(tag >> 3, []).append(value)
    return out


# ---------------------------------------------------------------- many messages, column-wise


def varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varints at each of ``pos``: values (uint64) and sizes in bytes (11: longer than a varint). A read
    past the buffer's end (a damaged message) is clipped, and found out by the message's length.

    A one-byte varint is its byte; a longer one is decoded from the 8 bytes at its place taken as one
    little-endian word (its 7-bit groups packed by shifts and masks), and only one longer than 8 bytes
    (a negative number) byte by byte on from there."""
    last = len(buf) - 1
    byte = buf[np.minimum(pos, last)]
    more = np.flatnonzero(byte >= 0x80)
    value = byte.astype(np.uint64)
    size = np.ones(len(pos), np.int64)
    if not more.size:
        return value, size
    word = words(buf, pos[more])
    stop = ~word & _TOPS  # the top bit of each byte that ends a varint
    first = stop & (~stop + _ONE)  # the lowest of them (0: none in these 8 bytes)
    bits = word & ((first << _ONE) - _ONE) & _LOW7
    for low, high, shift in _PACK:  # 7-bit groups into 14, 28, then 56 bits
        bits = (bits & low) | ((bits & high) >> shift)
    value[more] = bits
    size[more] = np.frexp(first.astype(np.float64))[1] // 8  # first = 2**(8k+7): k+1 bytes
    longer = more[first == 0]
    size[longer] = 8
    shift = 56
    while longer.size and shift < 70:
        byte = buf[np.minimum(pos[longer] + size[longer], last)]
        value[longer] |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
        size[longer] += 1
        longer = longer[byte >= 0x80]
        shift += 7
    size[longer] = 11
    return value, size


_ONE = np.uint64(1)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_TOPS = np.uint64(0x8080808080808080)
_PACK = [
    (np.uint64(0x007F_007F_007F_007F), np.uint64(0x7F00_7F00_7F00_7F00), np.uint64(1)),
    (np.uint64(0x0000_3FFF_0000_3FFF), np.uint64(0x3FFF_0000_3FFF_0000), np.uint64(2)),
    (np.uint64(0x0000_0000_0FFF_FFFF), np.uint64(0x0FFF_FFFF_0000_0000), np.uint64(4)),
]
"""(the lower groups, the upper groups, how far the upper ones move down) of each packing step."""


def words(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The 8 bytes from each of ``at`` as a little-endian uint64 (bytes past the buffer's end: 0), in one
    gather from a view of the buffer as overlapping words, one starting at each byte."""
    count = len(buf) - 7
    inside = at < count
    every = bool(inside.all())
    out = np.zeros(len(at), np.uint64)
    if count > 0:
        overlapping = np.ndarray((count,), "<u8", buffer=buf, strides=(1,))
        if every:
            return overlapping[at]
        out[inside] = overlapping[at[inside]]
    outside = np.flatnonzero(~inside)
    if outside.size and len(buf):  # the buffer's last bytes
        spots = at[outside, None] + np.arange(8)
        raw = np.where(spots < len(buf), buf[np.minimum(spots, len(buf) - 1)], 0).astype(np.uint8)
        out[outside] = raw.view("<u8").ravel()
    return out


class Fields:
    """What ``walk`` read of each message: for each field of the layout, its last occurrence: a varint's
    value (``value``; 0 when absent, as proto3 reads it), or where a fixed width's bytes or a payload
    start (-1 when absent), with the payload's ``length``; ``ok`` is False for a message that does not
    parse."""

    def __init__(self, count: int, layout: Layout) -> None:
        self.layout = layout
        self.value = {f: np.full(count, 0 if wire == VARINT else -1, np.int64) for f, wire in layout}
        self.length = {f: np.zeros(count, np.int64) for f, _ in layout}
        self.ok = np.ones(count, bool)

    def put(self, number: int, rows: np.ndarray | slice, value: np.ndarray, length: np.ndarray | int) -> None:
        self.value[number][rows] = value
        self.length[number][rows] = length

    def reset(self, rows: np.ndarray) -> None:
        for f, wire in self.layout:
            self.value[f][rows] = 0 if wire == VARINT else -1
            self.length[f][rows] = 0

    def inner(self, buf: np.ndarray, number: int, layout: Layout, rows: np.ndarray | None = None) -> Fields:
        """The sub-messages in field ``number`` (of ``rows``), walked; an absent one reads as empty."""
        at = self.value[number] if rows is None else self.value[number][rows]
        length = self.length[number] if rows is None else self.length[number][rows]
        present = at >= 0
        if present.all():
            return walk(buf, at, at + length, layout)
        return walk(buf, np.where(present, at, 0), np.where(present, at + length, 0), layout)


def walk(buf: np.ndarray, start: np.ndarray, end: np.ndarray, layout: Layout) -> Fields:
    """The fields of many messages ``buf[start:end]`` at once (see ``Fields``).

    A message laid out as ``layout`` is read in one pass over its fields, each field of all messages at
    once; any other (fields in another order, or others besides: a record of another kind) is read field
    by field, in any order (``walk_any``).
    """
    count = len(start)
    fields = Fields(count, layout)
    pos = start.copy()
    last = len(buf) - 1
    for number, wire in layout:
        hit = buf[np.minimum(pos, last)] == (number << 3 | wire)
        hit &= pos < end
        every = bool(hit.all())
        if not every and not hit.any():
            continue
        rows: np.ndarray | slice = slice(None) if every else np.flatnonzero(hit)
        at = pos[rows] + 1
        if wire in (VARINT, DELIMITED):
            raw, used = varints(buf, at)
            after = at + used
            if wire == VARINT:
                value, length = raw.view(np.int64), 0
            else:
                value, length = after, np.minimum(raw, np.uint64(1 << 40)).astype(np.int64)
                after = after + length
            if used.max(initial=0) > 10:
                after[used > 10] = end[rows][used > 10] + 1  # an overlong varint: not this layout
        else:
            value, length, after = at, 0, at + (8 if wire == FIXED64 else 4)
        fields.put(number, rows, value, length)
        pos[rows] = after
    odd = np.flatnonzero(pos != end)
    if odd.size:
        fields.reset(odd)
        walk_any(buf, start[odd], end[odd], fields, odd)
    return fields


def _field(buf: np.ndarray, at: np.ndarray, wire: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fields of any wire type whose values start at ``at``: a varint's value (or a payload's or fixed
    width's start), a payload's length, and where the next field starts (-1: a varint longer than 10
    bytes, or a wire type that is not protobuf's)."""
    raw, used = varints(buf, at)  # unused for a fixed width
    delimited = wire == DELIMITED
    length = np.where(delimited, np.minimum(raw, np.uint64(1 << 40)).astype(np.int64), 0)
    value = np.where(wire == VARINT, raw.view(np.int64), np.where(delimited, at + used, at))
    after = np.select(
        [wire == VARINT, delimited, wire == FIXED64, wire == FIXED32],
        [at + used, at + used + length, at + 8, at + 4],
        -1,
    )
    after[(used > 10) & ((wire == VARINT) | delimited)] = -1
    return value, length, after


def walk_any(buf: np.ndarray, start: np.ndarray, end: np.ndarray, fields: Fields, rows: np.ndarray) -> None:
    """``walk`` for messages in no known layout: one field of each per pass, the last occurrence kept."""
    pos = start.copy()
    live = np.flatnonzero(pos < end)
    for _ in range(MAX_FIELDS):
        if not live.size:
            break
        tag, size = varints(buf, pos[live])
        wire, number = (tag & 7).astype(np.int8), (tag >> 3).astype(np.int64)
        value, length, after = _field(buf, pos[live] + size, wire)
        stop = end[live]
        bad = (size > 10) | (after < 0) | (after > stop)
        for f, kind in fields.layout:
            hit = np.flatnonzero((number == f) & (wire == kind) & ~bad)
            fields.put(f, rows[live[hit]], value[hit], length[hit])
        fields.ok[rows[live[bad]]] = False
        pos[live] = np.where(bad, stop, after)
        live = live[~bad & (after < stop)]
    fields.ok[rows[live]] = False  # more fields than the messages read have


def doubles(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian doubles at ``at`` (0.0 where absent, -1: proto3 leaves a 0.0 out)."""
    out = np.zeros(len(at), np.float64)
    present = np.flatnonzero(at >= 0)
    if present.size:
        raw = buf[at[present][:, None] + np.arange(8)]
        out[present] = raw.view("<f8").ravel()
    return out


def slices(blob: bytes | memoryview, begin: np.ndarray, end: np.ndarray) -> pa.Array:
    """``blob[begin[i]:end[i]]`` for every i, as an Arrow binary array, without a Python loop: the slices
    (in increasing order) and the gaps between them are one array's cells; the slices are taken. Slices
    out of order (but not overlapping) are put in order first and taken back in the order given."""
    if not len(begin):
        return pa.array([], pa.large_binary())
    order = None
    if len(begin) > 1 and (begin[1:] < end[:-1]).any():
        order = np.argsort(begin, kind="stable")
        begin, end = begin[order], end[order]
    offsets = np.empty(2 * len(begin) + 1, dtype=np.int64)
    offsets[0:-1:2], offsets[1::2], offsets[-1] = begin, end, end[-1]
    cells = pa.Array.from_buffers(
        pa.large_binary(), 2 * len(begin), [None, pa.py_buffer(offsets), pa.py_buffer(blob)]
    )
    picked = np.arange(0, 2 * len(begin), 2)
    if order is not None:
        back = np.empty(len(order), np.int64)
        back[order] = np.arange(len(order))
        picked = picked[back]
    return cells.take(pa.array(picked))
