"""Derived metrics: per token, per sample and per step. Pure functions.

Per token (when both log-prob arrays exist), with the estimators of ``kl.py``:
    log_ratio = logp - ref_logp            (k1; float64, kept as ``token_log_ratio``)
    kl_k2     = ½·log_ratio²               (k2)
    kl        = exp(-log_ratio) - 1 + log_ratio   (k3, the default KL: unbiased, never < 0)
    prob      = exp(logp),  ref_prob = exp(ref_logp)
Per sample: NaN-aware mean and sum of each estimator over the aligned tokens
(the shorter of the two arrays), lengths, reward gaps. Per step: count, mean,
std (population, ddof=0), min and max of the per-sample numbers.

The per-sample numbers and the cached per-token log-ratio are taken from the
float64 log-probs as parsed; the token arrays are narrowed to float32 only
afterwards, so a token table (``token_frame``) built from ``token_log_ratio``
agrees with the per-sample means and sums.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rl_board.formats import fields as F
from rl_board.formats import schema as S
from rl_board.lazy import pc, pd
from rl_board.rollouts import kl, signals, trajectories

# Columns rl-board adds beside the logged keys: the derived ones, and those the step browser's rows carry
# (``RunView.frame``: sample, file, line). A logged key of one of these names is kept as ``<name>_logged``.
ADDED_COLUMNS = frozenset((*S.DERIVED_SAMPLE_FIELDS, *S.DERIVED_TOKEN_LISTS, "sample", "file", "line"))


def probs(logp: np.ndarray) -> np.ndarray:
    """Token probability from its log-probability."""
    with np.errstate(over="ignore"):
        return np.exp(np.asarray(logp, dtype=np.float64))


def _list_parts(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, lengths, flat float64 values) of a list column; null lists are empty."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if isinstance(arr, pa.ChunkedArray):  # combine_chunks of zero chunks
        arr = pa.array([], arr.type)
    offsets = arr.offsets.to_numpy()
    lengths = np.diff(offsets)
    if arr.null_count:
        lengths = np.where(arr.is_null().to_numpy(zero_copy_only=False), 0, lengths)
    values = arr.values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    return offsets[:-1], lengths, values


def _gather(starts: np.ndarray, take: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat values of the first ``take[i]`` items of each row, and their row ids."""
    rows = np.repeat(np.arange(len(take)), take)
    first = np.repeat(np.cumsum(take) - take, take)
    idx = np.repeat(starts, take) + (np.arange(len(rows)) - first)
    return values[idx], rows


