"""KL to the reference, estimated per token: k1, k2 and k3, each defined here and nowhere else.

A rollout's tokens are sampled from the policy π. With the per-token log-ratio
``lr = log π(x) − log π_ref(x)`` (``log_ratio``), Schulman's estimators of
KL(π‖π_ref) = E_{x~π}[log π(x) − log π_ref(x)] are (http://joschu.net/blog/kl-approx.html):

    k1 = lr                    unbiased; either sign, high variance
    k2 = ½·lr²                 never negative, low variance; biased (close to KL only while KL is small)
    k3 = exp(−lr) − 1 + lr     unbiased and never negative: r − 1 − log r with r = π_ref/π, and E_π[r] = 1

k3 is rl-board's "KL" unless the user picks another (sidebar, ``kl_estimator=k2`` in the URL). It is
verl's ``low_var_kl`` (``kl_loss_type`` / ``kl_penalty`` "low_var_kl" or "k3"; verl clamps lr to ±20 and
the result to ±10, rl-board does not) and TRL GRPO's per-token KL; verl's "kl"/"k1" is k1 and its
"mse"/"k2" is k2. The opposite orientation, exp(lr) − 1 − lr, is *not* a KL estimate for tokens drawn
from π: its expectation is χ²(π‖π_ref) − KL(π‖π_ref).

Everything is float64: a log-ratio near 0 is the difference of two close log-probs, and exp/expm1 of it
must not be taken in float32. The same definitions are DuckDB macros in the SQL view (``SQL_MACROS``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

K1, K2, K3 = "k1", "k2", "k3"


def log_ratio(logp: np.ndarray, ref_logp: np.ndarray) -> np.ndarray:
    """Per-token log(π/π_ref) = logp − ref_logp, in float64."""
    return np.asarray(logp, dtype=np.float64) - np.asarray(ref_logp, dtype=np.float64)


def k1(lr: np.ndarray) -> np.ndarray:
    """The log-ratio itself: unbiased for KL(π‖π_ref), but a single token can be negative."""
    return np.asarray(lr, dtype=np.float64)


def k2(lr: np.ndarray) -> np.ndarray:
    """½·lr²: never negative and low-variance, biased upward as the policy moves away."""
    lr = np.asarray(lr, dtype=np.float64)
    with np.errstate(over="ignore"):
        return 0.5 * lr * lr


def k3(lr: np.ndarray) -> np.ndarray:
    """exp(−lr) − 1 + lr: unbiased for KL(π‖π_ref) on tokens drawn from π, never negative.

    ``expm1`` keeps the precision where lr is tiny (policy at the reference), where exp(−lr) − 1 cancels.
    """
    lr = np.asarray(lr, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.expm1(-lr) + lr


# By the names the field catalogue gives them (``F.KL_ESTIMATORS``: which columns each fills).
ESTIMATES: dict[str, Callable[[np.ndarray], np.ndarray]] = {K1: k1, K2: k2, K3: k3}


# -- the same three in SQL (rollouts/sql.py creates them on every connection) -----------------------------
# Each takes one log-ratio, or (logp, ref_logp); both work inside list functions over token arrays:
#   list_avg(list_transform(token_log_ratio, lambda r: kl_k3(r)))
# DuckDB has no expm1: below |lr| = 1e-3, k3 is its Taylor series (error under 1e-14 relative there).
_SERIES_FROM = "1e-3"


def _k1_sql(x: str) -> str:
    return x


def _k2_sql(x: str) -> str:
    return f"0.5 * {x} * {x}"


def _k3_sql(x: str) -> str:
    return (
        f"CASE WHEN abs({x}) < {_SERIES_FROM} THEN {x} * {x} * (0.5 - {x} * (1.0 / 6 - {x} * "
        f"(1.0 / 24 - {x} / 120.0))) ELSE exp(-{x}) - 1 + {x} END"
    )


_SQL_BODIES = {K1: _k1_sql, K2: _k2_sql, K3: _k3_sql}


def sql_macros() -> list[str]:
    """``CREATE MACRO kl_k1/kl_k2/kl_k3`` statements: (lr) and (logp, ref_logp) overloads, in DOUBLE."""
    one = "CAST(lr AS DOUBLE)"
    two = "(CAST(logp AS DOUBLE) - CAST(ref_logp AS DOUBLE))"
    return [
        f"CREATE MACRO kl_{name}(lr) AS {body(one)}, (logp, ref_logp) AS {body(two)}"
        for name, body in _SQL_BODIES.items()
    ]
