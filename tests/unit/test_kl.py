"""KL to the reference, checked against the truth: analytic KL of known distributions, sampled through
rl-board's whole path (writer -> cache -> store), and per-token values that agree with per-sample ones."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from rl_board.formats import fields as F
from rl_board.rollouts import kl, sql
from rl_board.rollouts.store import RolloutStore
from rl_board.writer import RolloutWriter

SAMPLES, TOKENS = 400, 100  # 40,000 draws, as 400 samples: the spread of their means gives the standard error
Z = 4.0  # how many standard errors a mean may be off


def open_run(tmp_path: Path, logp: np.ndarray, ref: np.ndarray, name: str = "run") -> RolloutStore:
    """Rows of ``logp`` / ``ref`` (samples x tokens) written as a run with rl-board's writer, then opened."""
    with RolloutWriter(tmp_path / name, rank=0) as writer:
        for i, (lp, rf) in enumerate(zip(logp, ref, strict=True)):
            writer.write(
                0,
                f"p{i}",
                "r",
                0.0,
                logprobs=lp,
                ref_logprobs=rf,
                response_tokens=[f"t{k}" for k in range(len(lp))],
            )
    return RolloutStore.open(tmp_path / name, cache_dir=tmp_path / "cache")


@dataclass
class Estimate:
    mean: float
    se: float


def estimates(store: RolloutStore) -> dict[str, Estimate]:
    """Each estimator's mean over all tokens and its standard error, from the per-sample means the store
    computed."""
    rows = store.samples(columns=[e.mean for e in F.KL_ESTIMATORS])
    return {
        e.name: Estimate(float(rows[e.mean].mean()), float(rows[e.mean].std(ddof=1) / math.sqrt(len(rows))))
        for e in F.KL_ESTIMATORS
    }


def categorical_pair(rng: np.random.Generator, outcomes: int, spread: float) -> tuple[np.ndarray, np.ndarray]:
    """Log-probabilities of a policy and a reference over ``outcomes`` values."""
    logits = rng.normal(0.0, 1.5, outcomes)
    ref_logits = logits + rng.normal(0.0, spread, outcomes)
    return logits - np.logaddexp.reduce(logits), ref_logits - np.logaddexp.reduce(ref_logits)


