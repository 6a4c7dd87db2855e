"""The Groups page on a GRPO-shaped run (verl v1 dump: uid groups)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rl_board.rollouts.store import RolloutStore
from tests.helpers import trainer_dumps as T
from tests.helpers.apptest import APP, assert_clean, open_page, svg_charts, table, texts


@pytest.fixture
def v1_root(tmp_path: Path, serve) -> Path:
    root = tmp_path / "served"
    T.ALL_WRITERS["verl_v1"](root / "grpo")
    serve(root)
    return root


def test_groups_of_a_step_and_best_against_worst(v1_root: Path, tmp_path: Path) -> None:
    store = RolloutStore.open(v1_root / "grpo", cache_dir=tmp_path / "expected")
    step = store.steps[0]
    expected = store.groups(step=step)
    at = open_page("groups", run="grpo", step=str(step))
    assert_clean(at)
    frame = table(at)
    assert len(frame) == len(expected) and frame["samples"].sum() == store.count(step=step)
    labels = {m.label: m.value for m in at.metric}
    assert labels["Groups"] == str(len(expected))
    first = expected.iloc[0]
    at = open_page("groups", run="grpo", step=str(step), group=str(first["group"]))
    assert_clean(at)
    best = store.sample(step=step, index=int(first["best_sample"])).fields["response"]
    worst = store.sample(step=step, index=int(first["worst_sample"])).fields["response"]
    codes = [c.value for c in at.code]
    assert best in codes and worst in codes
    assert any(t.startswith("**Best**") for t in texts(at.markdown))
    assert any("rlb-diff" in h.proto.body for h in at.get("html"))  # the two answers' word diff


def test_threshold_and_zero_variance_filter(v1_root: Path, tmp_path: Path) -> None:
    store = RolloutStore.open(v1_root / "grpo", cache_dir=tmp_path / "expected")
    step = store.steps[-1]
    expected = store.groups(step=step, threshold=0.01)
    assert (
        expected["zero_variance"].any() and not expected["zero_variance"].all()
    )  # the filter has work to do
    at = open_page("groups", run="grpo", step=str(step), threshold="0.01", zero_variance="1")
    assert_clean(at)
    frame = table(at)
    assert len(frame) == int(expected["zero_variance"].sum()) and frame["zero variance"].all()
    assert sorted(frame["solved"]) == sorted(expected.loc[expected["zero_variance"], "solved"])


def test_overview_shows_group_curves_and_the_step_browser_links_to_groups(v1_root: Path) -> None:
    at = AppTest.from_file(str(APP), default_timeout=30)
    at.query_params["run"] = "grpo"
    at.run()
    assert_clean(at)
    assert "Groups per step (GRPO)" in svg_charts(at)
    at.switch_page("views/steps.py").run()
    at.button(key="to_groups").click().run()
    assert_clean(at)
    assert any(m.label == "Zero-variance groups" for m in at.metric)


def test_a_ppo_run_with_a_chance_repeat_shows_no_group_curves(tmp_path: Path, serve) -> None:
    from rl_board.rollouts.demo import DemoSpec, write_run

    root = tmp_path / "served"
    write_run(root / "ppo", DemoSpec(steps=30, samples=24, seed=0))  # a+b repeats by chance once or twice
    serve(root)
    at = AppTest.from_file(str(APP), default_timeout=30)
    at.query_params["run"] = "ppo"
    at.run()
    assert_clean(at)
    assert not any("Groups per step" in title for title in svg_charts(at))


def test_a_metric_point_opens_that_step_of_the_rollouts_beside_it(tmp_path: Path, serve) -> None:
    from rl_board.rollouts.demo_grpo import GrpoSpec, write_grpo_run

    root = tmp_path / "served"
    write_grpo_run(root / "grpo", GrpoSpec(steps=6, prompts=2, group_size=4, tokens=10, long_tokens=20))
    serve(root)
    at = AppTest.from_file(str(APP), default_timeout=30)
    at.run()
    at.switch_page("views/metrics.py").run()
    assert_clean(at)
    assert any("open that step's samples" in c.value for c in at.caption)  # metrics.jsonl beside the samples
