"""Health rules on the trainers' own diagnostics (issue 33), on generated runs with each trainer's names.

The facts `benchmarks/health.py` prints are held here: every rule fires on its planted runs within the first
quarter of the planted window, no rule fires on a clean twin, the cross-checks name the cause, and the alias
tables the rules read are the glossary's, each name with the trainer's file that logs it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rl_board.health.checks import RolloutRun, Settings, check_rollouts, check_scalars, parse_set_option
from rl_board.health.engine import DISAGREE, DIVERGING, GROUPS, NO_SIGNAL, REGISTRY
from rl_board.metrics import aliases as A
from rl_board.metrics.glossary import ENTRIES, explain
from rl_board.rollouts.store import RolloutStore
from tests.helpers.health_runs import HealthRun, frame, health_runs, write_crosscheck_runs

NEW_RULES = {
    "logprob_mismatch_trend": DIVERGING,
    "importance_weights_off": DIVERGING,
    "learns_nothing": NO_SIGNAL,
    "early_entropy_collapse": NO_SIGNAL,
    "trainer_clip_ratio_mismatch": DISAGREE,
    "trainer_zero_std_mismatch": DISAGREE,
}


@pytest.fixture(scope="module")
def runs() -> list[HealthRun]:
    return health_runs(seed=0)


@pytest.fixture(scope="module")
def first_firing(runs: list[HealthRun]) -> dict[tuple[str, str], int]:
    """(run, rule) -> the first step the rule fired at."""
    out: dict[tuple[str, str], int] = {}
    for f in check_scalars(frame(runs)):
        key = (f.run, f.rule)
        out[key] = min(out.get(key, f.steps[0]), f.steps[0])
    return out


def test_the_generated_runs_cover_every_trainer_and_failure(runs):
    planted = [r for r in runs if not r.clean]
    assert len(planted) == len([r for r in runs if r.clean]) >= 15
    assert {r.trainer for r in planted} >= {"TRL", "verl", "NeMo-RL", "prime-rl", "slime", "open-instruct"}
    assert {r.failure for r in planted} == {
        "mismatch trend",
        "IS-weight collapse",
        "learns nothing",
        "early entropy collapse",
    }
    for run in runs:  # every curve is under a real trainer's name (or the reward it quotes)
        for tag in run.curves:
            assert A.alias_of(tag) is not None or "reward" in tag or "score" in tag, tag


def test_every_rule_fires_on_its_planted_runs_within_the_first_quarter(runs, first_firing):
    for run in (r for r in runs if not r.clean):
        step = first_firing.get((run.name, run.rule))
        assert step is not None, f"{run.rule} missed {run.name}"
        assert run.start <= step <= run.deadline, (run.name, step, run.start, run.deadline)


def test_no_rule_fires_on_a_clean_twin(runs, first_firing):
    clean = {r.name for r in runs if r.clean}
    assert not {key: step for key, step in first_firing.items() if key[0] in clean}


def test_messages_say_what_when_what_it_means_and_what_to_try(runs):
    findings = {(f.run, f.rule): f for f in check_scalars(frame(runs))}
    drift = findings[("slime/logprob-diff-drift", "logprob_mismatch_trend")]
    assert "train/train_rollout_logprob_abs_diff (slime) rose from 0.011" in drift.message
    assert f"by step {drift.steps[0]}" in drift.message and "Try:" in drift.message
    assert drift.link is not None and drift.link.tag == "train/train_rollout_logprob_abs_diff"
    nothing = findings[("trl/learns-nothing-from-start", "learns_nothing")]
    assert "completions/clipped_ratio" in nothing.message and "max_completion_length" in nothing.message
    assert (
        findings[("trl/learns-nothing-tensorboard", "learns_nothing")].link.tag
        == "train/frac_reward_zero_std"
    )
    weights = findings[("verl/is-weights-collapse", "importance_weights_off")]
    for tag in (
        "rollout_is_eff_sample_size",
        "rollout_is_mean",
        "rollout_is_std",
        "chi2_token",
        "rollout_corr/kl",
    ):
        assert tag in weights.message
    entropy = findings[("trl/entropy-collapse", "early_entropy_collapse")]
    assert (
        "entropy (TRL) fell from 1.4" in entropy.message and "Meanwhile reward went from" in entropy.message
    )
    assert "2505.22617" in entropy.message


def test_a_spike_that_returns_is_not_a_trend():
    values = [1.015] * 100
    values[60] = 1.6  # NeMo-RL: an occasional spike is fine when it comes back
    data = pd.DataFrame({"run": "r", "source": "j", "tag": "train/token_mult_prob_error", "step": range(100)})
    data["value"], data["wall_time"] = values, 0.0
    assert check_scalars(data) == []


def test_thresholds_are_ordinary_settings(runs):
    late = next(r for r in runs if r.name == "nemo-rl/refit-jump")
    settings = Settings()
    parse_set_option(settings, "logprob_mismatch_trend.ratio_limit=2")
    parse_set_option(settings, "logprob_mismatch_trend.rise=5")
    assert not [
        f for f in check_scalars(late.frame(), settings=settings) if f.rule == "logprob_mismatch_trend"
    ]
    parse_set_option(settings, "learns_nothing.severity=warning")
    nothing = next(r for r in runs if r.name == "trl/learns-nothing-from-start")
    assert {f.severity for f in check_scalars(nothing.frame(), settings=settings)} == {"warning"}


def test_existing_entropy_collapse_reads_every_trainers_name():
    for alias in A.aliases(A.ENTROPY):
        tag = alias.tag.replace("{learner}", "learner_iter")
        data = pd.DataFrame({"run": "r", "source": "j", "tag": tag, "step": range(12)})
        data["value"], data["wall_time"] = [2.0] * 5 + [1.0, 0.5, 0.1, 0.05, 0.01, 0.01, 0.01], 0.0
        assert "entropy_collapse" in {f.rule for f in check_scalars(data)}, tag


# --------------------------------------------------------------------------- registry, aliases, glossary


def test_new_rules_have_a_group_a_source_and_settable_thresholds():
    for name, group in NEW_RULES.items():
        rule = REGISTRY[name]
        assert rule.group == group and rule.group in GROUPS and rule.source and rule.params
    assert REGISTRY["learns_nothing"].severity == REGISTRY["early_entropy_collapse"].severity == "error"
    assert REGISTRY["importance_weights_off"].severity == "error"
    assert REGISTRY["logprob_mismatch_trend"].params["ratio_limit"] == 1.05  # NeMo-RL's published limit
    assert REGISTRY["logprob_mismatch_trend"].params["kl_limit"] == 1e-3


# the trainers' names, with the file of the trainer's source that logs each (checked in the trainers' repos)
SOURCES = {
    "entropy": "trl/trainer/grpo_trainer.py",
    "frac_reward_zero_std": "trl/trainer/grpo_trainer.py",
    "completions/clipped_ratio": "trl/trainer/grpo_trainer.py",
    "actor/entropy": "verl/workers/actor/dp_actor.py",
    "response_length/clip_ratio": "verl/trainer/ppo/metric_utils.py",
    "rollout_corr/rollout_is_eff_sample_size": "verl/trainer/ppo/rollout_corr_helper.py",
    "rollout_corr/chi2_token": "verl/trainer/ppo/rollout_corr_helper.py",
    "train/token_mult_prob_error": "nemo_rl/algorithms/loss/loss_functions.py",
    "train/gen_kl_error": "nemo_rl/algorithms/loss/loss_functions.py",
    "train/approx_entropy": "nemo_rl/algorithms/loss/loss_functions.py",
    "mismatch_kl/all/mean": "src/prime_rl/trainer/rl/train.py",
    "entropy/all/mean": "src/prime_rl/trainer/rl/train.py",
    "train/train_rollout_logprob_abs_diff": "slime/backends/megatron_utils/loss.py",
    "train/entropy_loss": "slime/backends/megatron_utils/loss.py",
    "rollout/truncated_ratio": "slime/observability/rollout_metrics.py",
    "debug/vllm_vs_local_logprob_diff_mean": "open_instruct/grpo_utils.py",
    "policy/entropy_avg": "open_instruct/grpo_utils.py",
}


@pytest.mark.parametrize(("tag", "file"), sorted(SOURCES.items()))
def test_each_name_is_in_the_glossary_with_its_source_file_and_citation(tag, file):
    entry = explain(tag)
    alias = A.alias_of(tag)
    assert entry is not None and alias is not None and entry.pattern == tag
    assert file in alias.name.file and file in entry.meaning
    assert entry.source and entry.source in entry.healthy  # who says what healthy is, on the Metrics page too
    assert alias.trainer.name in entry.frameworks


def test_the_glossary_and_the_rules_read_one_table():
    generated = [e for e in ENTRIES if e.source]
    assert {e.pattern for e in generated} == {a.tag for a in A.all_aliases()}
    assert len({e.pattern for e in ENTRIES}) == len(ENTRIES)  # one definition per name
    from rl_board.health import scalar_rules

    assert A.patterns(A.ENTROPY) == scalar_rules.ENTROPY
    assert explain("train/entropy").frameworks == ("TRL",)  # transformers' callbacks prefix TRL's names
    assert "rewrite_logs" in explain("train/frac_reward_zero_std").meaning


# --------------------------------------------------------------------------- cross-checks against the samples


@pytest.fixture(scope="module")
def crossed(tmp_path_factory) -> dict[str, tuple[object, list]]:
    root = tmp_path_factory.mktemp("cross")
    out = {}
    for run in write_crosscheck_runs(root / "data"):
        store = RolloutStore.open(run.folder, cache_dir=root / "cache")
        out[run.name] = (run, check_rollouts(RolloutRun.from_store(run.name, store)))
    return out


def test_cross_checks_fire_on_a_wrong_counter_in_time_and_never_on_the_twins(crossed):
    for run, findings in crossed.values():
        fired = {f.rule: f for f in findings}
        new = {r for r in fired if r in NEW_RULES}
        if run.clean:
            assert not fired, (run.name, sorted(fired))
        else:
            assert new == {run.rule}, (run.name, new)
            assert run.start <= fired[run.rule].steps[0] <= run.deadline, (run.name, fired[run.rule].steps)


def test_cross_checks_name_the_likely_cause(crossed):
    def message(name: str, rule: str) -> str:
        return next(f.message for f in crossed[name][1] if f.rule == rule)

    assert "verl #7823" in message("verl-max-model-len", "trainer_clip_ratio_mismatch")
    assert "verl #7817" in message("verl-batch-max", "trainer_clip_ratio_mismatch")
    zero = message("trl-batch-scaling", "trainer_zero_std_mismatch")
    assert "frac_reward_zero_std = 0%" in zero and "scale_rewards='batch'" in zero
    link = next(f.link for f in crossed["verl-max-model-len"][1] if f.rule == "trainer_clip_ratio_mismatch")
    assert link.tag == "response_length/clip_ratio" and link.sort == "n_tokens" and link.desc


def test_metrics_beside_a_run_are_paired_only_from_its_own_or_its_trainers_folder(tmp_path):
    from rl_board.health.rollout_rules import logged_beside

    run = write_crosscheck_runs(tmp_path / "data")[0]
    store = RolloutStore.open(run.folder, cache_dir=tmp_path / "cache")
    assert "response_length/clip_ratio" in set(logged_beside(store)["tag"])
    (run.folder / "metrics.jsonl").rename(tmp_path / "data" / "metrics.jsonl")  # one level up: nobody's
    store = RolloutStore.open(run.folder, cache_dir=tmp_path / "cache")
    assert logged_beside(store) is None


def test_a_prime_rl_layout_pairs_out_metrics_with_out_rollouts(tmp_path):
    from rl_board.health.rollout_rules import TRAINER_FOLDERS

    assert "rollouts" in TRAINER_FOLDERS and Path("out/rollouts").name in TRAINER_FOLDERS
