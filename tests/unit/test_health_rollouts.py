"""Rollout health rules on runs written to disk (demo writer and hand-written JSONL), read through the
store."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rl_board.health.checks import (
    REGISTRY,
    RolloutRun,
    Settings,
    check_rollout_runs,
    check_rollouts,
    load_settings,
    parse_set_option,
)
from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.store import RolloutStore

ROLLOUT_RULES = {
    "rollout_kl_negative",
    "below_reference",
    "length_hacking",
    "truncation_high",
    "zero_variance_groups",
    "nonfinite_tokens",
}


def write_jsonl(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in records)  # json writes NaN/Infinity as the trainers do
    (folder / "rollouts.jsonl").write_text(text, encoding="utf-8")
    return folder


def sample(
    step: int,
    *,
    reward: float,
    prompt: str = "",
    n: int = 8,
    ref: float | None = None,
    logp: float = -1.0,
    ref_logp: float = -1.0,
    **extra: object,
) -> dict:
    record = {
        "step": step,
        "prompt": prompt or f"question {step}-{reward}-{n}",
        "response": " ".join(f"w{k}" for k in range(n)),  # n distinct words: no loop
        "reward": reward,
        "response_tokens": ["x"] * n,
        "logprobs": [logp] * n,
        "ref_logprobs": [ref_logp] * n,
    }
    if ref is not None:
        record["ref_reward"] = ref
    record.update(extra)
    return record


def fired(folder: Path, cache_dir: Path, settings: Settings | None = None) -> dict:
    store = RolloutStore.open(folder, cache_dir=cache_dir)
    return {f.rule: f for f in check_rollouts(RolloutRun.from_store("run", store), settings=settings)}


def test_rules_are_registered():
    assert {name for name, rule in REGISTRY.items() if rule.kind == "rollouts"} >= ROLLOUT_RULES
    assert REGISTRY["nonfinite_tokens"].severity == "error"


def test_the_demo_run_shows_only_its_reward_hacking_late(tmp_path, cache_dir):
    """The demo plants long, repetitive "Great question! Indeed..." answers from mid-run: length paid for, a
    template spreading and loops, each from the second half on."""
    run = tmp_path / "ppo"
    write_run(run, DemoSpec(steps=30, samples=24, ranks=2, tokens=48, seed=0))  # as in rollout_samples/
    found = fired(run, cache_dir)
    assert set(found) == {"length_hacking", "template_spreading", "loops"}
    assert all(min(f.steps) >= 15 for f in found.values())  # the demo's reward hacking starts mid-run


def test_kl_negative_fires_on_a_window_of_negative_log_ratios(tmp_path, cache_dir):
    records = [
        sample(s, reward=1.0, logp=-1.0, ref_logp=-1.0 + (0.2 if s >= 3 else -0.1))
        for s in range(6)
        for _ in range(4)
    ]
    finding = fired(write_jsonl(tmp_path / "r", records), cache_dir)["rollout_kl_negative"]
    assert finding.steps == [4, 5]  # the 3-step window turns negative at step 4
    assert finding.link.to_dict() == {"step": 4, "sort": "log_ratio_mean", "desc": False}
    healthy = [sample(s, reward=1.0, logp=-1.0, ref_logp=-1.2) for s in range(6) for _ in range(4)]
    assert "rollout_kl_negative" not in fired(write_jsonl(tmp_path / "h", healthy), cache_dir)


def below_run(shares: list[float], per_step: int = 10) -> list[dict]:
    out = []
    for step, share in enumerate(shares):
        below = round(share * per_step)
        out += [sample(step, reward=0.0 if i < below else 1.0, ref=0.5) for i in range(per_step)]
    return out


def test_below_reference_fires_when_the_share_does_not_shrink(tmp_path, cache_dir):
    finding = fired(write_jsonl(tmp_path / "flat", below_run([0.5] * 12)), cache_dir)["below_reference"]
    assert finding.steps == list(range(6, 12))
    assert finding.link.to_dict() == {"step": 11, "sort": "reward_gap", "desc": False}
    shrinking = below_run(list(np.linspace(0.6, 0.1, 12)))
    assert "below_reference" not in fired(write_jsonl(tmp_path / "down", shrinking), cache_dir)
    short = below_run([0.5] * 6)  # too few steps to call a trend
    assert "below_reference" not in fired(write_jsonl(tmp_path / "short", short), cache_dir)


def test_length_hacking_fires_when_length_buys_reward(tmp_path, cache_dir):
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 60, size=(5, 10))
    paid = [sample(s, reward=float(n) / 10, n=int(n)) for s in range(5) for n in lengths[s]]
    finding = fired(write_jsonl(tmp_path / "paid", paid), cache_dir)["length_hacking"]
    assert finding.steps == [0, 1, 2, 3, 4]
    assert (
        finding.link.to_dict()["filters"]["length"][1] is None and finding.link.to_dict()["sort"] == "reward"
    )
    fair = [sample(s, reward=float(rng.normal()), n=int(n)) for s in range(5) for n in lengths[s]]
    assert "length_hacking" not in fired(write_jsonl(tmp_path / "fair", fair), cache_dir)


def test_truncation_at_the_runs_longest_response_or_a_given_max(tmp_path, cache_dir):
    records = [sample(s, reward=1.0, n=64 if i < 4 else 10 + i) for s in range(4) for i in range(10)]
    finding = fired(write_jsonl(tmp_path / "cut", records), cache_dir)["truncation_high"]
    assert finding.steps == [0, 1, 2, 3] and finding.link.to_dict()["filters"] == {"length": [64.0, None]}
    varied = [sample(s, reward=1.0, n=10 + 5 * i) for s in range(4) for i in range(10)]
    assert "truncation_high" not in fired(write_jsonl(tmp_path / "ok", varied), cache_dir)
    few = [sample(0, reward=1.0, n=64)] * 3  # three samples, all at the cap: too few to judge
    assert "truncation_high" not in fired(write_jsonl(tmp_path / "few", few), cache_dir)
    settings = Settings()
    parse_set_option(settings, "truncation_high.max_length=50")
    assert fired(tmp_path / "ok", cache_dir, settings)["truncation_high"].link.to_dict()["filters"] == {
        "length": [50.0, None]
    }


def test_truncation_needs_tokens_or_an_explicit_max(tmp_path, cache_dir):
    records = [
        {"step": s, "prompt": "p", "response": "The answer is 42.", "reward": 1.0}
        for s in range(3)
        for _ in range(8)
    ]
    run = write_jsonl(tmp_path / "chars", records)
    assert "truncation_high" not in fired(run, cache_dir)
    settings = Settings()
    parse_set_option(settings, "truncation_high.max_length=17")
    assert "characters" in fired(run, cache_dir, settings)["truncation_high"].message


def grouped(flat_groups: int, groups: int = 4, size: int = 4, steps: int = 3) -> list[dict]:
    out = []
    for s in range(steps):
        for g in range(groups):
            prompt = f"SYSTEM PROMPT shared by all. Question number {g}?"
            out += [
                sample(s, prompt=prompt, reward=1.0 if g < flat_groups else float(i), n=5 + i + size * g)
                for i in range(size)
            ]
    return out


def test_zero_variance_groups_link_to_the_group_by_its_prompt(tmp_path, cache_dir):
    finding = fired(write_jsonl(tmp_path / "flat", grouped(flat_groups=3)), cache_dir)["zero_variance_groups"]
    assert finding.steps == [0, 1, 2] and "75%" in finding.message
    assert finding.link.to_dict()["filters"]["search"].endswith("Question number 0?")
    assert "zero_variance_groups" not in fired(
        write_jsonl(tmp_path / "ok", grouped(flat_groups=1)), cache_dir
    )


def test_zero_variance_needs_groups(tmp_path, cache_dir):
    unique = [sample(s, reward=1.0, prompt=f"q{s}-{i}") for s in range(3) for i in range(4)]
    assert "zero_variance_groups" not in fired(write_jsonl(tmp_path / "u", unique), cache_dir)


def test_nonfinite_tokens_is_an_error_pointing_at_the_sample(tmp_path, cache_dir):
    records = [sample(s, reward=1.0) for s in range(3) for _ in range(3)]
    records[5]["logprobs"][2] = float("nan")
    records[7]["values"] = [float("inf")] * 8
    finding = fired(write_jsonl(tmp_path / "bad", records), cache_dir)["nonfinite_tokens"]
    assert (finding.severity, finding.steps) == ("error", [1, 2])
    assert finding.link.to_dict() == {"step": 1, "sample": 2}
    assert "nonfinite_tokens" not in fired(write_jsonl(tmp_path / "ok", records[:5]), cache_dir)


def test_settings_from_toml_reach_rollout_rules(tmp_path, cache_dir):
    (tmp_path / "rl-board.toml").write_text(
        "[rules.nonfinite_tokens]\nseverity = 'info'\n[rules.zero_variance_groups]\nenabled = false\n"
    )
    settings, problems = load_settings(tmp_path)
    assert problems == []
    records = grouped(flat_groups=4)
    records[0]["logprobs"][0] = float("inf")
    found = fired(write_jsonl(tmp_path / "r", records), cache_dir, settings)
    assert set(found) == {"nonfinite_tokens"} and found["nonfinite_tokens"].severity == "info"


def test_check_rollout_runs_names_runs_relative_to_the_root(tmp_path, cache_dir):
    write_run(tmp_path / "exp" / "ppo", DemoSpec(steps=30, samples=24, tokens=48, seed=0))
    write_jsonl(tmp_path / "broken", [sample(0, reward=1.0, logprobs=[float("nan")] * 8)])
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "empty.jsonl").write_text("not json\n")
    findings, problems = check_rollout_runs(tmp_path, cache_dir=cache_dir)
    assert {(f.run, f.rule) for f in findings} == {
        ("exp/ppo", "length_hacking"),
        ("exp/ppo", "template_spreading"),
        ("exp/ppo", "loops"),
        ("broken", "nonfinite_tokens"),
    }
    assert problems == []


def test_from_frame_for_hand_made_samples():
    import pandas as pd

    frame = pd.DataFrame({"step": [1, 0, 0], "reward": [1.0, 2.0, 3.0], "n_tokens": [3, 4, 5]})
    run = RolloutRun.from_frame("r", frame)
    assert run.length == "n_tokens" and run.samples["sample"].tolist() == [0, 1, 0]


@pytest.mark.parametrize("rule", sorted(ROLLOUT_RULES))
def test_every_rule_can_be_turned_off(rule, tmp_path, cache_dir):
    settings = Settings()
    parse_set_option(settings, f"{rule}.enabled=false")
    records = grouped(flat_groups=4)
    records[0]["logprobs"][0] = float("nan")
    assert rule not in fired(write_jsonl(tmp_path / "r", records), cache_dir, settings)
