"""NeMo-RL, prime-rl and ROLL adapters against the trainer-dump generators.

Raw files are read with plain json, each record goes through the format's
``identify`` and ``nested`` (step filled from the path when the record has
none), and the result is compared with what the writer's Dump says.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from rl_board.formats.base import Format, Record, step_from_name
from rl_board.formats.nested import NEMO_RL, PRIME_RL_TOKENS, ROLL
from rl_board.formats.open_instruct import OPEN_INSTRUCT
from rl_board.formats.prime import PRIME_RL
from rl_board.formats.roll_agentic import ROLL_AGENTIC
from tests.helpers import trainer_dumps
from tests.helpers.same import rows_as_lists

FORMATS = (NEMO_RL, PRIME_RL, PRIME_RL_TOKENS, ROLL, ROLL_AGENTIC, OPEN_INSTRUCT)
RL_BOARD_LINE = {"step": 1, "prompt": "p", "response": "r", "reward": 1.0}
THINK = re.compile(r"^<think>\n.*?\n</think>\n", re.S)


def records_of(fmt: Format, path: Path) -> list[Record]:
    text = path.read_text(encoding="utf-8")
    if fmt.columns:
        return [json.loads(text)]
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def read(fmt: Format, files: list[Path]) -> dict[int, list[Record]]:
    """Samples by step, in reading order, as a loader would build them."""
    by_step: dict[int, list[Record]] = {}
    for path in files:
        for record in records_of(fmt, path):
            assert fmt.identify(record), path
            for sample in fmt.nested(record):
                sample.setdefault("step", step_from_name(path))
                by_step.setdefault(sample["step"], []).append(sample)
    return by_step


def check_against_dump(by_step: dict[int, list[Record]], dump: trainer_dumps.Dump) -> None:
    assert sorted(by_step) == dump.steps
    assert sum(len(v) for v in by_step.values()) == dump.samples
    for step in dump.steps:
        samples = by_step[step]
        assert [s["prompt"] for s in samples] == dump.prompts[step]
        assert [s["reward"] for s in samples] == dump.rewards[step]
        mean = sum(s["reward"] for s in samples) / len(samples)
        assert mean == pytest.approx(dump.reward_means[step])


# --------------------------------------------------------------------------- NeMo-RL


def test_nemo_rl_train(tmp_path: Path) -> None:
    dump = trainer_dumps.write_nemo_rl(tmp_path)
    by_step = read(NEMO_RL, dump.files)
    check_against_dump(by_step, dump)
    for step in dump.steps:
        assert [s["response"] for s in by_step[step]] == dump.responses[step]
    raw = records_of(NEMO_RL, dump.files[0])
    for record, sample in zip(raw, by_step[dump.steps[0]], strict=True):
        mask = record["token_loss_mask"][0]
        on = [i for i, m in enumerate(mask) if m == 1]
        gen = [record["generation_logprobs"][0][i] for i in on]
        prev = [record["prev_logprobs"][0][i] for i in on]
        assert sample["advantage"] == record["advantages"][0][on[0]]
        assert sample["gen_logprob_mean"] == pytest.approx(sum(gen) / len(gen))
        assert sample["train_logprob_mean"] == pytest.approx(sum(prev) / len(prev))
        gaps = [abs(a - b) for a, b in zip(gen, prev, strict=True)]
        assert sample["logprob_mismatch_max"] == pytest.approx(max(gaps))
        assert sample["idx"] == record["idx"] and sample["input_lengths"] == record["input_lengths"][0]
        assert not {"response_tokens", "ref_logprobs", "token_ids"} & set(sample)  # ids, never token text
        assert len(sample["response_token_ids"]) == len(sample["logprobs"]) == len(sample["train_logprobs"])


def test_nemo_rl_validation(tmp_path: Path) -> None:
    dump = trainer_dumps.write_nemo_rl_val(tmp_path)
    by_step = read(NEMO_RL, dump.files)
    check_against_dump(by_step, dump)
    for step in dump.steps:
        assert [s["response"] for s in by_step[step]] == dump.responses[step]
        assert all("advantage" not in s and "gen_logprob_mean" not in s for s in by_step[step])


def test_nemo_rl_unwraps_odd_shapes() -> None:
    odd = {"content": ["only a prompt"], "rewards": "0.5", "advantages": [0.3]}
    [sample] = NEMO_RL.nested(odd)
    assert sample == {"prompt": "only a prompt", "reward": 0.5, "advantage": 0.3}
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "u"}]}]
    [sample] = NEMO_RL.nested({"content": [chat], "rewards": [[1]]})
    assert sample == {
        "prompt": "system: s\n\nuser: u",
        "reward": 1.0,
        "messages": chat,
    }  # the reader keeps JSON


# --------------------------------------------------------------------------- prime-rl


def test_prime_rl_traces(tmp_path: Path) -> None:
    dump = trainer_dumps.write_prime_rl(tmp_path)
    assert all(p.parent.name == "all" for p in dump.files)
    by_step = read(PRIME_RL, dump.files)
    check_against_dump(by_step, dump)
    assert dump.groups is not None
    thinking = 0
    for step in dump.steps:
        samples = by_step[step]
        # the Dump's response is the assistant content; reasoning_content comes back in <think>
        assert [THINK.sub("", s["response"], count=1) for s in samples] == dump.responses[step]
        thinking += sum(s["response"].startswith("<think>\n") for s in samples)
        assert [s["group"] for s in samples] == dump.groups[step]
        for s in samples:
            assert s["env"] == "math" and isinstance(s["task"], str) and isinstance(s["ok"], bool)
            assert "advantage" not in s  # "all" is logged before advantages exist
            if s["ok"]:
                assert s["reward/correct_answer"] == s["reward"]
    assert thinking > 0
    assert any(not s["ok"] and s["response"] == "" and s["reward"] == 0.0 for s in by_step[2])


def test_prime_rl_effective_has_advantages(tmp_path: Path) -> None:
    trainer_dumps.write_prime_rl(tmp_path)
    path = tmp_path / "rollouts" / "step_1" / "train" / "effective" / "traces.jsonl"
    records = records_of(PRIME_RL, path)
    assert records and all(PRIME_RL.identify(r) for r in records)
    for record in records:
        [sample] = PRIME_RL.nested(record)
        assert sample["advantage"] == record["traces"][0]["nodes"][-1]["advantages"][0]
        assert "step" not in sample


def test_prime_rl_token_exports(tmp_path: Path) -> None:
    dump = trainer_dumps.write_prime_rl_token_exports(tmp_path)
    stable = [p for p in dump.files if (p.parent / "STABLE").exists()]
    by_step = read(PRIME_RL_TOKENS, stable)
    assert sorted(by_step) == dump.steps
    assert sum(len(v) for v in by_step.values()) == dump.samples
    for path in stable:
        for record in records_of(PRIME_RL_TOKENS, path):
            [sample] = PRIME_RL_TOKENS.nested(record)
            on = [i for i, m in enumerate(record["loss_mask"]) if m]
            assert sample["step"] == record["step"] and "prompt" not in sample and "reward" not in sample
            assert sample["n_response_tokens"] == len(on)
            assert sample["advantage"] == record["advantages"][on[0]]
            kl = [record["mismatch_kl"][i] for i in on]
            assert sample["mismatch_kl"] == pytest.approx(sum(kl) / len(kl))


def test_prime_rl_token_exports_tolerate_nulls() -> None:
    record = {
        "token_ids": [1, 2, 3, 4],
        "loss_mask": [False, True, True, True],
        "advantages": [None] * 4,
        "mismatch_kl": [None, None, 0.2, None],
        "entropy": None,
        "rl_weights": [None] * 4,
    }
    [sample] = PRIME_RL_TOKENS.nested(record)
    assert rows_as_lists(sample) == {
        "n_response_tokens": 3,
        "mismatch_kl": 0.2,
        "response_token_ids": [2, 3, 4],
    }


# --------------------------------------------------------------------------- ROLL


def test_roll(tmp_path: Path) -> None:
    dump = trainer_dumps.write_roll(tmp_path)
    by_step = read(ROLL, dump.files)
    check_against_dump(by_step, dump)
    assert dump.groups is not None
    for path in dump.files:
        step = step_from_name(path)
        samples = by_step[step]
        assert all(s["step"] == step for s in samples)  # from global_step, agrees with the name
        assert [s["response"] for s in samples] == dump.responses[step]
        assert [s["group"] for s in samples] == [s["id"] for s in samples] == dump.groups[step]
        assert {(s["tag"], s["domain"]) for s in samples} == {("synthetic_math", "math_rule")}
        assert all(isinstance(s["difficulty"], float) and s["ground_truth"] for s in samples)


def test_roll_ignores_ragged_columns_and_joins_turns() -> None:
    record = {
        "responses": [["a", "b"], "c"],
        "scores": [1, 0],
        "prompt": ["p1", "p2", "extra"],
        "global_step": 4,
        "messages": ['[{"role": "user", "content": "m"}]', "not json"],
    }
    assert ROLL.nested(record) == [
        {"step": 4, "prompt": "m", "response": "a\n\nb", "reward": 1.0},
        {"step": 4, "response": "c", "reward": 0.0},
    ]


# --------------------------------------------------------------------------- identify and odd input


def first_records(tmp_path: Path) -> dict[str, Record]:
    nemo = trainer_dumps.write_nemo_rl(tmp_path / "nemo")
    val = trainer_dumps.write_nemo_rl_val(tmp_path / "nemo")
    prime = trainer_dumps.write_prime_rl(tmp_path / "prime")
    tokens = trainer_dumps.write_prime_rl_token_exports(tmp_path / "prime")
    roll = trainer_dumps.write_roll(tmp_path / "roll")
    return {
        "nemo-rl": records_of(NEMO_RL, nemo.files[0])[0],
        "nemo-rl-val": records_of(NEMO_RL, val.files[0])[0],
        "prime-rl": records_of(PRIME_RL, prime.files[0])[0],
        "prime-rl-tokens": records_of(PRIME_RL_TOKENS, tokens.files[0])[0],
        "roll": records_of(ROLL, roll.files[0])[0],
        "rl-board": RL_BOARD_LINE,
    }


def test_identify_only_own_records(tmp_path: Path) -> None:
    records = first_records(tmp_path)
    for fmt in FORMATS:
        for kind, record in records.items():
            assert fmt.identify(record) == (kind.removesuffix("-val") == fmt.name), (fmt.name, kind)


ODD = [
    {},
    None,
    0,
    "text",
    [],
    [{}],
    {"content": None, "rewards": None},
    {"content": 3, "rewards": [[]]},
    {"traces": [], "env": None},
    {"traces": [{"nodes": 5, "rewards": [1]}], "group": {}},
    {
        "traces": [{"nodes": [{"message": {"role": "assistant", "content": 7}}], "rewards": {"a": None}}],
        "task": [1],
    },
    {"token_ids": None, "loss_mask": "x", "advantages": {}, "mismatch_kl": "nan", "step": math.inf},
    {"responses": [], "scores": []},
    {"responses": [None, {}], "scores": "x", "global_step": [math.nan, 1e400]},
    {"responses": ["r"], "scores": [[1, 2]], "difficulty": [[]], "id": [{}], "global_step": [True]},
    {"trajectory_data": [None, "x", "{}", "[1]"], "messages": ["[[]]", "[1]", None, "{"]},
    {
        "trajectory_data": ['{"reward_info": 3, "failure_info": [], "env_info": {"group_id": {}}}'],
        "messages": ['[[{"role": "assistant", "content": "<tool_call>\\n{"}]]'],
        "global_step": "x",
    },
    {"prompt_tokens": [1], "response_tokens": [True], "finish_reason": None},
    {
        "prompt_tokens": [],
        "response_tokens": [],
        "request_info": {"tool_call_stats": [None, {"success": "no"}], "num_calls": "x", "tool_outputs": 5},
        "logprobs": ["a"],
        "ground_truth": {"a": [1]},
    },
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("record", ODD)
def test_odd_input_never_raises(fmt: Format, record: object) -> None:
    assert isinstance(fmt.identify(record), bool)  # type: ignore[arg-type]
    samples = fmt.nested(record)  # type: ignore[arg-type]
    assert isinstance(samples, list) and all(isinstance(s, dict) for s in samples)
    for sample in samples:
        for name, value in sample.items():
            if name == "messages":  # a list of message dicts: the reader brings it to one shape
                assert isinstance(value, list) and all(isinstance(m, dict) for m in value)
            elif name in ("response_token_ids", "logprobs"):  # token ids and their log-probs
                assert isinstance(value, list) and all(isinstance(v, (int, float)) for v in value)
            else:
                assert value is None or isinstance(value, (str, int, float, bool))
