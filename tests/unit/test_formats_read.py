"""Every trainer format, end to end: written by code, found by the catalogue, read by the store.

Counts, steps and per-step reward means must equal what the writer says it
wrote (computed from the values, independently of rl-board's readers).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from rl_board.metrics.reader import metric_catalogue
from rl_board.rollouts.store import RolloutStore
from rl_board.sources.catalogue import NO_METRIC_LINES, catalogue
from tests.helpers import trainer_dumps as T

ROLLOUT_WRITERS = {k: w for k, w in T.ALL_WRITERS.items() if k != "nemo_rl_val"}
EXPECTED_FORMAT = {
    "verl": "verl",
    "verl_v1": "verl",
    "verl_validation": "verl",
    "rl_board": "rl-board",
    "rllogging_board_fork": "rl-board",
    "openrlhf": "rl-board",
    "openrlhf_pr658": "rl-board",
    "trl": "trl",
    "trl_conversational": "trl",
    "roll": "roll",
    "nemo_rl": "nemo-rl",
    "prime_rl": "prime-rl",
    "prime_rl_token_exports": "prime-rl-tokens",
    "areal": "areal",
    "skyrl_eval": "skyrl",
}


def run_holding(root: Path, dump: T.Dump):
    """The rollout run of the catalogue that holds the dump's first file."""
    first = dump.files[0].resolve()
    folders = [f for f in catalogue(root).rollout_folders() if first.is_relative_to(f.path)]
    assert folders, f"no rollout run holds {first}"
    return max(folders, key=lambda f: len(f.path.parts))


@pytest.mark.parametrize("name", sorted(ROLLOUT_WRITERS))
def test_each_format_loads_exactly(name: str, tmp_path: Path, cache_dir: Path) -> None:
    dump = ROLLOUT_WRITERS[name](tmp_path / "out")
    folder = run_holding(tmp_path, dump)
    assert folder.format == EXPECTED_FORMAT[name]
    store = RolloutStore.open(folder.path, cache_dir=cache_dir)
    assert store.report.bad_line_count == 0, store.report.bad_lines[:3]
    assert store.num_samples == dump.samples and store.steps == dump.steps
    if dump.reward_means:
        summary = store.step_summary().set_index("step")
        for step, mean in dump.reward_means.items():
            got = summary.loc[step, "reward_mean"]
            assert (math.isnan(mean) and math.isnan(got)) or got == pytest.approx(mean, abs=1e-6), step


@pytest.mark.parametrize("name", ["verl", "trl", "roll", "areal", "skyrl_eval", "nemo_rl", "prime_rl"])
def test_prompt_response_reward_reach_the_sample(name: str, tmp_path: Path, cache_dir: Path) -> None:
    dump = ROLLOUT_WRITERS[name](tmp_path / "out")
    store = RolloutStore.open(run_holding(tmp_path, dump).path, cache_dir=cache_dir)
    step = dump.steps[0]
    rows = store.samples(step=step, columns=["prompt", "response", "reward"])
    # prime-rl keeps the model's reasoning too, inside <think>…</think> before the answer
    responses = list(rows["response"])
    if name == "prime_rl":
        responses = [re.sub(r"^<think>.*?</think>\n*", "", r, flags=re.S) for r in responses]
    assert sorted(responses) == sorted(dump.responses[step])
    assert sorted(rows["prompt"]) == sorted(dump.prompts[step])
    assert sorted(rows["reward"]) == pytest.approx(sorted(dump.rewards[step]), nan_ok=True)


def test_junk_is_skipped_with_reasons(tmp_path: Path) -> None:
    written = T.write_junk(tmp_path)
    found = metric_catalogue(tmp_path)  # as the start page and `rl-board runs` see it
    reasons = {s.path.name: s.reason for s in found.skipped}
    assert {p.name for p, _ in written} <= set(reasons), reasons
    [text] = [s for s in found.sources if s.path.suffix == ".txt"]
    assert text.reason == NO_METRIC_LINES  # notes, not a log: its lines are none the metrics reader knows
    assert "pickle" in reasons["model.pkl"] and "Markdown" in reasons["README.md"]
    assert found.rollout_folders() == []


def test_nemo_validation_files_are_named_not_mixed(tmp_path: Path) -> None:
    T.write_nemo_rl(tmp_path / "out")
    skipped = [s for s in catalogue(tmp_path).skipped if s.path.name.startswith("val_data")]
    assert skipped and all("validation" in s.reason for s in skipped)


def test_unfinished_prime_rl_token_step_waits_for_its_marker(tmp_path: Path) -> None:
    dump = T.write_prime_rl_token_exports(tmp_path / "out")
    waiting = [s for s in catalogue(tmp_path).skipped if "STABLE" in s.reason]
    assert waiting and all(s.path.parent.name.startswith("step_") for s in waiting)
    assert max(dump.steps) < max(int(s.path.parent.name.split("_")[1]) for s in waiting)
