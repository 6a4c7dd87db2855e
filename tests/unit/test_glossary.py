"""Glossary matching: exact names, placeholders, patterns, reducer suffixes."""

from __future__ import annotations

import pytest

from rl_board.metrics.glossary import ENTRIES, explain


@pytest.mark.parametrize(
    ("tag", "pattern"),
    [
        ("objective/kl", "objective/kl"),
        ("actor/pg_loss@sum", "actor/pg_loss"),
        ("critic/score/max", "critic/score/{stat}"),
        ("memory/cpu/generate/end/rss", "memory/cpu/{phase}/*"),
        ("memory/train_step/end/onload/max_allocated_frac/0", "memory/{phase}/*"),
        ("time/model_update/onload", "time/{phase}/{part}"),
        ("time/rollout", "time/*"),
        ("timing_s/update_actor", "timing_s/*"),
        ("critic/vf_loss", "critic/vf_loss"),
        ("learner_iter/value_loss_avg", "{learner}/value_loss_avg"),
        ("learner/value_loss_avg", "{learner}/value_loss_avg"),
        ("evaluator_step/reward_mean", "{evaluator}/reward_{stat}"),
        ("collector_iter/avg_envstep_per_sec", "{collector}/*"),
        ("actor/negative_sft_loss", "actor/{kind}sft_loss"),
    ],
)
def test_tags_match_the_expected_entry(tag, pattern):
    entry = explain(tag)
    assert entry is not None and entry.pattern == pattern


def test_unknown_tags_are_unexplained():
    assert explain("my/custom_metric") is None
    assert explain("critic/score/median") is None  # {stat} is a fixed set


def test_every_entry_is_filled_in_and_patterns_are_unique():
    assert len({e.pattern for e in ENTRIES}) == len(ENTRIES)
    for entry in ENTRIES:
        assert entry.meaning and entry.healthy and entry.frameworks and entry.family


def test_every_framework_is_covered():
    frameworks = {f for e in ENTRIES for f in e.frameworks}
    assert {"ROLL", "TRL", "verl", "DI-engine"} <= frameworks


def test_verl_families():
    for tag in [
        "actor/entropy",
        "actor/pg_clipfrac",
        "response_length/mean",
        "perf/throughput",
        "critic/vf_loss",
    ]:
        assert "verl" in explain(tag).frameworks


@pytest.mark.parametrize(
    ("tag", "says"),
    [
        ("actor/kl_loss", ("low_var_kl", "k3", "k1", "k2")),  # verl's kl_loss_type
        ("actor/reward_kl_penalty", ("kl_penalty", "k1", "k3")),  # verl's in-reward KL
        ("critic/kl", ("k1",)),
        ("kl", ("GRPO", "k3")),  # TRL
        ("objective/kl", ("k1",)),
        ("rollout_corr/k3_kl", ("k3", "mismatch")),
    ],
)
def test_kl_metrics_say_which_estimator_they_are(tag, says):
    entry = explain(tag)
    assert entry is not None and entry.family == "kl"
    assert all(word in entry.meaning for word in says), entry.meaning
