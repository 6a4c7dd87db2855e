"""Checks of the trainer-dump GENERATORS (tests/helpers/trainer_dumps.py).

Each dump is re-read here with plain json / pyarrow, independently of the
writer's bookkeeping, and compared with the Dump it returned.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers import trainer_dumps

Row = tuple[int, str, str, float, str | None]

WRITERS = sorted(trainer_dumps.ALL_WRITERS)


def lines_of(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n"), f"{path} must end with a newline"
    return [json.loads(line) for line in text.splitlines()]


def same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == pytest.approx(b)


def nanmean(values: list[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


# --------------------------------------------------------------------------- independent readers


def read_verl(run: Path, *, v1: bool = False, validation: bool = False) -> list[Row]:
    rows: list[Row] = []
    files = sorted(run.glob("*.jsonl"), key=lambda p: int(p.stem))
    for path in files:
        data = lines_of(path)
        if v1:
            expected = ["input", "output", "gts", "score", "step", "uid"]
            keys = [tuple(r["uid"].rsplit("_", 2)) for r in data]
            assert [(u, int(a), int(b)) for u, a, b in keys] == sorted(
                (u, int(a), int(b)) for u, a, b in keys
            )
        elif validation:
            expected = ["input", "output", "gts", "score", "step", "reward", "acc", "pred"]
        else:
            expected = ["input", "output", "gts", "score", "step", "acc", "pred", "request_id"]
        for r in data:
            assert list(r) == expected
            assert r["step"] == int(path.stem)
            if validation:
                assert r["reward"] == r["score"]
            if not v1:
                assert r["score"] in (1.0, -1.0) and r["acc"] == (r["score"] > 0)
            group = r["uid"].rsplit("_", 2)[0] if v1 else None
            rows.append((r["step"], r["input"], r["output"], r["score"], group))
    return rows


def read_rl_board_like(files: list[Path]) -> list[Row]:
    rows: list[Row] = []
    for path in sorted(files, key=lambda p: p.name):
        for r in lines_of(path):
            for key in ("step", "prompt", "response", "reward"):
                assert key in r
            n = len(r["response_tokens"])
            for key in ("logprobs", "ref_logprobs", "values", "token_rewards"):
                if r.get(key) is not None:
                    assert len(r[key]) == n, key
            assert "".join(r["response_tokens"]) == r["response"]
            rows.append((r["step"], r["prompt"], r["response"], r["reward"], None))
    return sorted(rows, key=lambda row: row[0])  # stable: per step, file order then line order


def read_trl(run: Path) -> tuple[list[Row], dict[str, dict[int, float]]]:
    rows: list[Row] = []
    comps: dict[str, dict[int, float]] = {"accuracy_reward": {}, "think_format_reward": {}}
    files = sorted((run / "completions").glob("completions_*.parquet"))
    assert files
    for path in files:
        table = pq.read_table(path)
        assert table.column_names == [
            "step",
            "prompt",
            "completion",
            "accuracy_reward",
            "think_format_reward",
            "answer_parsed",
            "gold_parsed",
            "solution",
            "advantage",
        ]
        cols = table.to_pydict()
        steps = set(cols["step"])
        assert len(steps) == 1
        step = steps.pop()
        assert path.name == f"completions_{step:05d}.parquet"
        for name in comps:
            comps[name][step] = nanmean(cols[name])
        for i, prompt in enumerate(cols["prompt"]):
            completion = cols["completion"][i]
            if isinstance(prompt, list):  # a conversational dataset: one-message lists
                prompt, completion = prompt[0]["content"], completion[0]["content"]
            assert isinstance(prompt, str) and isinstance(completion, str)
            parts = [cols[name][i] for name in ("accuracy_reward", "think_format_reward")]
            kept = [v for v in parts if not math.isnan(v)]
            reward = sum(kept) if kept else math.nan
            rows.append((step, prompt, completion, reward, None))
    return rows, comps


def read_roll(run: Path) -> list[Row]:
    rows: list[Row] = []
    files = sorted(run.glob("rollout_dump_data.step_*.jsonl"), key=lambda p: int(p.name.split("_")[-1][:-6]))
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert text.count("\n") == 1 and text.endswith("\n"), "one JSON object on one line"
        data = json.loads(text)
        assert isinstance(data, dict)
        assert list(data)[-1] == "global_step"
        lengths = {len(v) for v in data.values()}
        assert len(lengths) == 1
        step = int(re.search(r"step_(\d+)\.jsonl$", path.name).group(1))
        assert set(data["global_step"]) == {step}
        for i in range(len(data["global_step"])):
            json.loads(data["messages"][i])  # a JSON string
            json.loads(data["sampling_params"][i])
            rows.append((step, data["prompt"][i], data["responses"][i], data["scores"][i], data["id"][i]))
    return rows


NEMO_TRAIN_KEYS = [
    "content",
    "rewards",
    "input_lengths",
    "token_ids",
    "token_loss_mask",
    "sample_loss_mask",
    "advantages",
    "generation_logprobs",
    "prev_logprobs",
    "idx",
]


def read_nemo(run: Path, prefix: str) -> list[Row]:
    rows: list[Row] = []
    files = sorted(run.glob(f"{prefix}_data_step*.jsonl"), key=lambda p: int(p.stem.split("step")[-1]))
    for path in files:
        step = int(path.stem.split("step")[-1])
        for i, r in enumerate(lines_of(path)):
            assert "step" not in r
            assert r["idx"] == i
            assert len(r["content"]) == 1 and len(r["rewards"]) == 1
            if prefix == "train":
                assert list(r) == NEMO_TRAIN_KEYS
                user, assistant, observation = r["content"][0]  # the environment's answer follows the model's
                assert isinstance(user, str) and isinstance(assistant, str)
                assert observation.startswith("Environment: ")
                width = len(r["token_ids"][0])
                for key in (
                    "token_ids",
                    "token_loss_mask",
                    "advantages",
                    "generation_logprobs",
                    "prev_logprobs",
                ):
                    assert len(r[key]) == 1 and len(r[key][0]) == width, key
                assert r["input_lengths"][0] <= width
                assert sum(r["token_loss_mask"][0]) > 0
            else:
                assert list(r) == ["content", "rewards", "idx"]
                messages = r["content"][0]
                assert [m["role"] for m in messages] == ["user", "assistant"]
                user, assistant = messages[0]["content"], messages[1]["content"]
            rows.append((step, user, assistant, r["rewards"][0], None))
    return rows


def read_prime(run: Path) -> list[Row]:
    rows: list[Row] = []
    dirs = sorted((run / "rollouts").glob("step_*"), key=lambda p: int(p.name[5:]))
    for step_dir in dirs:
        step = int(step_dir.name[5:])
        for ep in lines_of(step_dir / "train" / "all" / "traces.jsonl"):
            assert list(ep) == ["id", "env", "task", "group", "run", "ok", "errors", "traces"]
            trace = ep["traces"][-1]
            reward = sum(r["score"] * r["weight"] for r in trace["rewards"].values() if r is not None)
            nodes = trace["nodes"]
            user = [n for n in nodes if n["message"]["role"] == "user"][-1]["message"]["content"]
            sampled = [n for n in nodes if n["sampled"]]
            response = sampled[-1]["message"]["content"] if sampled else ""
            for n in nodes:
                assert "advantages" not in n  # logged on arrival, before credit assignment
                assert len(n["mask"]) == len(n["token_ids"])
                assert len(n["logprobs"]) == sum(n["mask"])
            assert ep["run"]["work"]["step"] in (step, step - 1)
            rows.append((step, user, response, reward, ep["group"]["id"]))
        effective = lines_of(step_dir / "train" / "effective" / "traces.jsonl")
        for ep in effective:
            node = [n for n in ep["traces"][0]["nodes"] if n["sampled"]][-1]
            assert len(node["advantages"]) == len(node["logprobs"])
    return rows


def read_prime_exports(run: Path) -> tuple[list[int], int]:
    steps, count = [], 0
    for step_dir in sorted((run / "token_exports").glob("step_*"), key=lambda p: int(p.name[5:])):
        if not (step_dir / "STABLE").exists():
            continue
        step = int(step_dir.name[5:])
        steps.append(step)
        for path in sorted(step_dir.glob("rank_*.jsonl")):
            for r in lines_of(path):
                assert r["step"] == step and path.name == f"rank_{r['rank']}.jsonl"
                n = len(r["token_ids"])
                for key, value in r.items():
                    if isinstance(value, list):
                        assert len(value) == n, key
                assert any(r["loss_mask"])
                count += 1
    return steps, count


def read_areal(run: Path) -> list[Row]:
    rows: list[Row] = []
    for version_dir in sorted((run / "rollout").iterdir(), key=lambda p: int(p.name)):
        step = int(version_dir.name)
        for path in sorted(version_dir.glob("*.jsonl"), key=lambda p: int(p.stem)):
            raw = path.read_text(encoding="utf-8")
            assert raw.isascii()
            for r in lines_of(path):
                assert r["task_id"] == int(path.stem)
                assert r["tail_version"] == step and r["head_version"] <= step
                assert r["seqlen"] > r["prompt_len"] > 0
                rows.append((step, r["prompt"], r["completion"], r["reward"], str(r["task_id"])))
    return rows


def read_skyrl(run: Path) -> list[Row]:
    rows: list[Row] = []
    dirs = list((run / "dumped_evals").glob("global_step_*_evals"))
    dirs.sort(key=lambda p: int(re.match(r"global_step_(\d+)_evals", p.name).group(1)))
    for folder in dirs:
        step = int(re.match(r"global_step_(\d+)_evals", folder.name).group(1))
        agg = lines_of(folder / "aggregated_results.jsonl")
        assert len(agg) == 1 and "input_prompt" not in agg[0]
        for path in sorted(folder.glob("*.jsonl")):
            if path.name == "aggregated_results.jsonl":
                continue
            for r in lines_of(path):
                assert path.stem == r["data_source"].replace("/", "_")
                score = r["score"]
                reward = float(sum(score)) if isinstance(score, list) else score
                rows.append((step, r["input_prompt"], r["output_response"], reward, None))
    return rows


def reread(name: str, dump: trainer_dumps.Dump) -> list[Row]:
    run = dump.run_dir
    if name == "verl":
        return read_verl(run)
    if name == "verl_v1":
        return read_verl(run, v1=True)
    if name == "verl_validation":
        return read_verl(run, validation=True)
    if name == "rl_board":
        return read_rl_board_like(sorted(run.glob("rollout_data_rank_*.jsonl")))
    if name == "rllogging_board_fork":
        return read_rl_board_like([run / "rollout_data_rank0.jsonl"])
    if name == "openrlhf":
        return read_rl_board_like([run / "rl_logging_board_data.jsonl"])
    if name == "openrlhf_pr658":
        return read_rl_board_like(sorted(run.glob("data_rank*.jsonl")))
    if name in ("trl", "trl_conversational"):
        return read_trl(run)[0]
    if name == "roll":
        return read_roll(run)
    if name == "nemo_rl":
        return read_nemo(run, "train")
    if name == "nemo_rl_val":
        return read_nemo(run, "val")
    if name == "prime_rl":
        return read_prime(run)
    if name == "areal":
        return read_areal(run)
    if name == "skyrl_eval":
        return read_skyrl(run)
    raise AssertionError(f"no independent reader for {name}")


# --------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, trainer_dumps.Dump]]:
    root = tmp_path_factory.mktemp("dumps")
    return {name: (root / name, fn(root / name)) for name, fn in trainer_dumps.ALL_WRITERS.items()}


@pytest.mark.parametrize("name", WRITERS)
def test_files_exist_and_dump_is_consistent(name: str, dumps: dict) -> None:
    out, dump = dumps[name]
    assert dump.files
    for path in dump.files:
        assert path.is_file() and path.stat().st_size > 0
        assert path.is_relative_to(dump.run_dir)
    assert dump.run_dir.is_relative_to(out)
    assert dump.steps == sorted(set(dump.steps))
    if name == "prime_rl_token_exports":
        return
    assert (
        set(dump.prompts)
        == set(dump.responses)
        == set(dump.rewards)
        == set(dump.reward_means)
        == set(dump.steps)
    )
    assert dump.samples == sum(len(v) for v in dump.prompts.values())
    for step in dump.steps:
        n = len(dump.prompts[step])
        assert len(dump.responses[step]) == len(dump.rewards[step]) == n
        if dump.groups is not None:
            assert len(dump.groups[step]) == n
        assert same(dump.reward_means[step], nanmean(dump.rewards[step]))
    assert dump.notes


@pytest.mark.parametrize("name", [n for n in WRITERS if n != "prime_rl_token_exports"])
def test_independent_reread_agrees(name: str, dumps: dict) -> None:
    _, dump = dumps[name]
    rows = reread(name, dump)
    assert len(rows) == dump.samples
    steps = sorted({r[0] for r in rows})
    assert steps == dump.steps
    for step in steps:
        mine = [r for r in rows if r[0] == step]
        assert [r[1] for r in mine] == dump.prompts[step]
        assert [r[2] for r in mine] == dump.responses[step]
        assert all(same(a, b) for a, b in zip([r[3] for r in mine], dump.rewards[step], strict=True))
        assert same(nanmean([r[3] for r in mine]), dump.reward_means[step])
        if dump.groups is not None:
            assert [r[4] for r in mine] == dump.groups[step]


@pytest.mark.parametrize("name", ["trl", "trl_conversational"])
def test_trl_components_and_nan(name: str, dumps: dict) -> None:
    _, dump = dumps[name]
    rows, comps = read_trl(dump.run_dir)
    assert dump.components is not None
    assert set(dump.components) == set(trainer_dumps.TRL_REWARD_FUNCS)
    for func, by_step in comps.items():
        for step, mean in by_step.items():
            assert same(mean, dump.components[func][step])
    acc = [v for path in dump.files for v in pq.read_table(path).column("accuracy_reward").to_pylist()]
    assert any(math.isnan(v) for v in acc) and not all(math.isnan(v) for v in acc)
    kind = pq.read_schema(dump.files[0]).field("prompt").type
    assert pa.types.is_list(kind) == (name == "trl_conversational")  # messages for a conversational dataset


def test_verl_v1_groups_share_uid_prefix(dumps: dict) -> None:
    _, dump = dumps["verl_v1"]
    for step in dump.steps:
        groups = dump.groups[step]
        assert len(set(groups)) == 4 and all(groups.count(g) == 4 for g in set(groups))


def test_fork_and_openrlhf_quirks(dumps: dict) -> None:
    fork = lines_of(dumps["rllogging_board_fork"][1].files[0])
    assert any("ref_logprobs" not in r for r in fork) and any("ref_logprobs" in r for r in fork)
    assert list(fork[0])[:7] == [
        "step",
        "prompt",
        "response",
        "response_tokens",
        "logprobs",
        "token_rewards",
        "reward",
    ]
    helper = lines_of(dumps["openrlhf"][1].files[0])
    assert any(r["values"] is None for r in helper) and any(r["values"] is not None for r in helper)
    assert any(r["prompt"].startswith("<|endoftext|><|endoftext|>") for r in helper)
    assert list(helper[0]) == [
        "prompt",
        "response",
        "response_tokens",
        "logprobs",
        "ref_logprobs",
        "values",
        "token_rewards",
        "reward",
        "step",
    ]
    pr = [r for path in dumps["openrlhf_pr658"][1].files for r in lines_of(path)]
    assert [p.name for p in dumps["openrlhf_pr658"][1].files] == ["data_rank0.jsonl", "data_rank1.jsonl"]
    assert all(isinstance(r["values"], list) for r in pr)


def test_prime_rl_token_exports_skip_unstable_step(dumps: dict) -> None:
    out, dump = dumps["prime_rl_token_exports"]
    steps, count = read_prime_exports(dump.run_dir)
    assert steps == dump.steps == [1, 2]
    assert count == dump.samples > 0
    last = out / "token_exports" / "step_3"
    assert list(last.glob("rank_*.jsonl")) and not (last / "STABLE").exists()
    assert dump.reward_means == {} and dump.prompts == {}


def test_prime_rl_writers_agree_on_files(tmp_path: Path) -> None:
    a = trainer_dumps.write_prime_rl(tmp_path / "a")
    b = trainer_dumps.write_prime_rl_token_exports(tmp_path / "b")
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    assert a.run_dir.name == "a" and b.run_dir.name == "b"


def test_nemo_rl_train_and_val_share_run_dir(dumps: dict) -> None:
    _, train = dumps["nemo_rl"]
    _, val = dumps["nemo_rl_val"]
    assert train.run_dir.name == "exp_001"
    assert [p.name for p in train.files] == [f"train_data_step{s}.jsonl" for s in train.steps]
    assert [p.name for p in val.files] == [f"val_data_step{s}.jsonl" for s in val.steps]
    assert train.steps[0] == 1 and val.steps[0] == 0


def test_areal_file_names_cross_a_digit_boundary(dumps: dict) -> None:
    _, dump = dumps["areal"]
    names = [p.stem for p in dump.files]
    assert "9" in names and "10" in names
    assert sorted(names) != sorted(names, key=int)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", WRITERS)
def test_deterministic(name: str, tmp_path: Path) -> None:
    fn = trainer_dumps.ALL_WRITERS[name]
    first = fn(tmp_path / "one", seed=3)
    second = fn(tmp_path / "two", seed=3)
    assert snapshot(tmp_path / "one") == snapshot(tmp_path / "two")
    assert first.samples == second.samples and first.steps == second.steps
    fn(tmp_path / "three", seed=4)
    assert snapshot(tmp_path / "one") != snapshot(tmp_path / "three")


@pytest.mark.parametrize("name", WRITERS)
def test_sizes_follow_arguments_and_stay_small(name: str, tmp_path: Path) -> None:
    dump = trainer_dumps.ALL_WRITERS[name](tmp_path / "d", steps=2, prompts=3, group=2)
    if name == "prime_rl_token_exports":
        assert dump.steps in ([], [1])
    elif name == "nemo_rl_val":
        assert dump.samples == 3 * len(dump.steps)
    else:
        assert len(dump.steps) == 2
        assert dump.samples == 2 * 3 * 2
    total = sum(p.stat().st_size for p in (tmp_path / "d").rglob("*") if p.is_file())
    assert total < 200_000


def test_junk_files(tmp_path: Path) -> None:
    junk = trainer_dumps.write_junk(tmp_path)
    names = {p.name for p, _ in junk}
    assert names == {"README.md", "notes.txt", "model.pkl", "config.json", "weird.jsonl"}
    for path, reason in junk:
        assert path.is_file() and reason
    config = json.loads((tmp_path / "config.json").read_text())
    assert isinstance(config, dict) and not {"step", "prompt", "response"} & set(config)
    weird = lines_of(tmp_path / "weird.jsonl")
    assert weird and all(set(r) == {"foo", "bar"} for r in weird)
    again = tmp_path / "again"
    trainer_dumps.write_junk(again)
    assert (again / "model.pkl").read_bytes() == (tmp_path / "model.pkl").read_bytes()