def _segment_mean_sum(
    values: np.ndarray, rows: np.ndarray, n: int, per_row: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """NaN-aware per-row mean and sum; rows with no finite-or-inf value get NaN. ``per_row``: how many
    values each row has (float64)."""
    nan = np.isnan(values)
    if nan.any():
        valid = ~nan
        sums = np.bincount(rows, weights=np.where(valid, values, 0.0), minlength=n)
        counts = np.bincount(rows, weights=valid, minlength=n)
    else:  # the usual case: the same sums (added in the same order), the counts without a second pass
        sums = np.bincount(rows, weights=values, minlength=n)
        counts = per_row
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return means, np.where(counts > 0, sums, np.nan)


def _lengths_or_null(column: pa.ChunkedArray) -> pa.Array:
    return pc.list_value_length(column).cast(pa.int64())


def _lengths(lengths_or_null: pa.Array) -> np.ndarray:
    """List lengths with null lists as 0."""
    return pc.fill_null(lengths_or_null, 0).to_numpy(zero_copy_only=False)


def _aligned_pairs(
    table: pa.Table, lp_len: np.ndarray, ref_len: np.ndarray, aligned: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(logp items, their rows, ref_logp items) over the first ``aligned[i]`` tokens of each row."""
    if np.array_equal(lp_len, ref_len):  # the usual case: both arrays as they are
        lp_flat, rows = _flat(table.column(S.LOGPROBS))
        return lp_flat, rows, _flat(table.column(S.REF_LOGPROBS))[0]
    lp_start, _, lp_vals = _list_parts(table.column(S.LOGPROBS))
    ref_start, _, ref_vals = _list_parts(table.column(S.REF_LOGPROBS))
    lp_flat, rows = _gather(lp_start, aligned, lp_vals)
    return lp_flat, rows, _gather(ref_start, aligned, ref_vals)[0]


def sample_metrics(table: pa.Table) -> dict[str, pa.Array]:
    """Per-sample derived columns for a parsed table (see module docstring)."""
    n = table.num_rows
    n_logprobs = _lengths_or_null(table.column(S.LOGPROBS))
    n_tokens_raw = _lengths_or_null(table.column(S.RESPONSE_TOKENS))
    n_tokens = pc.coalesce(n_tokens_raw, n_logprobs)
    mismatch = pc.fill_null(pc.not_equal(n_tokens_raw, n_logprobs), False)

    lp_len = _lengths(n_logprobs)
    ref_len = _lengths(_lengths_or_null(table.column(S.REF_LOGPROBS)))
    aligned = np.minimum(lp_len, ref_len)
    lp_flat, rows, ref_flat = _aligned_pairs(table, lp_len, ref_len, aligned)
    ratio = kl.log_ratio(lp_flat, ref_flat)
    has_pair = aligned > 0
    per_row = aligned.astype(np.float64)  # each row's pairs: the count of an estimate without NaN
    per_estimator = {}
    for estimator in F.KL_ESTIMATORS:
        mean, total = _segment_mean_sum(kl.ESTIMATES[estimator.name](ratio), rows, n, per_row)
        per_estimator[estimator.mean] = pa.array(mean, mask=~has_pair)
        per_estimator[estimator.sum] = pa.array(total, mask=~has_pair)

    return {
        S.N_TOKENS: n_tokens,
        S.N_LOGPROBS: n_logprobs,
        S.LENGTH_MISMATCH: mismatch,
        S.RESPONSE_CHARS: pc.utf8_length(table.column(S.RESPONSE)).cast(pa.int64()),
        S.REF_RESPONSE_CHARS: pc.utf8_length(table.column(S.REF_RESPONSE)).cast(pa.int64()),
        **{
            name: per_estimator[name]
            for name in (S.LOG_RATIO_MEAN, S.LOG_RATIO_SUM, S.KL_K2_MEAN, S.KL_K2_SUM, S.KL_MEAN, S.KL_SUM)
        },
        S.REWARD_GAP: pc.subtract(table.column(S.REWARD), table.column(S.REF_REWARD)),
        S.VALID_REWARD_GAP: pc.subtract(table.column(S.VALID_REWARD), table.column(S.REF_VALID_REWARD)),
        S.NONFINITE_TOKENS: pa.array(_nonfinite_counts(table, n)),
        S.TOKEN_LOG_RATIO: _token_lists(ratio, aligned, has_pair),
    }


def _token_lists(values: np.ndarray, lengths: np.ndarray, present: np.ndarray) -> pa.Array:
    """Per-row lists of ``values`` (``lengths[i]`` items each, in row order), null where not ``present``.

    Narrowed to the cache's token width: a log-ratio near 0 keeps its ~7 significant digits in float32.
    """
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    items = pa.array(values.astype(np.float32), type=S.TOKEN_FLOAT)
    return pa.ListArray.from_arrays(offsets, items, mask=pa.array(~present))


def _flat(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """All items of a list column as float64 (null items = NaN) and each item's row."""
    return _items(column), _rows(column)


def _items(column: pa.ChunkedArray) -> np.ndarray:
    return pc.list_flatten(column).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)


def _rows(column: pa.ChunkedArray) -> np.ndarray:
    return pc.list_parent_indices(column).to_numpy(zero_copy_only=False)


def _nonfinite_counts(table: pa.Table, n: int) -> np.ndarray:
    total = np.zeros(n, dtype=np.int64)
    for name in S.FLOAT_LIST_FIELDS:
        column = table.column(name)
        bad = ~np.isfinite(_items(column))
        if bad.any():  # the rows only then: most blocks hold no NaN nor inf
            total += np.bincount(_rows(column)[bad], minlength=n)
    return total


def clashes_renamed(table: pa.Table) -> tuple[pa.Table, dict[str, str]]:
    """The table with logged keys named like a column rl-board adds renamed, and ``{old: new}``.

    Left as they are, one such key makes every segment of the run fail (duplicate field) or the step
    browser's rows ambiguous; ``<name>_logged`` keeps the value, as a field map does for displaced keys.
    """
    names = table.column_names
    clashing = [n for n in names if n in ADDED_COLUMNS]
    if not clashing:
        return table, {}
    taken = set(names)
    renames: dict[str, str] = {}
    for name in clashing:
        new = f"{name}_logged"
        while new in taken:
            new += "_logged"
        taken.add(new)
        renames[name] = new
    renamed = table.rename_columns([renames.get(n, n) for n in names])
    return renamed.replace_schema_metadata(table.schema.metadata), renames


def with_sample_metrics(table: pa.Table) -> pa.Table:
    """Append derived columns and narrow token floats to the cache width (clashing keys renamed first)."""
    table, _ = clashes_renamed(table)
    derived = {**sample_metrics(table), **trajectories.columns(table), **signals.columns(table)}
    for name, values in derived.items():
        table = table.append_column(name, values)
    for name in S.FLOAT_LIST_FIELDS:
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, table.column(i).cast(pa.list_(S.TOKEN_FLOAT)))
    return table