def draw_categorical(
    rng: np.random.Generator, policy: np.ndarray, ref: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    x = rng.choice(len(policy), size=(SAMPLES, TOKENS), p=np.exp(policy))
    return policy[x], ref[x]


@pytest.mark.parametrize("spread", [1.0, 0.3])
def test_k1_and_k3_are_unbiased_for_two_categoricals(tmp_path, spread) -> None:
    rng = np.random.default_rng(20)
    policy, ref = categorical_pair(rng, 50, spread)
    truth = float(np.sum(np.exp(policy) * (policy - ref)))  # KL(π‖π_ref), exactly
    got = estimates(open_run(tmp_path, *draw_categorical(rng, policy, ref)))
    for name in ("k1", "k3"):
        assert abs(got[name].mean - truth) < Z * got[name].se, (name, got[name], truth)
    # the orientation rl-board used before (exp(r) − 1 − r) estimates χ² − KL: far from the truth here
    wrong = float(np.sum(np.exp(policy) * np.expm1(policy - ref))) - truth
    assert abs(wrong - truth) > 10 * got["k3"].se


def test_k2_is_close_to_kl_when_kl_is_small(tmp_path) -> None:
    rng = np.random.default_rng(21)
    policy, ref = categorical_pair(rng, 50, 0.1)
    truth = float(np.sum(np.exp(policy) * (policy - ref)))
    assert truth < 0.01
    got = estimates(open_run(tmp_path, *draw_categorical(rng, policy, ref)))
    assert abs(got["k2"].mean - truth) < 0.05 * truth + Z * got["k2"].se, (got["k2"], truth)
    assert got["k2"].se < got["k1"].se  # the point of k2: less variance


def gaussian_logpdf(x: np.ndarray, mu: float, sigma: float) -> np.ndarray:
    return -0.5 * ((x - mu) / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2 * math.pi)


def test_k1_and_k3_are_unbiased_for_two_gaussians(tmp_path) -> None:
    rng = np.random.default_rng(22)
    mu, sigma = 0.5, 1.2  # π = N(0, 1), π_ref = N(0.5, 1.2²): E_π[(π_ref/π)²] is finite (σ² < 2)
    truth = math.log(sigma) + (1 + mu**2) / (2 * sigma**2) - 0.5
    x = rng.normal(0.0, 1.0, size=(SAMPLES, TOKENS))
    store = open_run(tmp_path, gaussian_logpdf(x, 0.0, 1.0), gaussian_logpdf(x, mu, sigma))
    got = estimates(store)
    for name in ("k1", "k3"):
        assert abs(got[name].mean - truth) < Z * got[name].se, (name, got[name], truth)


def test_k3_is_never_negative(tmp_path) -> None:
    rng = np.random.default_rng(23)
    logp = -rng.exponential(2.0, size=(50, 40))
    ref = -rng.exponential(2.0, size=(50, 40))
    store = open_run(tmp_path, logp, ref)
    rows = store.samples(columns=["kl_mean", "kl_sum", "kl_k2_mean", "log_ratio_mean"])
    assert (rows["kl_mean"] >= 0).all() and (rows["kl_sum"] >= 0).all() and (rows["kl_k2_mean"] >= 0).all()
    assert (rows["log_ratio_mean"] < 0).any()  # k1 can be negative, k3 cannot
    tokens = store.sample(step=0, index=0).tokens
    assert (tokens["kl"] >= 0).all()


def test_the_issue_example_is_the_number_verl_shows(tmp_path) -> None:
    """logp −0.1, ref −3.0: rl-board used to show 14.27; k3 (verl's low_var_kl) is 1.955."""
    store = open_run(tmp_path, np.array([[-0.1]]), np.array([[-3.0]]))
    row = store.samples(columns=["kl_mean", "kl_sum", "kl_k2_mean", "log_ratio_mean"]).iloc[0]
    assert round(row["kl_mean"], 3) == 1.955 and round(row["kl_sum"], 3) == 1.955
    assert row["kl_k2_mean"] == pytest.approx(2.9**2 / 2) and row["log_ratio_mean"] == pytest.approx(2.9)
    assert round(float(store.sample(step=0, index=0).tokens["kl"].iloc[0]), 3) == 1.955


NEAR_REFERENCE = [  # (logp, ref): log-ratios far below what float32 resolves at these magnitudes
    ([-30.0000001, -12.5000002, -0.00000031, -7.00000004], [-30.0, -12.5, -0.0000003, -7.0]),
    ([-100.000001, -55.0000003], [-100.0, -55.0]),
    ([-3.2e-9, -1e-12, -2.0 - 1e-7], [-1e-9, -2e-12, -2.0]),
]


@pytest.mark.parametrize(("logp", "ref"), NEAR_REFERENCE)
def test_token_values_agree_with_the_per_sample_numbers(tmp_path, logp, ref) -> None:
    """The cache keeps token arrays as float32; the token table must still add up to the per-sample
    numbers."""
    store = open_run(tmp_path, np.array([logp]), np.array([ref]))
    row = store.samples(columns=[c for e in F.KL_ESTIMATORS for c in (e.mean, e.sum)]).iloc[0]
    tokens = store.sample(step=0, index=0).tokens
    for e in F.KL_ESTIMATORS:
        assert row[e.mean] != 0
        assert tokens[e.token].mean() == pytest.approx(row[e.mean], rel=1e-6, abs=0), e.name
        assert tokens[e.token].sum() == pytest.approx(row[e.sum], rel=1e-6, abs=0), e.name


def test_sql_macros_agree_with_the_per_sample_columns(tmp_path) -> None:
    rng = np.random.default_rng(24)
    logp = -rng.exponential(1.0, size=(6, 30))
    store = open_run(tmp_path, logp, logp + rng.normal(0, 0.4, size=logp.shape))
    query = (
        "SELECT kl_mean, list_avg(list_transform(token_log_ratio, lambda r: kl_k3(r))) AS k3, "
        "kl_k2_sum, list_sum(list_transform(token_log_ratio, lambda r: kl_k2(r))) AS k2, "
        "log_ratio_mean, list_avg(list_transform(token_log_ratio, lambda r: kl_k1(r))) AS k1, "
        "kl_k3(-0.1, -3.0) AS example, kl_k3(2.9) AS same, kl_k3(-30.0000001, -30.0) AS tiny "
        "FROM samples ORDER BY sample"
    )
    frame = sql.run_query(store, query).frame
    assert np.allclose(frame["k3"], frame["kl_mean"], rtol=1e-6, atol=0)
    assert np.allclose(frame["k2"], frame["kl_k2_sum"], rtol=1e-6, atol=0)
    assert np.allclose(frame["k1"], frame["log_ratio_mean"], rtol=1e-6, atol=0)
    assert round(frame["example"].iloc[0], 3) == 1.955 and frame["same"].iloc[0] == pytest.approx(
        1.955023220056407
    )
    assert frame["tiny"].iloc[0] == pytest.approx(float(kl.k3(np.array([-30.0000001 + 30.0]))[0]), rel=1e-6)


def test_sql_steps_carry_every_estimator(tmp_path) -> None:
    logp = -np.linspace(0.1, 3.0, 40).reshape(4, 10)
    store = open_run(tmp_path, logp, logp - 0.2)
    frame = sql.run_query(store, "SELECT kl_mean, kl_k2_mean, log_ratio_mean FROM steps").frame
    samples = store.samples(columns=["kl_mean", "kl_k2_mean", "log_ratio_mean"])
    for column in frame.columns:
        assert frame[column].iloc[0] == pytest.approx(samples[column].mean())
    described = sql.schema(store)["steps"].set_index("column")["help"]
    assert "k2" in described["kl_k2_mean"] and "k3" in described["kl_mean"]


def test_the_catalogue_and_the_math_name_the_same_estimators() -> None:
    assert {e.name for e in F.KL_ESTIMATORS} == set(kl.ESTIMATES)
    assert F.kl_estimator().name == "k3"
    assert F.as_kl("kl_mean", "k2") == "kl_k2_mean" and F.as_kl("kl", "k1") == "log_ratio"
    assert F.as_kl("log_ratio_mean", "k3") == "log_ratio_mean"  # the log-ratio is always itself
    with pytest.raises(ValueError, match="k3, k2, k1"):
        F.kl_estimator("k4")


def test_mismatch_estimates_kl_of_the_engine_that_sampled(tmp_path) -> None:
    """Tokens are drawn from the engine μ: the per-sample mismatch mean estimates KL(μ‖π_train)."""
    rng = np.random.default_rng(25)
    engine, trainer = categorical_pair(rng, 50, 0.5)
    truth = float(np.sum(np.exp(engine) * (engine - trainer)))
    reverse = float(np.sum(np.exp(trainer) * (trainer - engine)))
    x = rng.choice(50, size=(SAMPLES, TOKENS), p=np.exp(engine))
    with RolloutWriter(tmp_path / "run", rank=0) as writer:
        for i in range(SAMPLES):
            writer.write(0, f"p{i}", "r", 0.0, logprobs=engine[x[i]], train_logprobs=trainer[x[i]].tolist())
    store = RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    means = store.mismatch()["mismatch_mean"]
    mean, se = float(means.mean()), float(means.std(ddof=1) / math.sqrt(len(means)))
    assert abs(mean - truth) < Z * se and abs(reverse - truth) > 10 * se, (mean, se, truth, reverse)


def test_a_dataset_exported_before_the_kl_fix_is_recomputed_not_trusted(tmp_path) -> None:
    """Exports carry the derived columns; one without the k2 columns (older rl-board) holds the old KL and is
    read through the cache, where KL is computed again from its token arrays."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rl_board.rollouts import dataset

    store = open_run(tmp_path, np.array([[-0.1, -1.0]]), np.array([[-3.0, -1.0]]))
    dataset.write_dataset(store.arrow_samples(), tmp_path / "ds")
    assert RolloutStore.open(tmp_path / "ds", cache_dir=tmp_path / "c1").read_in_place  # today's: in place
    part = tmp_path / "ds" / "step=0" / dataset.PART
    old = pq.read_table(part).drop_columns(["kl_k2_mean", "kl_k2_sum", "token_log_ratio"])
    old = old.set_column(old.schema.get_field_index("kl_mean"), "kl_mean", pa.array([(14.27 + 0.0) / 2]))
    pq.write_table(old, part)
    (tmp_path / "ds" / dataset.INDEX).unlink()
    reread = RolloutStore.open(tmp_path / "ds", cache_dir=tmp_path / "c2")
    assert not reread.read_in_place
    assert reread.samples(columns=["kl_mean"])["kl_mean"].iloc[0] == pytest.approx(1.955023 / 2, rel=1e-6)
