"""Arrow columns to and from numpy without pyarrow's pandas shim: the same values as pyarrow's own."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from rl_board import columns


@pytest.mark.parametrize("kind", [pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.uint8()])
def test_to_numpy_equals_pyarrows(kind: pa.DataType) -> None:
    values = pa.array([3, 1, 4, 1, 5, 9, 2, 6], kind)
    chunked = pa.chunked_array([values.slice(0, 3), values.slice(3)])
    for column in (values, values.slice(2, 4), chunked):
        got = columns.to_numpy(column)
        assert got.dtype == column.type.to_pandas_dtype()
        assert np.array_equal(got, column.to_numpy())


def test_to_numpy_with_nulls_or_text_falls_back_to_pyarrow() -> None:
    with_null = pa.array([1.0, None, 3.0])
    assert np.array_equal(columns.to_numpy(with_null), [1.0, np.nan, 3.0], equal_nan=True)
    assert columns.to_numpy(pa.array(["a", "b"])).tolist() == ["a", "b"]


def test_from_numpy_and_strings_build_what_pa_array_builds() -> None:
    data = np.arange(5, dtype=np.int64)[::2]  # not contiguous
    assert columns.from_numpy(data, pa.int64()).equals(pa.array(data, pa.int64()))
    assert columns.from_numpy(np.array([1, 2]), pa.int32()).equals(pa.array([1, 2], pa.int32()))
    names = ["rank0.jsonl", "", "ränk-1 ✓.jsonl"]
    assert columns.strings(names).equals(pa.array(names, pa.string()))
    assert columns.strings([]).equals(pa.array([], pa.string()))


def test_none_of_it_imports_pandas() -> None:
    code = (
        "import sys, numpy as np, pyarrow as pa; from rl_board import columns; "
        "a = columns.from_numpy(np.arange(4), pa.int64()); columns.to_numpy(pa.chunked_array([a, a])); "
        "columns.strings(['x']); print('pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
