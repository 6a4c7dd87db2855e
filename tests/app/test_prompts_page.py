"""The Prompts page on the bundled-style GRPO demo: run-wide lists, one prompt's history, the link from a
sample."""

from __future__ import annotations

from pathlib import Path

from rl_board.rollouts.store import RolloutStore
from tests.helpers.apptest import assert_clean, open_page, table


def test_prompt_lists_and_a_history(grpo_root: Path, tmp_path: Path) -> None:
    store = RolloutStore.open(grpo_root / "grpo", cache_dir=tmp_path / "expected")
    expected = store.prompts()
    at = open_page("views/prompts.py", run="grpo")
    assert_clean(at)
    assert len(table(at)) == len(expected)
    counts = {m.label: int(m.value) for m in at.metric}
    assert sum(counts.values()) == len(expected)
    row = expected.iloc[0]
    at = open_page("views/prompts.py", run="grpo", prompt_id=row["id"])
    assert_clean(at)
    assert row["prompt"] in [c.value for c in at.code]
    history = [df.value for df in at.main.dataframe][-1]
    assert len(history) == row["samples"]


def test_a_sample_links_to_its_prompt_history(grpo_root: Path, tmp_path: Path) -> None:
    store = RolloutStore.open(grpo_root / "grpo", cache_dir=tmp_path / "expected")
    prompt = store.samples(step=2, columns=["prompt"])["prompt"].iloc[1]
    at = open_page("views/sample.py", run="grpo", step="2", sample="1")
    at.button(key="to_prompt_history").click().run()
    assert_clean(at)
    assert prompt in [c.value for c in at.code]
