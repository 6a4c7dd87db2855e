"""A reward made of parts: the weighted sum of reward columns, and which columns those are.

TRL scores a completion with several reward functions and adds them up with
``reward_weights``; a function that cannot score a row returns ``None``
(stored as NaN) and is left out of the sum, and a row no function could score
has no reward at all (NaN), not zero. The same rule makes the reward of any
run whose field map says ``reward = "a + 0.5*b"``.

Which columns are the reward's parts is recorded in the table's schema
metadata (``COMPONENTS_KEY``), so views show exactly those as reward
components and never a ``log_extra`` column that happens to hold numbers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from rl_board.lazy import pc

COMPONENTS_KEY = b"rl_board.reward_components"  # {"terms": {column: weight}, "how": "..."}
Terms = Mapping[str, float]


def weighted_sum(table: pa.Table, terms: Terms) -> pa.Array:
    """Σ weight·column per row, NaN and null terms skipped; NaN where no term has a value."""
    if not terms:
        return pa.nulls(table.num_rows, pa.float64())
    values = np.column_stack([_floats(table.column(name)) for name in terms])
    weights = np.array(list(terms.values()), dtype=np.float64)
    present = ~np.isnan(values)
    total = np.where(present, values * weights, 0.0).sum(axis=1)
    return pa.array(np.where(present.any(axis=1), total, np.nan), pa.float64())


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)


def with_reward(table: pa.Table, terms: Terms, how: str) -> pa.Table:
    """``reward`` set to the weighted sum of ``terms``, and the parts recorded in the schema metadata."""
    index = table.schema.get_field_index("reward")
    reward = weighted_sum(table, terms)
    table = table.set_column(index, "reward", reward) if index >= 0 else table.append_column("reward", reward)
    return mark_components(table, terms, how)


def mark_components(table: pa.Table, terms: Terms, how: str) -> pa.Table:
    """Record which columns are the reward's parts (and how rl-board knows) in the schema metadata."""
    meta = dict(table.schema.metadata or {})
    meta[COMPONENTS_KEY] = json.dumps({"terms": dict(terms), "how": how}).encode()
    return table.replace_schema_metadata(meta)


def components_of(schema: pa.Schema) -> tuple[dict[str, float], str] | None:
    """The reward's parts and how they were found, when a table says so (None otherwise)."""
    raw = (schema.metadata or {}).get(COMPONENTS_KEY)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        return {str(k): float(v) for k, v in data["terms"].items()}, str(data.get("how", ""))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def is_number(kind: pa.DataType) -> bool:
    return pa.types.is_floating(kind) or pa.types.is_integer(kind)
