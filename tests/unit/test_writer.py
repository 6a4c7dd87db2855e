"""RolloutWriter and the TRL callback: what they write is read back through RolloutStore.

No torch / transformers here: numpy arrays and a small fake tensor stand in for
tensors, and a fake GRPO trainer carries ``_logs`` shaped as in TRL's GRPOTrainer.
"""

from __future__ import annotations

import json
import math
import sys
from collections import defaultdict, deque
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rl_board.integrations.trl import RLBoardCallback
from rl_board.rollouts.store import RolloutStore
from rl_board.writer import RolloutWriter, default_rank


class FakeTensor:
    """Just the methods the writer may use on a torch tensor (records that it left the 'GPU')."""

    def __init__(self, data: object, device: str = "cuda") -> None:
        self.data = np.asarray(data)
        self.device = device
        self.detached = False

    def detach(self) -> FakeTensor:
        out = FakeTensor(self.data, self.device)
        out.detached = True
        return out

    def cpu(self) -> FakeTensor:
        out = FakeTensor(self.data, "cpu")
        out.detached = self.detached
        return out

    def tolist(self) -> object:
        assert self.device == "cpu" and self.detached, "tolist() on a tensor still on the GPU / in the graph"
        return self.data.tolist()

    def item(self) -> object:
        assert self.device == "cpu" and self.detached
        return self.data.item()

    def __getitem__(self, i: int) -> FakeTensor:
        return FakeTensor(self.data[i], self.device)

    def __len__(self) -> int:
        return len(self.data)


def lines_of(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(autouse=True)
def no_rank_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)


# -- RolloutWriter --------------------------------------------------------------


def write_padded_batch(run: Path, step: int) -> np.ndarray:
    """4 samples of right-padded length 6; returns the mask."""
    mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0], [1, 0, 0, 0, 0, 0]])
    logprobs = -np.arange(24, dtype=np.float32).reshape(4, 6) / 10
    logprobs[1, 1] = np.nan
    tokens = [[f"t{i}{j}" if mask[i, j] else "<PAD>" for j in range(6)] for i in range(4)]
    with RolloutWriter(run, rank=0) as writer:
        n = writer.write_batch(
            step,
            [f"prompt {i}" for i in range(4)],
            [f"response {i}" for i in range(4)],
            FakeTensor([1.0, float("nan"), 0.5, float("inf")]),
            response_mask=FakeTensor(mask),
            response_tokens=tokens,
            logprobs=FakeTensor(logprobs),
            ref_logprobs=logprobs - 0.1,
            values=[list(row) for row in np.ones((4, 6))],
            ref_reward=np.array([0.5, 0.25, np.nan, 1.0]),
            ground_truth=["a", "b", "c", "d"],
            difficulty=np.array([1, 2, 3, 4], dtype=np.int64),
            source="gsm8k",
        )
    assert n == 4
    return mask


def test_batch_round_trips_through_the_store(tmp_path: Path) -> None:
    run = tmp_path / "logs" / "run"
    mask = write_padded_batch(run, step=3)
    write_padded_batch(run, step=7)
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    assert store.num_samples == 8
    assert store.steps == [3, 7]
    assert store.samples_per_step() == {3: 4, 7: 4}
    for i in range(4):
        detail = store.sample(step=7, index=i)
        assert len(detail.tokens) == mask[i].sum()
        for name in ("response_tokens", "logprobs", "ref_logprobs", "values"):
            assert len(detail.fields[name]) == mask[i].sum(), name
        assert "<PAD>" not in detail.fields["response_tokens"]
        assert detail.fields["prompt"] == f"prompt {i}"
        assert detail.fields["difficulty"] == i + 1
        assert detail.fields["source"] == "gsm8k"
        assert detail.fields["ground_truth"] == "abcd"[i]
    one = store.sample(step=3, index=1)
    assert math.isnan(one.fields["reward"])
    assert math.isnan(one.fields["logprobs"][1]) and one.fields["logprobs"][0] == pytest.approx(-0.6)
    assert store.sample(step=3, index=3).fields["reward"] == math.inf
    assert math.isnan(store.sample(step=3, index=2).fields["ref_reward"])
    assert {"difficulty", "source"} <= set(store.extra_fields)
    summary = store.step_summary().set_index("step")
    assert summary.loc[3, "reward_max"] == math.inf


def test_nan_is_written_as_a_json_token(tmp_path: Path) -> None:
    with RolloutWriter(tmp_path, rank=0) as writer:
        writer.write(0, "p", "r", float("nan"), logprobs=[float("-inf"), 0.0])
    text = (tmp_path / "rollout_data_rank_0.jsonl").read_text()
    assert '"reward": NaN' in text and "-Infinity" in text