def step_summary(samples: pd.DataFrame, sources: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per step (sorted numerically): count and mean/std/min/max of each source column."""
    sources = S.STEP_STAT_SOURCES if sources is None else sources
    present = {k: v for k, v in sources.items() if v in samples.columns}
    grouped = samples.groupby(S.STEP, sort=True)
    out = pd.DataFrame({"samples": grouped.size()})
    for prefix, column in present.items():
        values = samples[column].astype("float64")
        g = values.groupby(samples[S.STEP], sort=True)
        out[f"{prefix}_mean"] = g.mean()
        out[f"{prefix}_std"] = g.std(ddof=0)
        out[f"{prefix}_min"] = g.min()
        out[f"{prefix}_max"] = g.max()
        out[f"{prefix}_p10"] = g.quantile(0.1)
        out[f"{prefix}_p90"] = g.quantile(0.9)
        out[f"{prefix}_count"] = g.count()
    return out.reset_index()


def token_frame(
    *,
    tokens: list[str] | None,
    logprobs: np.ndarray | None,
    ref_logprobs: np.ndarray | None,
    values: np.ndarray | None,
    token_rewards: np.ndarray | None,
    log_ratios: np.ndarray | None = None,
) -> pd.DataFrame:
    """One row per token with every per-token metric, aligned to the shortest array.

    Token strings and metric arrays can disagree in length (trailing pad or end
    tokens); rows stop at the shorter of tokens and log-probs, and arrays that
    are absent become NaN columns. ``log_ratios`` is the cached ``token_log_ratio``
    (taken before the log-probs were narrowed); without it the log-ratio is
    logp − ref_logp of the arrays given.
    """
    arrays = {
        "logp": logprobs,
        "ref_logp": ref_logprobs,
        "value": values,
        "token_reward": token_rewards,
    }
    lengths = [len(a) for a in arrays.values() if a is not None]
    if tokens is not None:
        lengths.append(len(tokens))
    n = min(lengths) if lengths else 0
    if tokens is not None and logprobs is not None:
        n = min(len(tokens), len(logprobs))
    frame = pd.DataFrame({"token": (tokens[:n] if tokens is not None else [""] * n)})
    for name, arr in arrays.items():
        frame[name] = _fit(arr, n)
    computed = kl.log_ratio(frame["logp"].to_numpy(), frame["ref_logp"].to_numpy())
    frame["log_ratio"] = computed if log_ratios is None else _fit(log_ratios, n)
    for estimator in F.KL_ESTIMATORS:
        frame[estimator.token] = kl.ESTIMATES[estimator.name](frame["log_ratio"].to_numpy())
    frame["prob"] = probs(frame["logp"].to_numpy())
    frame["ref_prob"] = probs(frame["ref_logp"].to_numpy())
    return frame[["token", *S.TOKEN_METRICS]]


def _fit(arr: np.ndarray | None, n: int) -> np.ndarray:
    out = np.full(n, np.nan)
    if arr is not None:
        m = min(n, len(arr))
        out[:m] = np.asarray(arr[:m], dtype=np.float64)
    return out
