"""Health rules on trajectories fire on runs where the failure was planted, and on no clean run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rl_board.health.checks import RolloutRun, check_rollouts
from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.store import RolloutStore
from rl_board.writer import RolloutWriter

RULES = {"tool_errors_rising", "cut_by_limits_rising", "no_final_answer"}


def write_agent_run(run: Path, *, error_rate, cut_share, steps: int = 8, n: int = 20, seed: int = 1) -> None:
    """Tool-using trajectories whose tool error rate and share cut by the turn limit follow the given
    curves."""
    rng = np.random.default_rng(seed)
    with RolloutWriter(run) as writer:
        for step in range(steps):
            for k in range(n):
                messages = [{"role": "user", "content": f"task {k}"}]
                for turn in range(3):
                    call = {"id": f"{step}-{k}-{turn}", "name": "python", "arguments": "{}"}
                    messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
                    failed = rng.random() < error_rate(step)
                    messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": call["id"],
                            "content": "Traceback (most recent call last): x" if failed else "42",
                        }
                    )
                cut = rng.random() < cut_share(step)
                if not cut:
                    messages.append({"role": "assistant", "content": "the answer is 42"})
                writer.write(
                    step,
                    None,
                    None,
                    float(not cut),
                    messages=messages,
                    finish_reason="max_turns" if cut else "stop",
                )


def fired(run: Path, cache: Path) -> set[str]:
    store = RolloutStore.open(run, cache_dir=cache)
    return {f.rule for f in check_rollouts(RolloutRun.from_store(run.name, store))} & RULES


def test_clean_agent_run_fires_nothing(tmp_path: Path) -> None:
    write_agent_run(tmp_path / "clean", error_rate=lambda s: 0.05, cut_share=lambda s: 0.05)
    assert fired(tmp_path / "clean", tmp_path / "c") == set()


def test_single_turn_runs_fire_nothing(tmp_path: Path) -> None:
    write_run(tmp_path / "ppo", DemoSpec(steps=6, samples=8, ranks=1, tokens=8, seed=3))
    assert fired(tmp_path / "ppo", tmp_path / "c") == set()


@pytest.mark.parametrize(
    ("errors", "cut", "expect"),
    [
        (lambda s: 0.05 + 0.1 * s, lambda s: 0.05, {"tool_errors_rising"}),
        (lambda s: 0.05, lambda s: min(0.9, 0.05 + 0.12 * s), {"cut_by_limits_rising", "no_final_answer"}),
    ],
)
def test_planted_failures_fire_their_rules(tmp_path: Path, errors, cut, expect) -> None:
    write_agent_run(tmp_path / "planted", error_rate=errors, cut_share=cut)
    assert fired(tmp_path / "planted", tmp_path / "c") == expect
