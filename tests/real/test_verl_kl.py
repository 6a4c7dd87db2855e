"""rl-board's KL estimators against verl's own code (verl 0.9.1, ``verl.trainer.ppo.core_algos``).

verl computes its KL penalty / KL loss per token with ``kl_penalty(logprob, ref_logprob, kl_penalty)``:
"kl"/"k1", "mse"/"k2", "low_var_kl"/"k3". Its k3 clamps the log-ratio to ±20 and the result to ±10; on
values inside those clamps rl-board's numbers must be verl's. verl and torch come with the ``real``
extra: without them this test fails (it does not skip), so a missing install is seen.
"""

from __future__ import annotations

import numpy as np
import pytest

from rl_board.formats import fields as F
from rl_board.rollouts import kl

pytestmark = pytest.mark.real

VERL_NAMES = {"k1": ("kl", "k1"), "k2": ("mse", "k2"), "k3": ("low_var_kl", "k3")}


def _log_probs() -> tuple[np.ndarray, np.ndarray]:
    """Token log-probs of a policy and a reference, the k3 of each inside verl's clamps
    (|r| < 20, k3 < 10)."""
    rng = np.random.default_rng(7)
    logp = -rng.exponential(1.5, size=(8, 64))
    ref = logp + rng.normal(0.0, 0.7, size=logp.shape)
    ref[0, :4] = logp[0, :4] + np.array([1.5, -2.9, 1e-6, 0.0])  # large, tiny and no log-ratio
    ref[0, 4], logp[0, 4] = -3.0, -0.1
    return logp, ref


def test_rl_board_estimators_equal_verls_kl_penalty() -> None:
    import torch  # from the real extra: an ImportError here is a failure, not a skip
    from verl.trainer.ppo.core_algos import kl_penalty

    logp, ref = _log_probs()
    lr = kl.log_ratio(logp, ref)
    assert np.all(np.abs(lr) < 20) and np.all(kl.k3(lr) < 10)  # before verl's clamps
    for estimator in F.KL_ESTIMATORS:
        ours = kl.ESTIMATES[estimator.name](lr)
        for verl_name in VERL_NAMES[estimator.name]:
            theirs = kl_penalty(torch.from_numpy(logp), torch.from_numpy(ref), verl_name).numpy()
            np.testing.assert_allclose(
                ours, theirs, rtol=1e-9, atol=1e-12, err_msg=f"{estimator.name} vs {verl_name}"
            )
    assert round(float(kl.k3(lr)[0, 4]), 3) == 1.955


def test_verl_clamps_where_rl_board_does_not() -> None:
    import torch
    from verl.trainer.ppo.core_algos import kl_penalty

    logp, ref = np.array([-0.1, -0.1]), np.array([-25.0, -14.0])  # r = 24.9 (past ±20), k3 ≈ 12.9 (past 10)
    theirs = kl_penalty(torch.from_numpy(logp), torch.from_numpy(ref), "low_var_kl").numpy()
    ours = kl.k3(kl.log_ratio(logp, ref))
    assert np.all(theirs <= 10) and np.all(ours > theirs)
