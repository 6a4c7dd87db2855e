"""Per-sample signals of the failures RL runs repeat: answers that loop, and answers that switch scripts.

Computed at ingest with the other derived columns, per block, so they cost a
load little (both cores parse and derive in parallel):

- ``repetition`` (0–1): the share of the word 3-grams of the answer's last
  ``WINDOW`` words that repeat an earlier one in that window. Prose scores
  near 0; an answer looping one phrase until the length cap scores near 1.
  The window is the answer's end because a loop, once started, runs to it. An
  answer of fewer than ``MIN_WORDS`` words is too short to loop (0).
- ``scripts``: the writing systems the answer uses, ``+``-joined in a fixed
  order (``Latin``, ``Latin+Han``...), digits, punctuation and symbols left
  out (Unicode's Common and Inherited scripts); null for an answer with none.
  Found with RE2 over the whole column at once; only answers holding a
  character outside Latin and Common are looked at script by script.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rl_board.formats import schema as S
from rl_board.lazy import pc

WINDOW = 128  # words at the end of an answer that ``repetition`` reads
MIN_WORDS = 16  # an answer shorter than this is too short to loop: its repetition is 0
_TAIL_CHARS = WINDOW * 24  # enough characters to hold them (words are far shorter on average)
# Scripts in the order they are named; each an RE2 class. Han covers Chinese characters (and Japanese kanji).
SCRIPTS = (
    ("Latin", r"\p{Latin}"),
    ("Cyrillic", r"\p{Cyrillic}"),
    ("Greek", r"\p{Greek}"),
    ("Arabic", r"\p{Arabic}"),
    ("Hebrew", r"\p{Hebrew}"),
    ("Devanagari", r"\p{Devanagari}"),
    ("Thai", r"\p{Thai}"),
    ("Han", r"\p{Han}"),
    ("Hiragana", r"\p{Hiragana}"),
    ("Katakana", r"\p{Katakana}"),
    ("Hangul", r"\p{Hangul}"),
)
_OTHER = r"[^\p{Latin}\p{Common}\p{Inherited}]"
_ANY_LETTER = r"[^\p{Common}\p{Inherited}]"


def columns(table: pa.Table) -> dict[str, pa.Array]:
    """``repetition`` and ``scripts`` for every row of a block."""
    response = table.column(S.RESPONSE)
    return {S.REPETITION: _repetition(response), S.SCRIPTS: _scripts(response)}


def repetition(text: str) -> float:
    """One answer's ``repetition`` (see the module docstring)."""
    words = text[-_TAIL_CHARS:].rsplit(None, WINDOW)[-WINDOW:]  # split from the end: only the words kept
    grams = len(words) - 2
    if len(words) < MIN_WORDS:
        return 0.0
    return 1.0 - len(set(zip(words, words[1:], words[2:], strict=False))) / grams


def _repetition(response: pa.ChunkedArray) -> pa.Array:
    # repetition() slices each answer's tail itself: Arrow's utf8_slice_codeunits walked the tails at
    # ~7 us an answer, a third of the signal's time; a str slice costs a tenth of that
    return pa.array([None if t is None else repetition(t) for t in response.to_pylist()], pa.float64())


def _scripts(response: pa.ChunkedArray) -> pa.Array:
    """The scripts of each answer: RE2 over the column; per script only for answers beyond Latin."""
    text = pc.fill_null(response, "")
    other = np.zeros(len(text), bool)  # ASCII is Latin and Common only: RE2 reads the rest
    beyond = np.flatnonzero(~pc.string_is_ascii(text).to_numpy(zero_copy_only=False))
    if len(beyond):
        other[beyond] = pc.match_substring_regex(text.take(pa.array(beyond)), _OTHER).to_numpy(
            zero_copy_only=False
        )
    letters = pc.match_substring_regex(text, _ANY_LETTER).to_numpy(zero_copy_only=False)
    out: list[str | None] = ["Latin" if letters[i] else None for i in range(len(letters))]
    rows = [i for i in range(len(other)) if other[i]]
    if rows:
        picked = text.take(pa.array(rows))
        found = {
            name: pc.match_substring_regex(picked, pattern).to_numpy(zero_copy_only=False)
            for name, pattern in SCRIPTS
        }
        for k, i in enumerate(rows):
            names = [name for name, _ in SCRIPTS if found[name][k]]
            out[i] = "+".join(names) if names else "Other"
    nulls = response.is_null().to_numpy(zero_copy_only=False)
    return pa.array([None if nulls[i] else out[i] for i in range(len(out))], pa.string())
