"""A block's per-token rows (NeMo-RL's padded arrays) read and reduced together, not record by record.

``arrays`` reads one record's rows into numpy; a NeMo-RL line of a few
hundred tokens then spends most of its time in the ~20 small numpy calls that
read and reduce them. Here every row of one key in a block is read in one
call, and the reductions the adapter takes per record (the loss mask's
positions and runs, a value at the first response position, means and the
largest gap over the response) are computed for all records at once. The
answers are exactly ``arrays``' (tests hold them equal, the means summed left
to right as ``arrays.mean`` sums them); a block whose rows hold anything but
plain numbers gives None, and its caller reads it record by record.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from rl_board.formats import arrays

# A mean's rows are laid out as one matrix per block: beyond this many cells for each value (one record with
# far longer answers than the rest), they are summed one record at a time instead.
_MATRIX_PER_VALUE = 8


@dataclass
class Rows:
    """One key's rows of a block: every row's numbers in one array, cut by ``offsets``."""

    flat: np.ndarray
    lengths: np.ndarray  # n: each row's length (0 where none was logged)
    offsets: np.ndarray  # n + 1: where each row starts in ``flat``
    present: np.ndarray  # bool, n: the record logged this row

    def row(self, i: int) -> np.ndarray | None:
        """Record ``i``'s row, as ``arrays.plain`` reads it (a view), or None when it logged none."""
        return self.flat[self.offsets[i] : self.offsets[i + 1]] if self.present[i] else None


def read(rows: list[list | np.ndarray | None], *, bools: bool = True) -> Rows | None:
    """The rows of one key (None: not logged; a float64 array: a row of plain numbers a reader packed
    already, ``simd_rows``) as ``arrays.plain`` reads each; None when one holds anything else, or an
    integer past any float."""
    listed = [r for r in rows if isinstance(r, list)]
    values = list(chain.from_iterable(listed))
    found = set(map(type, values))
    if not found <= (arrays.PLAIN if bools else arrays.NO_BOOLS):
        return None
    try:
        flat = np.array(values, dtype=np.float64)
    except OverflowError:
        return None
    packed = any(type(r) is np.ndarray for r in rows)
    if packed:  # rows a reader packed already: in their places among the listed ones
        flat = _in_order(rows, flat)
    if float in found or packed:
        flat[~np.isfinite(flat)] = np.nan
    lengths = np.fromiter((0 if r is None else len(r) for r in rows), np.int64, count=len(rows))
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    present = np.fromiter((r is not None for r in rows), bool, count=len(rows))
    return Rows(flat, lengths, offsets, present)


def _in_order(rows: list[list | np.ndarray | None], listed: np.ndarray) -> np.ndarray:
    """Every row's numbers in record order: the packed rows' own, the listed rows' from ``listed``."""
    pieces: list[np.ndarray] = []
    at = 0
    for r in rows:
        if isinstance(r, list):
            pieces.append(listed[at : at + len(r)])
            at += len(r)
        elif r is not None:
            pieces.append(r)
    return np.concatenate(pieces) if pieces else np.zeros(0)


@dataclass
class Positions:
    """Where each record's loss mask is set (== 1): its response tokens."""

    record: np.ndarray  # the record of each set position, in order
    at: np.ndarray  # its index in the record's row
    count: np.ndarray  # n: set positions per record
    starts: np.ndarray  # n + 1: each record's first entry in ``record`` / ``at``
    runs: np.ndarray  # n: runs of set positions (``arrays.runs``)

    def of(self, i: int) -> np.ndarray:
        """Record ``i``'s set positions, as ``arrays.on`` finds them in its row."""
        return self.at[self.starts[i] : self.starts[i + 1]]


def positions(mask: Rows) -> Positions:
    """Every record's set positions, and its runs of them, from the block's loss masks."""
    n = len(mask.present)
    owner = np.repeat(np.arange(n), mask.lengths)  # the record of each flat entry
    on = mask.flat == 1.0
    where = np.flatnonzero(on)
    record = owner[where]
    count = np.bincount(record, minlength=n)
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(count, out=starts[1:])
    before = np.zeros(len(on), bool)  # the entry before in the same row is set
    before[1:] = on[:-1]
    before[mask.offsets[:-1][mask.lengths > 0]] = False
    runs = np.bincount(owner[on & ~before], minlength=n)
    return Positions(record, where - mask.offsets[record], count, starts, runs)


def at_positions(values: Rows, where: Positions) -> np.ndarray:
    """``values`` at every set position, NaN past its record's row (or where it logged none)."""
    inside = where.at < values.lengths[where.record]
    index = values.offsets[where.record] + where.at
    out = np.full(len(index), np.nan)
    out[inside] = values.flat[index[inside]]
    return out


def first_at(values: Rows, where: Positions) -> list[float | None]:
    """Per record whose row was logged, ``arrays.at``'s first value: the first finite one at its set
    positions, or without a set position the one at position 0; None where that is missing or NaN."""
    picked = at_positions(values, where)
    ok = np.flatnonzero(~np.isnan(picked))
    found, first = np.unique(where.record[ok], return_index=True)
    out: list[float | None] = [None] * len(values.present)
    for r, k in zip(found.tolist(), picked[ok[first]].tolist(), strict=True):
        out[r] = k
    lengths = values.lengths
    for r in np.flatnonzero((where.count == 0) & (lengths > 0)).tolist():
        head = values.flat[values.offsets[r]]
        out[r] = None if np.isnan(head) else float(head)
    return out


def means(values: Rows, where: Positions) -> list[float | None]:
    """Per record, the mean of its finite values at its set positions (``arrays.mean`` of ``arrays.at``),
    summed left to right; None without one."""
    picked = at_positions(values, where)
    keep = ~np.isnan(picked)
    record, kept = where.record[keep], picked[keep]
    n = len(values.present)
    count = np.bincount(record, minlength=n)
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(count, out=starts[1:])
    widest = int(count.max()) if n else 0
    if n * (widest + 1) <= _MATRIX_PER_VALUE * len(kept) + 4096:
        column = np.arange(len(kept)) - starts[record] + 1
        matrix = np.zeros((n, widest + 1))  # column 0 is the 0 a sum starts from
        matrix[record, column] = kept
        with np.errstate(over="ignore"):  # a sum past the largest float is inf, as in Python
            sums = np.add.accumulate(matrix, axis=1)[:, -1].tolist()  # adds in order: ``arrays.in_order_sum``
    else:
        sums = [arrays.in_order_sum(kept[starts[r] : starts[r + 1]].tolist()) for r in range(n)]
    return [s / c if c else None for s, c in zip(sums, count.tolist(), strict=True)]


def largest_gaps(a: Rows, b: Rows, where: Positions) -> list[float | None]:
    """Per record, ``arrays.largest_gap`` over its set positions; None without a pair."""
    with np.errstate(over="ignore"):  # a gap past the largest float is inf, as in Python
        gaps = np.abs(at_positions(a, where) - at_positions(b, where))
    gaps[np.isnan(gaps)] = -np.inf
    n = len(a.present)
    out: list[float | None] = [None] * n
    busy = np.flatnonzero(where.count > 0)
    if len(busy):
        top = np.maximum.reduceat(gaps, where.starts[busy]) if len(gaps) else np.zeros(0)
        for r, g in zip(busy.tolist(), top.tolist(), strict=True):
            out[r] = None if g == -np.inf else g
    return out