def test_one_sample_is_one_write_call(tmp_path: Path) -> None:
    writer = RolloutWriter(tmp_path, rank=0)
    calls: list[str] = []
    real = writer._file

    class Spy:
        def write(self, text: str) -> int:
            calls.append(text)
            return real.write(text)

        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

    writer._file = Spy()
    writer.write(1, "p\nwith newline", "r", 0.5, logprobs=np.zeros(3), note="x\ny")
    writer.write_batch(2, ["a", "b"], ["c", "d"], [1, 2])
    writer.close()
    assert len(calls) == 3
    assert all(c.endswith("\n") and c.count("\n") == 1 for c in calls)
    assert [r["step"] for r in lines_of(tmp_path / "rollout_data_rank_0.jsonl")] == [1, 2, 2]


def test_line_buffered_append_and_scalars(tmp_path: Path) -> None:
    writer = RolloutWriter(tmp_path / "new" / "dir", rank=2)
    writer.write(
        np.int64(5),
        "p",
        "r",
        FakeTensor(0.25),
        ref_reward=np.float32(0.5),
        score=np.float32(1.5),
        flag=np.bool_(True),
        nested={"k": np.arange(2)},
    )
    path = tmp_path / "new" / "dir" / "rollout_data_rank_2.jsonl"
    row = lines_of(path)[0]  # readable before close: line-buffered
    assert row == {
        "step": 5,
        "prompt": "p",
        "response": "r",
        "reward": 0.25,
        "ref_reward": 0.5,
        "score": 1.5,
        "flag": True,
        "nested": {"k": [0, 1]},
    }
    writer.close()
    with RolloutWriter(tmp_path / "new" / "dir", rank=2) as again:
        again.write(6, "p", "r", 1)
    assert [r["step"] for r in lines_of(path)] == [5, 6]


def test_rank_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "3")
    with RolloutWriter(tmp_path) as writer:
        writer.write(0, "p", "r", 1.0)
    assert writer.rank == 3
    assert (tmp_path / "rollout_data_rank_3.jsonl").exists()
    monkeypatch.setenv("RANK", "not a number")
    assert default_rank() == 0
    with RolloutWriter(tmp_path, rank=1, filename="eval_{rank}.jsonl") as writer:
        assert writer.path.name == "eval_1.jsonl"


def test_rank_from_torch_distributed_only_when_torch_is_already_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "3")
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert default_rank() == 3
    assert "torch" not in sys.modules
    dist = SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True, get_rank=lambda: 5)
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(distributed=dist))
    assert default_rank() == 5
    dist.is_initialized = lambda: False
    assert default_rank() == 3


def test_bad_input_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with RolloutWriter(tmp_path, rank=0) as writer:
        with pytest.raises(ValueError, match="mask"):
            writer.write(0, "p", "r", 1.0, logprobs=[0.0, 0.0], mask=[1, 1, 0])
        with pytest.raises(TypeError, match="token strings"):
            writer.write(0, "p", "r", 1.0, response_tokens=np.array([1, 2]))
        with pytest.raises(TypeError, match="prompt"):
            writer.write(0, None, "r", 1.0)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="batch sizes"):
            writer.write_batch(0, ["a"], ["b", "c"], [1.0])
        with pytest.raises(ValueError, match="rows"):
            writer.write_batch(0, ["a", "b"], ["c", "d"], [1.0, 2.0], logprobs=[[0.0]])
    assert (tmp_path / "rollout_data_rank_0.jsonl").read_text() == ""


# -- TRL callback ---------------------------------------------------------------


def fake_grpo_trainer(maxlen: int = 4) -> SimpleNamespace:
    """The parts of TRL's GRPOTrainer the callback reads (``_logs`` as set up in GRPOTrainer.__init__)."""
    logs = {
        "images": deque(maxlen=maxlen),
        "prompt": deque(maxlen=maxlen),
        "completion": deque(maxlen=maxlen),
        "rewards": defaultdict(lambda: deque(maxlen=maxlen)),
        "advantages": deque(maxlen=maxlen),
        "extra": defaultdict(lambda: deque(maxlen=maxlen)),
    }
    callbacks: list = []
    return SimpleNamespace(
        _logs=logs,
        callbacks=callbacks,
        add_callback=callbacks.append,
        reward_func_names=["accuracy", "format"],
        reward_weights=FakeTensor([1.0, 0.5]),
    )


