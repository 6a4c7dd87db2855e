"""One state of a run's cache as query-ready arrays; replaced whole when the run changes.

Built from the memory-mapped segments: the row order by step (stable, so
files then lines), each row's index within its step, and the per-step counts.
The store swaps a new view in with one assignment, so a query running in
another thread always sees one consistent state.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from rl_board import columns
from rl_board.errors import InvalidArgumentError
from rl_board.formats import rewards
from rl_board.formats import schema as S
from rl_board.lazy import pc, pd
from rl_board.rollouts import derive
from rl_board.rollouts.cache import segments
from rl_board.rollouts.cache.manifest import Part
from rl_board.rollouts.filters import SampleFilter, mask
from rl_board.rollouts.read import records

STEP_COL, INDEX_COL, FILE_COL, LINE_COL = "step", "sample", "file", "line"
_LIST_FIELDS = set(S.FLOAT_LIST_FIELDS) | set(S.STRING_LIST_FIELDS) | set(S.DERIVED_TOKEN_LISTS)


class RunView:
    """Arrays that answer the store's questions for one state of the cache."""

    def __init__(self, files: list[str], table: pa.Table, file_idx: np.ndarray) -> None:
        self.files, self.table, self.file_idx = files, table, file_idx
        self.batches = table.to_batches()
        self.batch_starts = np.cumsum([0] + [b.num_rows for b in self.batches])
        steps = columns.to_numpy(table.column(S.STEP))
        self.step_of = steps
        self.line_of = columns.to_numpy(table.column(S.LINE))
        self.order = np.argsort(steps, kind="stable")
        self.steps, self.starts, self.counts = np.unique(
            steps[self.order], return_index=True, return_counts=True
        )
        self.within = np.empty(len(steps), dtype=np.int64)
        self.within[self.order] = np.arange(len(steps)) - np.repeat(self.starts, self.counts)
        self._summary: pd.DataFrame | None = None

    @classmethod
    def from_parts(cls, files: list[str], parts: list[Part]) -> RunView:
        """The view of a cache's mapped segments (``open_segments``): their line numbers shifted here, in
        one pass."""
        parts = [p for p in parts if p.table.num_columns]  # as unify_tables keeps them: rows stay aligned
        tables = [p.table for p in parts]
        table = records.unify_tables(tables) if tables else _empty_table()
        rows = np.array([t.num_rows for t in tables], dtype=np.int64)
        if any(p.line_offset for p in parts):
            table = segments.shift_lines(table, np.repeat([p.line_offset for p in parts], rows))
        file_idx = np.repeat(np.array([p.file for p in parts], dtype=np.int32), rows)
        view = cls(files, table, file_idx)
        view.reward_parts = _reward_parts(tables)
        return view

    reward_parts: tuple[dict[str, float], str] | None = (
        None  # what the reward was made of, as the reader said
    )

    def with_column(self, name: str, values: pa.Array) -> RunView:
        """This view with one more column (in cache order), for what is worked out over the whole run later
        (template families): the rows, their order and the rest stay as they are."""
        view = copy.copy(self)
        view.table = self.table.append_column(name, values)
        view.batches = view.table.to_batches()
        return view

    @property
    def names(self) -> list[str]:
        """Every column of the run (a lazy view has more than its in-memory table)."""
        return self.table.column_names

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema

    def full(self, columns: list[str]) -> pa.Table:
        """Columns over every row, in cache order."""
        return self.table.select(columns)

    def pieces(self, columns: list[str]) -> Iterator[pa.Table]:
        """Columns over every row in cache order, in pieces that together are ``full(columns)``: one here;
        a lazy view gives one per file, so a pass over a huge run never holds all of it."""
        yield self.full(columns)

    def record(self, row: int) -> dict:
        """Every column of one row."""
        return self.table.slice(row, 1).to_pylist()[0]

    def has(self, name: str) -> bool:
        if name not in self.table.column_names:
            return False
        return self.table.column(name).null_count < self.table.num_rows

    def summary(self) -> pd.DataFrame:
        if self._summary is None:
            cols = [S.STEP] + [c for c in S.STEP_STAT_SOURCES.values() if self.has(c)]
            self._summary = derive.step_summary(self.table.select(cols).to_pandas())
        return self._summary

    def rows(self, step: int | None) -> np.ndarray:
        if step is None:
            return self.order
        pos = int(np.searchsorted(self.steps, step))
        if pos >= len(self.steps) or self.steps[pos] != step:
            raise InvalidArgumentError(f"step {step} is not in this run")
        start = self.starts[pos]
        return self.order[start : start + self.counts[pos]]

    def matching(self, step: int | None, filters: SampleFilter | None) -> np.ndarray:
        rows = self.rows(step)
        if filters is None or filters.is_empty:
            return rows
        if filters.only is not None:  # named samples (a tag's): chosen by step and index, not by a column
            rows = rows[filters.among(self.step_of[rows], self.within[rows])]
            filters = dataclasses.replace(filters, only=None)
            if filters.is_empty or not len(rows):
                return rows
            return rows[mask(self.take(filters.columns(), rows), filters)]
        cols = filters.columns()
        if step is None:
            keep = np.concatenate(
                [mask(piece, filters) for piece in self.pieces(cols)] or [np.zeros(0, bool)]
            )
            return rows[keep[rows]]
        return rows[mask(self.take(cols, rows), filters)]

    def take(self, columns: list[str], rows: np.ndarray) -> pa.Table:
        """Rows by global index, taken from each segment's batch.

        ``Table.take`` on a table of many chunks first joins the chunks: over
        a 10 GB run that copies every text column for a 2,000-row step.
        """
        if len(self.batches) <= 1 or len(rows) == 0:
            return self.table.select(columns).take(rows)
        chunk = np.searchsorted(self.batch_starts, rows, side="right") - 1
        local = rows - self.batch_starts[chunk]
        order = np.argsort(chunk, kind="stable")
        parts, bounds = [], np.flatnonzero(np.diff(chunk[order])) + 1
        for group in np.split(order, bounds):
            batch = self.batches[chunk[group[0]]].select(columns)
            parts.append(batch.take(pa.array(local[group])))
        taken = pa.Table.from_batches(parts).combine_chunks()
        return taken.take(np.argsort(order, kind="stable"))

    def columns(self, columns: list[str] | None) -> list[str]:
        names = self.names
        if columns is None:
            return [n for n in names if n not in _LIST_FIELDS and n not in (S.STEP, S.LINE)]
        extra = (STEP_COL, INDEX_COL, FILE_COL, LINE_COL)
        unknown = [c for c in columns if c not in names and c not in extra]
        if unknown:
            raise InvalidArgumentError(f"unknown column(s): {', '.join(unknown)}")
        return [c for c in columns if c in names and c not in (S.STEP, S.LINE)]

    def sort_order(self, rows: np.ndarray, sort_by: str, descending: bool) -> np.ndarray:
        if sort_by == INDEX_COL:
            keys = pa.table({"k": self.within[rows]})
        elif sort_by in self.names and _sortable(self.schema.field(sort_by).type):
            keys = self.take([sort_by], rows).rename_columns(["k"])
        else:
            raise InvalidArgumentError(f"cannot sort by {sort_by!r}")
        order = "descending" if descending else "ascending"
        return pc.sort_indices(keys, sort_keys=[("k", order)]).to_numpy()

    def frame(self, rows: np.ndarray, columns: list[str]) -> pd.DataFrame:
        head = pd.DataFrame({STEP_COL: self.step_of[rows], INDEX_COL: self.within[rows]})
        body = self.take(columns, rows).to_pandas() if columns else pd.DataFrame(index=head.index)
        files = pd.Categorical.from_codes(self.file_idx[rows], categories=self.files) if self.files else []
        tail = pd.DataFrame({FILE_COL: files, LINE_COL: self.line_of[rows]})
        return pd.concat([head, body, tail], axis=1)


def _empty_table() -> pa.Table:
    table = records.records_to_table([])
    return derive.with_sample_metrics(table)


def _sortable(kind: pa.DataType) -> bool:
    """Numbers, text, booleans and times sort; lists and objects do not."""
    return not (pa.types.is_nested(kind) or pa.types.is_null(kind))


def _reward_parts(tables: list[pa.Table]) -> tuple[dict[str, float], str] | None:
    """The reward's parts as the segments record them (``formats/rewards.py``), first seen first."""
    terms: dict[str, float] = {}
    how = ""
    for table in tables:
        found = rewards.components_of(table.schema)
        if found is not None:
            for name, weight in found[0].items():
                terms.setdefault(name, weight)
            how = how or found[1]
    return (terms, how) if terms else None
