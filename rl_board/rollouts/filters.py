"""Sample filters: numeric ranges and a text or regex search, as Arrow masks.

A regular expression is matched by RE2 (pyarrow's ``match_substring_regex``),
so it is checked by RE2 too: Python's ``re`` refuses valid RE2 such as
``\\p{Han}`` and accepts what RE2 refuses (look-behinds, back-references).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rl_board.errors import InvalidArgumentError
from rl_board.formats import schema as S

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

    @classmethod
    def build(
        cls,
        *,
        ranges: dict[str, tuple[float | None, float | None]] | None = None,
        text: str = "",
        regex: bool = False,
        case_sensitive: bool = False,
        text_fields: tuple[str, ...] = DEFAULT_TEXT_FIELDS,
    ) -> SampleFilter:
        """Build from a dict of ranges; checks the search text early so the message is clear."""
        if text:
            check_search(text, regex=regex, case_sensitive=case_sensitive)
        items = tuple((k, lo, hi) for k, (lo, hi) in sorted((ranges or {}).items()))
        return cls(items, text, regex, case_sensitive, tuple(text_fields))

    @property
    def is_empty(self) -> bool:
        return not self.text and all(lo is None and hi is None for _, lo, hi in self.ranges)

    def columns(self) -> list[str]:
        """Columns the filter reads."""
        cols = [name for name, lo, hi in self.ranges if lo is not None or hi is not None]
        return cols + (list(self.text_fields) if self.text else [])


_PROBE = pa.array([""], pa.string())  # one row: an empty array never compiles the pattern
_ARROW_PREFIX = "Invalid regular expression: "


def check_search(text: str, *, regex: bool, case_sensitive: bool = False) -> None:
    """Refuse, with the matcher's own reason, a search the matcher could not run (InvalidArgumentError)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"the search text {text[:200]!r} is not valid Unicode (a lone surrogate)") from None
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
    return keep


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
