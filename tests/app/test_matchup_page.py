"""Same prompts: two steps of the GRPO demo (its prompts come back every few steps), answer against answer."""

from __future__ import annotations

from pathlib import Path

from rl_board.rollouts.store import RolloutStore
from tests.helpers.apptest import assert_clean, open_page, table


def test_two_steps_of_one_run_share_prompts(grpo_root: Path, tmp_path: Path) -> None:
    store = RolloutStore.open(grpo_root / "grpo", cache_dir=tmp_path / "x")
    expected = store.versus(
        store, step=0, other_step=3
    )  # a pool of 9 prompts, 3 per step: step 3 repeats step 0
    assert len(expected) == 3
    at = open_page("views/matchup.py", run="grpo", versus="grpo", step_a="0", step_b="3", matchup_row="0")
    assert_clean(at)
    frame = table(at)
    assert len(frame) == 3 and sorted(frame["gain"]) == sorted(expected["gain"])
    assert any(h.proto.body.count("rlb-diff") for h in at.get("html"))


def test_against_another_run_all_steps(grpo_root: Path) -> None:
    at = open_page("views/matchup.py", run="grpo", versus="grpo_b", step_a="all steps", step_b="all steps")
    assert_clean(at)
    frame = table(at)
    assert len(frame) == 9 and (frame["gain"] == 0).all()  # the same seed: the same run twice
