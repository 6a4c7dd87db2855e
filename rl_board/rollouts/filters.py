"""Sample filters: numeric ranges and a text or regex search, as Arrow masks.

A regular expression is matched by RE2 (pyarrow's ``match_substring_regex``),
so it is checked by RE2 too: Python's ``re`` refuses valid RE2 such as
``\\p{Han}`` and accepts what RE2 refuses (look-behinds, back-references).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from rl_board import columns
from rl_board.errors import InvalidArgumentError
from rl_board.formats import schema as S
from rl_board.lazy import pc, pd

DEFAULT_TEXT_FIELDS = (S.PROMPT, S.RESPONSE, S.GROUND_TRUTH)


@dataclass(frozen=True)
class SampleFilter:
    """Which samples to keep. Empty = all.

    ``ranges`` maps a numeric per-sample column to inclusive ``(low, high)``
    bounds (either may be None). ``text`` is matched in ``text_fields`` as a
    plain substring, or as a regular expression when ``regex`` is true (RE2
    syntax); matching ignores case unless ``case_sensitive``.
    """

    ranges: tuple[tuple[str, float | None, float | None], ...] = ()
    text: str = ""
    regex: bool = False
    case_sensitive: bool = False
    text_fields: tuple[str, ...] = DEFAULT_TEXT_FIELDS
    steps: tuple[int, ...] = field(default=())
    contains: tuple[tuple[str, str], ...] = ()  # (column, text): the column holds the text (any case)
    one_of: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (column, values): the column is one of them
    only: tuple[tuple[int, int], ...] | None = (
        None  # (step, sample) pairs to keep (the samples with a tag); None: any
    )

    @classmethod
    def build(
        cls,
        *,
        ranges: dict[str, tuple[float | None, float | None]] | None = None,
        text: str = "",
        regex: bool = False,
        case_sensitive: bool = False,
        text_fields: tuple[str, ...] = DEFAULT_TEXT_FIELDS,
        contains: dict[str, str] | None = None,
        one_of: Mapping[str, list[str] | tuple[str, ...]] | None = None,
        only: list[tuple[int, int]] | tuple[tuple[int, int], ...] | None = None,
    ) -> SampleFilter:
        """Build from a dict of ranges; checks the search text early so the message is clear.

        ``contains`` keeps the samples whose column holds a text (plain, any case; e.g. ``tools``: "search"),
        ``one_of`` those whose column is one of some values (e.g. ``finish_reason``: length, turn_limit); an
        empty text or list keeps everything. ``only`` keeps just the samples named by (step, sample) (what a
        label store says carries a tag: labels live outside the run's columns); an empty list keeps none.
        """
        for name, value in (
            ("search text", text),
            *((f"text for {k}", v) for k, v in (contains or {}).items()),
        ):
            if value:
                check_search(value, regex=regex and name == "search text", case_sensitive=case_sensitive)
        items = tuple((k, lo, hi) for k, (lo, hi) in sorted((ranges or {}).items()))
        held = tuple((k, v) for k, v in sorted((contains or {}).items()) if v)
        among = tuple((k, tuple(v)) for k, v in sorted((one_of or {}).items()) if v)
        pairs = None if only is None else tuple(sorted({(int(s), int(i)) for s, i in only}))
        return cls(
            items, text, regex, case_sensitive, tuple(text_fields), contains=held, one_of=among, only=pairs
        )

    @property
    def is_empty(self) -> bool:
        return (
            not self.text
            and not self.contains
            and not self.one_of
            and self.only is None
            and all(lo is None and hi is None for _, lo, hi in self.ranges)
        )

    def among(self, steps: np.ndarray, samples: np.ndarray) -> np.ndarray:
        """Which of the samples (their steps and indices within the step) ``only`` keeps (all when it is
        None)."""
        if self.only is None:
            return np.ones(len(steps), dtype=bool)
        if not self.only:
            return np.zeros(len(steps), dtype=bool)
        wanted = np.array(self.only, dtype=np.int64)
        return pd.MultiIndex.from_arrays([steps, samples]).isin(pd.MultiIndex.from_arrays(wanted.T))

    def columns(self) -> list[str]:
        """Columns the filter reads."""
        cols = [name for name, lo, hi in self.ranges if lo is not None or hi is not None]
        cols += [name for name, _ in (*self.contains, *self.one_of) if name not in cols]
        return cols + (list(self.text_fields) if self.text else [])


# One row (an empty array never compiles the pattern); pa.array would import pandas.
_PROBE = columns.strings([""])
_ARROW_PREFIX = "Invalid regular expression: "


def check_search(text: str, *, regex: bool, case_sensitive: bool = False) -> None:
    """Refuse, with the matcher's own reason, a search the matcher could not run (InvalidArgumentError)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            f"the search text {text[:200]!r} is not valid Unicode (a lone surrogate)"
        ) from None
    if regex:
        _match(_PROBE, text, regex=True, ignore_case=not case_sensitive)


def _match(column: pa.ChunkedArray | pa.Array, text: str, *, regex: bool, ignore_case: bool) -> pa.Array:
    """Where ``text`` occurs in a string column; a pattern RE2 refuses is an InvalidArgumentError."""
    try:
        if regex:
            return pc.match_substring_regex(column, text, ignore_case=ignore_case)
        return pc.match_substring(column, text, ignore_case=ignore_case)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        reason = str(exc).removeprefix(_ARROW_PREFIX)[:200]
        raise InvalidArgumentError(f"invalid regular expression {text[:200]!r}: {reason}") from None


def mask(table: pa.Table, flt: SampleFilter) -> np.ndarray:
    """Boolean array: which rows of ``table`` pass the filter."""
    keep = np.ones(table.num_rows, dtype=bool)
    for name, lo, hi in flt.ranges:
        if lo is None and hi is None:
            continue
        if name not in table.column_names:
            raise InvalidArgumentError(f"cannot filter on unknown column {name!r}")
        values = pc.cast(table.column(name), pa.float64()).to_numpy(zero_copy_only=False)  # nulls -> NaN
        with np.errstate(invalid="ignore"):
            if lo is not None:
                keep &= values >= lo
            if hi is not None:
                keep &= values <= hi
    if flt.text:
        keep &= _text_mask(table, flt)
    for name, text in flt.contains:
        found = _match(_column(table, name), text, regex=False, ignore_case=True)
        keep &= pc.fill_null(found, False).to_numpy(zero_copy_only=False)
    for name, values in flt.one_of:
        found = pc.is_in(_column(table, name), value_set=pa.array(list(values), pa.string()))
        keep &= pc.fill_null(found, False).to_numpy(zero_copy_only=False)
    return keep


def _column(table: pa.Table, name: str) -> pa.ChunkedArray:
    """A text column to match in (a missing one is an InvalidArgumentError, as for ranges)."""
    if name not in table.column_names:
        raise InvalidArgumentError(f"cannot filter on unknown column {name!r}")
    column = table.column(name)
    return (
        column
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
        else pc.cast(column, pa.string())
    )


def _text_mask(table: pa.Table, flt: SampleFilter) -> np.ndarray:
    hit = np.zeros(table.num_rows, dtype=bool)
    ignore_case = not flt.case_sensitive
    for name in flt.text_fields:
        if name not in table.column_names:
            continue
        column = table.column(name)
        if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
            continue
        found = _match(column, flt.text, regex=flt.regex, ignore_case=ignore_case)
        hit |= pc.fill_null(found, False).to_numpy(zero_copy_only=False)
    return hit
