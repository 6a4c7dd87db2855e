"""Response lengths per step: their distribution, and the share that hit the length limit (truncation)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rl_board.formats import schema as S

BINS = 30


def length_table(samples: pd.DataFrame, column: str, *, bins: int = BINS) -> tuple[pd.DataFrame, np.ndarray]:
    """Counts per (step, length bin) as a step × bin frame, and the bin edges (shared by all steps)."""
    values = samples[column].astype("float64")
    finite = values[np.isfinite(values)]
    if finite.empty:
        return pd.DataFrame(), np.array([])
    edges = np.linspace(float(finite.min()), float(finite.max()) + 1.0, bins + 1)
    which = np.clip(np.digitize(values, edges) - 1, 0, bins - 1)
    frame = pd.DataFrame({S.STEP: samples[S.STEP], "bin": which})[np.isfinite(values)]
    counts = (
        frame.groupby([S.STEP, "bin"]).size().unstack(fill_value=0).reindex(columns=range(bins), fill_value=0)
    )
    return counts, edges


def truncation_share(samples: pd.DataFrame, column: str) -> pd.Series:
    """Per step, the share of samples at the run's longest length (the generation limit, when one was hit)."""
    values = samples[column].astype("float64")
    limit = values.max()
    at_limit = (values >= limit).astype("float64").where(values.notna())
    return at_limit.groupby(samples[S.STEP]).mean()
