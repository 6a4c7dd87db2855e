"""Scalar health rules on tiny hand-made curves, settings, and the registry."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rl_board.errors import InvalidArgumentError
from rl_board.health.checks import check_scalars
from rl_board.health.engine import (
    REGISTRY,
    Finding,
    Rule,
    Settings,
    load_settings,
    parse_set_option,
    register,
    robust_z,
    run_rules,
    worst_severity,
)
from rl_board.metrics.reader import load_metrics
from rl_board.where import Where
from tests.helpers.metric_fixtures import write_tensorboard_run

REAL = Path(__file__).parents[2].parent / "shared/real-logs/di-engine-mappo-ant"


def frame(curves: dict[str, list[float]], run: str = "r") -> pd.DataFrame:
    rows = [(run, "t", tag, step, v, np.nan) for tag, vals in curves.items() for step, v in enumerate(vals)]
    return pd.DataFrame(rows, columns=["run", "source", "tag", "step", "value", "wall_time"])


def rules_fired(curves: dict[str, list[float]], settings: Settings | None = None) -> dict[str, list[int]]:
    return {f.rule: f.steps for f in check_scalars(frame(curves), settings=settings)}


def test_non_finite():
    assert rules_fired({"anything": [1.0, float("nan"), 2.0, float("inf")]}) == {"non_finite": [1, 3]}


def test_value_loss_spike_only_on_the_spike():
    loss = [1.0 + 0.01 * (i % 3) for i in range(30)]
    loss[25] = 9.0
    assert rules_fired({"critic/vf_loss": loss}) == {"value_loss_spike": [25]}


def test_robust_z_needs_enough_history():
    z = robust_z(pd.Series([1.0, 1.0, 50.0]), window=5, min_points=3)
    assert z.isna().all()


def test_policy_ratio_mean_and_max():
    fired = check_scalars(frame({"actor/ratio_mean": [1.0, 1.01, 1.5], "actor/ratio_max": [2.0, 3.0, 200.0]}))
    assert {(f.rule, tuple(f.steps)) for f in fired} == {("policy_ratio", (2,))}
    assert len(fired) == 2


def test_clipfrac_and_approxkl_use_a_rolling_mean():
    one_blip = [0.05] * 10 + [0.9] + [0.05] * 10
    assert rules_fired({"actor/pg_clipfrac": one_blip}) == {}
    assert rules_fired({"ppo/policy/approxkl": [0.2] * 8}) == {"approxkl_high": [4, 5, 6, 7]}


def test_critic_clipfrac_is_not_a_policy_clipfrac():
    assert rules_fired({"critic/vf_clipfrac": [0.9] * 10}) == {}


def test_kl_negative():
    assert rules_fired({"objective/kl": [0.1, -0.0001, -0.2, 0.3]}) == {"kl_negative": [2]}


def test_kl_coef_rising_steadily():
    assert rules_fired({"objective/kl_coef": [0.1] * 15}) == {}
    fired = rules_fired({"objective/kl_coef": [0.1 * 1.1**i for i in range(15)]})
    assert fired == {"kl_coef_rising": [10, 11, 12, 13, 14]}


def test_entropy_collapse_and_continuous_entropy_is_skipped():
    collapse = [2.0] * 5 + [1.0, 0.5, 0.1, 0.05, 0.01, 0.01, 0.01]
    assert rules_fired({"actor/entropy": collapse})["entropy_collapse"][0] == 9
    gaussian = [5.0, 4.0, 2.0, 0.5, -1.0, -3.0, -4.0, -4.5]
    assert rules_fired({"learner_iter/entropy_loss_avg": gaussian}) == {}


def test_reward_plateau_while_kl_rises():
    reward = [i / 10 for i in range(20)] + [2.0] * 20
    kl = [0.01 * 1.1**i for i in range(40)]
    fired = rules_fired({"env/reward_mean": reward, "objective/kl": kl})
    assert fired["reward_stalls_kl_rises"][0] >= 20
    assert "reward_stalls_kl_rises" not in rules_fired(
        {"env/reward_mean": reward, "objective/kl": [0.05] * 40}
    )


def test_di_engine_duplicates_are_checked_once():
    curves = {
        "learner_iter/value_loss_avg": [1.0] * 20 + [50.0],
        "learner_step/value_loss_avg": [1.0] * 20 + [50.0],
        "learner/value_loss_avg": [1.0] * 20 + [50.0],
    }
    assert len(check_scalars(frame(curves))) == 1


def test_histogram_ratio_from_event_files(tmp_path):
    write_tensorboard_run(tmp_path, steps=10, unstable=True)
    bundle = load_metrics(tmp_path)
    ratio = [
        f for f in check_scalars(bundle.scalars, histograms=bundle.histograms) if f.rule == "policy_ratio"
    ]
    assert ratio and all(f.link.tag == "ppo/policy/ratio" for f in ratio)
    assert ratio[0].steps[0] == 6


def test_settings_change_thresholds_severity_and_enabled():
    settings = Settings()
    parse_set_option(settings, "kl_negative.tolerance=0.5")
    assert rules_fired({"objective/kl": [0.1, -0.2]}, settings) == {}
    parse_set_option(settings, "non_finite.severity=info")
    parse_set_option(settings, "clipfrac_high.enabled=false")
    fired = check_scalars(frame({"x": [float("nan")], "actor/clipfrac": [0.9] * 6}), settings=settings)
    assert [(f.rule, f.severity) for f in fired] == [("non_finite", "info")]


@pytest.mark.parametrize(
    "text",
    [
        "nope.z=1",
        "value_loss_spike.nope=1",
        "value_loss_spike.z=abc",
        "value_loss_spike",
        "non_finite.severity=fatal",
    ],
)
def test_bad_set_options_name_the_problem(text):
    with pytest.raises(InvalidArgumentError):
        parse_set_option(Settings(), text)


def test_toml_settings_and_bad_entries(tmp_path):
    (tmp_path / "rl-board.toml").write_text(
        "[rules.value_loss_spike]\nz = 3\nwindow = 10\n[rules.unknown_rule]\nx = 1\n"
    )
    settings, problems = load_settings(tmp_path)
    assert settings.params["value_loss_spike"] == {"z": 3.0, "window": 10.0}
    assert len(problems) == 1 and "unknown_rule" in problems[0].reason


def test_broken_toml_is_a_problem(tmp_path):
    (tmp_path / "rl-board.toml").write_text("[rules\n")
    settings, problems = load_settings(tmp_path)
    assert settings.params == {} and problems


def test_registry_accepts_rules_of_other_kinds():
    def check(data, ctx):
        yield ctx.finding("run", data, "rollout thing", Where(step=data[0]))

    register(Rule("test_rollout_rule", "test-kind", "info", "demo", {}, check))
    try:
        [finding] = run_rules("test-kind", [3, 1])
        assert finding == Finding("test_rollout_rule", "info", "run", [1, 3], "rollout thing", Where(step=3))
        assert check_scalars(frame({"x": [1.0]})) == []  # scalar runs do not call it
    finally:
        del REGISTRY["test_rollout_rule"]


def test_worst_severity():
    f = [Finding("a", "info", "r", [], ""), Finding("b", "error", "r", [], "")]
    assert worst_severity(f) == "error" and worst_severity([]) is None


@pytest.mark.skipif(
    not REAL.is_dir(),
    reason=(
        "needs the real DI-engine folder ../shared/real-logs/di-engine-mappo-ant beside the project "
        "(generated DI-engine folders cover the same code)"
    ),
)
def test_real_run_is_quiet_at_defaults_and_flags_one_bump_at_z6():
    bundle = load_metrics(REAL)
    assert check_scalars(bundle.scalars, histograms=bundle.histograms) == []
    settings = Settings()
    parse_set_option(settings, "value_loss_spike.z=6")
    [finding] = check_scalars(bundle.scalars, settings=settings)
    assert (finding.rule, finding.steps, finding.link.tag) == (
        "value_loss_spike",
        [19200],
        "learner_iter/value_loss_avg",
    )


def test_duplicate_copies_of_di_engine_statistics():
    from rl_board.health.engine import duplicate_copies

    tags = ["learner_iter/loss", "learner_step/loss", "learner/loss", "learner/only_text", "actor/step/x"]
    assert duplicate_copies(tags) == {"learner_step/loss", "learner/loss"}
