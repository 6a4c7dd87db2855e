"""Arrays of strings (a sample's response tokens) from their JSON text, a block at a time.

A token per Python string was the dearest part of reading a long line: simdjson's ``as_list`` made ~700
``str`` a sample and ``pa.array`` read them back for Arrow, ~65 us a sample, a third of the parse. simdjson
hands the same array over as its minified text in one call (``Array.mini``), and writes that text one way
only: strings in double quotes, one comma between items, no spaces, every character as UTF-8 but for
``\\"``, ``\\\\``, ``\\b \\f \\n \\r \\t`` and ``\\u00XX`` for the other control characters. Text so
regular is read for a whole block at once with numpy: where each string starts and ends, which bytes an
escape drops, and the Arrow buffers built from them, with no Python object per token.

Whatever does not read as such a text (an item that is not a string, an escape simdjson would not write)
gives None, and the caller reads the arrays as Python lists, as before.
"""

from __future__ import annotations

import numpy as np
import orjson
import pyarrow as pa

_QUOTE, _BACKSLASH, _OPEN, _CLOSE, _ZERO, _U = (ord(c) for c in '"\\[]0u')

_UNESCAPED = np.full(256, -1, np.int16)  # the byte a two-character escape stands for, by its second byte
for _code, _byte in zip(b'"\\/bfnrt', b'"\\/\b\f\n\r\t', strict=True):
    _UNESCAPED[_code] = _byte
_HEX = np.full(256, -1, np.int16)
for _i, _digit in enumerate(b"0123456789abcdef"):
    _HEX[_digit] = _i
    _HEX[bytes([_digit]).upper()[0]] = _i


class JsonText(bytes):
    """An array's minified JSON text as simdjson wrote it: a record's value until its block's column is
    built (``from_texts``), or read back as a list (``as_list``)."""

    __slots__ = ()


def as_list(value: JsonText) -> list:
    """The array as Python values (orjson reads simdjson's text as simdjson read the line)."""
    return orjson.loads(memoryview(value))  # orjson takes no subclass of bytes


def from_texts(texts: list[JsonText | None]) -> pa.Array | None:
    """list<string> of the arrays written in ``texts`` (None: a null list); None when one of them holds
    anything but strings, or is not written as simdjson writes."""
    present = [text for text in texts if text is not None]
    sizes = np.fromiter(map(len, present), np.int64, count=len(present))
    ends = np.cumsum(sizes)
    starts = ends - sizes
    buf = np.frombuffer(b"".join(present), np.uint8)
    if (
        len(buf) >= 2**31
        or (sizes < 2).any()
        or (buf[starts] != _OPEN).any()
        or (buf[ends - 1] != _CLOSE).any()
    ):
        return None
    quotes = np.flatnonzero(buf == _QUOTE)
    slashes = np.flatnonzero(buf == _BACKSLASH)
    escapes = _escape_starts(slashes) if len(slashes) else slashes
    if len(escapes):
        escaped = np.zeros(len(buf), bool)
        escaped[escapes + 1] = True
        quotes = quotes[~escaped[quotes]]  # an escaped quote is a string's character
    strings = _strings(quotes, starts, ends)
    if strings is None:
        return None
    opens, closes, per_text = strings
    keep = np.ones(len(buf), bool)
    keep[starts] = keep[ends - 1] = keep[opens] = keep[closes] = False
    keep[closes[:-1] + 1] = False  # the commas, and the "]" that ends a text (already dropped)
    lengths = closes - opens - 1
    if len(escapes):
        unescaped = _unescaped(buf, escapes, keep)
        if unescaped is None:
            return None
        buf, dropped = unescaped
        owner = np.searchsorted(opens, escapes, side="right") - 1
        lengths -= np.bincount(owner, weights=dropped, minlength=len(opens)).astype(np.int64)
    data = buf[keep]
    offsets = np.zeros(len(opens) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    items = pa.StringArray.from_buffers(len(opens), pa.py_buffer(offsets), pa.py_buffer(data))
    return _lists(texts, per_text, items)


def _escape_starts(slashes: np.ndarray) -> np.ndarray:
    """The backslashes that begin an escape: in a run of them, the first, third ... (``\\\\\\\\`` is two
    escaped backslashes)."""
    index = np.arange(len(slashes))
    run_start = np.ones(len(slashes), bool)
    run_start[1:] = np.diff(slashes) != 1
    first = np.maximum.accumulate(np.where(run_start, index, 0))
    return slashes[(index - first) % 2 == 0]


def _strings(
    quotes: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Each string's opening and closing quote and how many strings each text holds; None unless every
    text is exactly ``[`` strings joined by ``,`` ``]``: the texts are JSON, so one byte between two strings
    of an array is a comma."""
    per_text = np.searchsorted(quotes, ends) - np.searchsorted(quotes, starts)
    if (per_text % 2).any():
        return None
    per_text //= 2
    opens, closes = quotes[0::2], quotes[1::2]
    first = np.zeros(len(opens), bool)
    first[np.cumsum(per_text)[per_text > 0] - per_text[per_text > 0]] = True
    last = np.roll(first, -1) if len(first) else first
    owner = np.repeat(np.arange(len(per_text)), per_text)
    after = np.empty_like(opens)
    after[1:] = closes[:-1] + 2  # where a string must open if it follows another (after `",`)
    expected = np.where(first, starts[owner] + 1, after)
    if (opens != expected).any() or (closes[last] != ends[owner[last]] - 2).any():
        return None
    if (ends - starts)[per_text == 0].max(initial=2) != 2:  # "[]", not an array of anything else
        return None
    return opens, closes, per_text


def _unescaped(
    buf: np.ndarray, escapes: np.ndarray, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The text with each escape's character written at its last byte (the bytes before it dropped from
    ``keep``), and how many bytes each escape drops; None for an escape simdjson does not write."""
    kinds = buf[escapes + 1]
    simple = _UNESCAPED[kinds]
    unicode = kinds == _U
    if ((simple < 0) & ~unicode).any():
        return None
    out = buf.copy()
    two = escapes[~unicode]
    out[two + 1] = simple[~unicode]
    keep[two] = False
    six = escapes[unicode]
    if len(six):
        if six[-1] + 5 >= len(buf):
            return None
        high, low = _HEX[buf[six + 4]], _HEX[buf[six + 5]]
        if (
            (buf[six + 2] != _ZERO).any()
            or (buf[six + 3] != _ZERO).any()
            or (high < 0).any()
            or (low < 0).any()
        ):
            return None
        code = high * 16 + low
        if (code >= 0x80).any():
            return None
        out[six + 5] = code
        for skip in range(5):
            keep[six + skip] = False
    return out, np.where(unicode, 5, 1)


def _lists(texts: list[JsonText | None], per_text: np.ndarray, items: pa.Array) -> pa.Array:
    """The list array of ``items``, ``per_text`` of them for each present text, null where a text is
    None."""
    counts = np.zeros(len(texts), np.int64)
    nulls = np.fromiter((text is None for text in texts), bool, count=len(texts))
    counts[~nulls] = per_text
    offsets = np.zeros(len(texts) + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    mask = pa.array(nulls) if nulls.any() else None
    return pa.ListArray.from_arrays(pa.array(offsets), items, mask=mask)
