"""Derived metrics checked against values computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rl_board.rollouts import derive, kl
from rl_board.rollouts.read import records


def table_of(*samples: dict) -> object:
    rows = [{**r, "_line": i + 1} for i, r in enumerate(samples)]
    return records.records_to_table([records.normalise(r) | {"_line": r["_line"]} for r in rows])


def test_token_formulas_by_hand() -> None:
    lr = kl.log_ratio(np.array([-1.0, -0.5, -0.1]), np.array([-1.5, -0.5, -3.0]))
    assert lr.tolist() == pytest.approx([0.5, 0.0, 2.9])
    k3 = kl.k3(lr)
    assert k3[0] == pytest.approx(0.10653066)  # exp(−0.5) − 1 + 0.5
    assert k3[1] == 0.0
    assert k3[2] == pytest.approx(1.95502322)  # verl's low_var_kl of logp −0.1, ref −3.0
    assert kl.k3(np.array([-2.0]))[0] == pytest.approx(4.3890561)  # exp(2) − 1 − 2: never negative
    assert kl.k2(lr).tolist() == pytest.approx([0.125, 0.0, 4.205])
    assert kl.k1(lr).tolist() == pytest.approx(lr.tolist())
    assert derive.probs(np.array([math.log(0.25)]))[0] == pytest.approx(0.25)


def test_sample_metrics_by_hand() -> None:
    t = table_of(
        {
            "step": 1,
            "reward": 1.0,
            "ref_reward": 0.25,
            "response": "héllo",
            "response_tokens": ["a", "b", "c"],
            "logprobs": [-1.0, -2.0, -0.5],
            "ref_logprobs": [-1.5, -2.0, -1.0],
        },
        {"step": 1, "reward": 0.0, "response": "x"},
    )
    m = {k: v.to_pylist() for k, v in derive.sample_metrics(t).items()}
    k3_of_half = 0.10653066  # exp(−0.5) − 1 + 0.5; the log-ratios are 0.5, 0, 0.5
    assert m["log_ratio_sum"][0] == pytest.approx(1.0)
    assert m["log_ratio_mean"][0] == pytest.approx(1.0 / 3)
    assert m["kl_sum"][0] == pytest.approx(2 * k3_of_half)
    assert m["kl_mean"][0] == pytest.approx(2 * k3_of_half / 3)
    assert m["kl_k2_sum"][0] == pytest.approx(0.25) and m["kl_k2_mean"][0] == pytest.approx(0.25 / 3)
    assert m["token_log_ratio"] == [pytest.approx([0.5, 0.0, 0.5]), None]
    assert m["n_tokens"] == [3, None]
    assert m["response_chars"] == [5, 1]
    assert m["reward_gap"] == [0.75, None]
    assert m["kl_mean"][1] is None  # no token arrays: no KL, not zero


def test_nan_tokens_are_skipped_and_counted() -> None:
    t = table_of({"step": 0, "logprobs": [-1.0, float("nan"), -1.0], "ref_logprobs": [-1.0, -1.0, -2.0]})
    m = {k: v.to_pylist() for k, v in derive.sample_metrics(t).items()}
    assert m["log_ratio_sum"][0] == pytest.approx(1.0)
    assert m["log_ratio_mean"][0] == pytest.approx(0.5)
    assert m["nonfinite_tokens"] == [1]


def test_longer_token_list_aligns_to_the_shorter_and_is_flagged() -> None:
    t = table_of(
        {
            "step": 0,
            "response_tokens": ["a", "b", "<EOD>"],
            "logprobs": [-1.0, -1.0],
            "ref_logprobs": [-2.0, -1.0, -9.0],
        },
    )
    m = {k: v.to_pylist() for k, v in derive.sample_metrics(t).items()}
    assert m["length_mismatch"] == [True]
    assert m["n_tokens"] == [3]
    assert m["n_logprobs"] == [2]
    assert m["log_ratio_sum"][0] == pytest.approx(1.0)  # only the 2 aligned tokens


def test_step_summary_by_hand() -> None:
    frame = pd.DataFrame(
        {
            "step": [10, 2, 2, 10, 10],
            "reward": [1.0, 0.0, 2.0, 3.0, np.nan],
            "kl_mean": [0.1, 0.2, 0.4, 0.3, 0.5],
        }
    )
    out = derive.step_summary(frame)
    assert out["step"].tolist() == [2, 10]  # numeric order
    assert out["samples"].tolist() == [2, 3]
    assert out["reward_mean"].tolist() == [1.0, 2.0]  # NaN skipped
    assert out["reward_std"].tolist() == [1.0, 1.0]  # population std
    assert out["reward_min"].tolist() == [0.0, 1.0]
    assert out["kl_max"].tolist() == [0.4, 0.5]
    assert out["reward_count"].tolist() == [2, 2]


def test_token_frame_aligns_and_derives() -> None:
    frame = derive.token_frame(
        tokens=["a", "b", "c"],
        logprobs=np.array([-1.0, -2.0]),
        ref_logprobs=np.array([-1.0, -1.0]),
        values=None,
        token_rewards=np.array([0.0, 1.0]),
    )
    assert frame["token"].tolist() == ["a", "b"]
    assert frame["log_ratio"].tolist() == [0.0, -1.0]
    assert frame["kl"].iloc[1] == pytest.approx(0.71828183)  # exp(1) − 1 − 1
    assert frame["kl_k2"].iloc[1] == pytest.approx(0.5)
    assert frame["prob"].iloc[0] == pytest.approx(math.exp(-1))
    assert frame["value"].isna().all()


def test_token_frame_takes_the_cached_log_ratio_over_the_narrowed_log_probs() -> None:
    narrowed = np.array([-30.0, -30.0], dtype=np.float32)  # −30.0000001 and −30 in float32 are equal
    frame = derive.token_frame(
        tokens=["a", "b"],
        logprobs=narrowed,
        ref_logprobs=np.array([-30.0, -30.0]),
        values=None,
        token_rewards=None,
        log_ratios=np.array([-1e-7, 2e-7]),
    )
    assert frame["log_ratio"].tolist() == [-1e-7, 2e-7]
    assert frame["kl_k2"].tolist() == pytest.approx([5e-15, 2e-14])
    assert frame["kl"].iloc[0] == pytest.approx(5e-15, rel=1e-6)