def generate(trainer: SimpleNamespace, k: int) -> None:
    """What GRPOTrainer._generate_and_score_completions appends for one generation batch."""
    logs = trainer._logs
    logs["prompt"].extend(f"q{k}-{i}" for i in range(4))
    logs["completion"].extend(f"a{k}-{i}" for i in range(4))
    logs["rewards"]["accuracy"].extend([1.0, 0.0, float("nan"), float("nan")])
    logs["rewards"]["format"].extend([1.0, 1.0, 0.0, float("nan")])
    logs["advantages"].extend([0.5, -0.5, 0.0, 0.0])
    logs["extra"]["tool_calls"].extend([0, 1, 2, 3])


def state(step: int, main: bool = True) -> SimpleNamespace:
    return SimpleNamespace(global_step=step, is_world_process_zero=main)


def test_callback_writes_each_step_once(tmp_path: Path) -> None:
    run = tmp_path / "grpo"
    trainer = fake_grpo_trainer()
    callback = RLBoardCallback(run).attach(trainer)
    assert trainer.callbacks == [callback] and callback.trainer is trainer
    generate(trainer, 1)
    callback.on_log(None, state(1), None, logs={"loss": 0.1})
    callback.on_log(None, state(1), None, logs={"train_runtime": 3.0})  # same step: not again
    callback.on_log(None, state(1), None, logs={"eval_loss": 0.2})
    callback.on_log(None, state(2), None, logs={"loss": 0.1})  # no new generation: same batch, skipped
    callback.on_log(None, state(3, main=False), None, logs={"loss": 0.1})
    generate(trainer, 4)
    callback.on_log(None, state(4), None, logs={"loss": 0.1})
    generate(trainer, 5)
    callback.on_log(None, state(4), None, logs={"train_runtime": 9.0})  # new batch, but step 4 is written
    callback.on_train_end(None, state(4), None)
    assert callback.problems == 0 and callback.samples_written == 8
    assert list(trainer._logs["rewards"]) == [
        "accuracy",
        "format",
    ]  # the trainer's defaultdict gained no keys

    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    assert store.steps == [1, 4] and store.num_samples == 8
    rows = store.samples(step=4)
    assert rows["prompt"].tolist() == [f"q4-{i}" for i in range(4)]
    rewards = rows["reward"].tolist()
    assert rewards[:3] == [1.5, 0.5, 0.0] and math.isnan(rewards[3])  # weighted, NaN skipped, all-NaN -> NaN
    detail = store.sample(step=4, index=1)
    assert detail.fields["response"] == "a4-1"
    assert detail.fields["accuracy"] == 0.0 and detail.fields["format"] == 1.0
    assert detail.fields["advantage"] == -0.5 and detail.fields["tool_calls"] == 1
    assert {"accuracy", "format", "advantage", "tool_calls"} <= set(store.extra_fields)


def test_callback_survives_odd_data(tmp_path: Path) -> None:
    trainer = fake_grpo_trainer()
    trainer._logs["rewards"]["reward"].extend([1.0, 2.0])  # a function named like a known field
    trainer._logs["prompt"].extend(["p1", "p2"])
    trainer._logs["completion"].extend([[{"role": "assistant", "content": "hi"}], "plain"])
    trainer._logs["advantages"].extend([0.1])  # wrong length: left out
    trainer.reward_func_names = ["reward"]
    trainer.reward_weights = "not weights"
    callback = RLBoardCallback(tmp_path / "run").attach(trainer)
    with pytest.warns(RuntimeWarning, match="rl-board"):
        callback.on_log(None, state(1), None)
    rows = lines_of(tmp_path / "run" / "rollout_data_rank_0.jsonl")
    assert [r["reward_fn_reward"] for r in rows] == [1.0, 2.0] and [r["reward"] for r in rows] == [1.0, 2.0]
    assert rows[0]["response"] == "hi"  # a conversational row: its text, and the messages kept
    assert rows[0]["messages"] == [{"role": "user", "content": "p1"}, {"role": "assistant", "content": "hi"}]
    assert "messages" not in rows[1]
    assert "advantage" not in rows[0] and callback.problems == 1

    trainer._logs["prompt"].append("only a prompt")  # prompts and completions now disagree
    callback.on_log(None, state(2), None)
    assert callback.problems >= 2 and "prompts" in (callback.last_problem or "")
    bare = RLBoardCallback(tmp_path / "none")
    with pytest.warns(RuntimeWarning, match="attach"):
        bare.on_log(None, state(1), None)  # never attached: counted, not raised
    assert bare.problems == 1 and not (tmp_path / "none").exists()
