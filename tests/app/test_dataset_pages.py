"""Every page on a run that is a Parquet dataset read in place (rl-board export's layout), as on the
original."""

from __future__ import annotations

from pathlib import Path

import pytest

from rl_board.rollouts.dataset import write_dataset
from rl_board.rollouts.demo_grpo import GrpoSpec, write_grpo_run
from rl_board.rollouts.store import RolloutStore
from rl_board.ui.reading import split_thinking
from tests.helpers.apptest import PAGES, assert_clean, open_page, plain_texts, table, texts


@pytest.fixture
def dataset_root(tmp_path: Path, serve) -> tuple[Path, RolloutStore]:
    source = tmp_path / "source"
    write_grpo_run(source, GrpoSpec(steps=4, prompts=3, group_size=4, tokens=20, long_tokens=400, seed=5))
    original = RolloutStore.open(source, cache_dir=tmp_path / "expected")
    write_dataset(original.arrow_samples(), tmp_path / "served" / "grpo.parquet")
    return serve(tmp_path / "served"), original


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_page_draws_a_dataset_run(dataset_root, page):
    _, original = dataset_root
    at = open_page(page, run="grpo.parquet", step=str(original.steps[1]), sample="0")
    assert_clean(at)


def test_step_browser_and_sample_show_the_original_rows(dataset_root, tmp_path):
    root, original = dataset_root
    step = original.steps[2]
    at = open_page("steps", run="grpo.parquet", step=str(step), sort="reward", descending="1")
    assert_clean(at)
    shown = table(at)
    expected = original.samples(step=step, sort_by="reward", descending=True)
    assert shown["prompt"].tolist()[:5] == expected["prompt"].tolist()[:5]
    at = open_page("sample", run="grpo.parquet", step=str(step), sample="3")
    assert_clean(at)
    parts = split_thinking(original.sample(step=step, index=3).fields["response"])
    assert parts.answer in plain_texts(at)  # the answer; its thinking apart, folded
    folds = [str(e.label) for e in at.expander if str(e.label).startswith("Thinking · ")]
    assert folds == ([] if parts.thinking is None else [f"Thinking · {len(parts.thinking)} characters"])
    assert not list((tmp_path / "cache").rglob("seg-*.arrow")), "no cache segment was written for the dataset"
    assert any("read in place" in t for t in texts(at.sidebar.markdown) + texts(at.sidebar.caption))
