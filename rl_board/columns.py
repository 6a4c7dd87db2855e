"""Arrow columns as numpy arrays without pyarrow's ``to_numpy``.

pyarrow's ``to_numpy`` consults its pandas shim, which imports pandas (0.15 s)
on first use. A fixed-width column without nulls is a plain buffer: numpy
reads it in place, so a command that only maps the cache never pays that.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_DTYPES = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


def to_numpy(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The column's values (read in place when it is one fixed-width chunk without nulls)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    dtype = _DTYPES.get(array.type)
    if dtype is None or array.null_count:
        return array.to_numpy(zero_copy_only=False)
    values = np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array) + array.offset)
    return values[array.offset :]


def from_numpy(values: np.ndarray, kind: pa.DataType) -> pa.Array:
    """A numpy array as a fixed-width Arrow column (``pa.array`` would import pandas to look at it)."""
    dtype = _DTYPES[kind]
    data = np.ascontiguousarray(values, dtype=dtype)
    return pa.Array.from_buffers(kind, len(data), [None, pa.py_buffer(data)])


def strings(values: list[str]) -> pa.Array:
    """Python strings as an Arrow string column (without ``pa.array``, as above)."""
    encoded = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(
        pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )


def true_count(column: pa.BooleanArray | pa.ChunkedArray) -> int:
    """How many values are true (nulls are not): ``pc.sum`` of a flag column without pyarrow.compute."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return sum(chunk.true_count for chunk in chunks)


def empty_table(types: dict[str, pa.DataType]) -> pa.Table:
    """A table of no rows with these columns (``pa.array([])`` and ``schema.empty_table()`` import
    pandas)."""
    return pa.table({name: pa.nulls(0, kind) for name, kind in types.items()})
