"""Synthetic rollout dumps in the on-disk layouts of popular RL trainers.

Every file is generated here from code with made-up text (no file of any
trainer is copied). Each ``write_*`` function returns a :class:`Dump` that says
what a correct reader must find, computed from the values as they were written.

Layouts were checked against the trainers' own source (late-2026 snapshots).
Where that source disagrees with ``shared/reference/trainer-formats.md`` the
source wins; the differences are listed here:

- verl (verl-project/verl ``verl/trainer/ppo/ray_trainer.py`` ``_write_generations``):
  keys ``input, output, gts, score, step`` then every extra list of batch length.
  With math_dapo extras (``score, acc, pred``) the extra ``score`` REPLACES the
  base one in place and is +1.0 / -1.0 (not 0/1). ``request_id`` comes after the
  extras. Text is decoded with ``skip_special_tokens=True`` (role names stay as
  plain words: ``"system\\n...\\nuser\\n...\\nassistant\\n"``). Written from a
  background thread with mode "w", ``ensure_ascii=False``.
- verl v1 (``verl/trainer/ppo/v1/trainer_base.py`` ``_log_rollout_data``): extra key
  ``uid`` = ``"{uuid4}_{session}_{index}"``, rows sorted by (uuid string, int,
  int); no request_id / acc / pred.
- verl validation: extras dict starts with ``reward`` (a defaultdict filled
  before the reward-function extras), so keys are
  ``input, output, gts, score, step, reward, acc, pred``.
- verl-fork RLLoggingBoardLogger (DeepEyes-style ``verl/utils/rl_logging_board_utils.py``):
  key order ``step, prompt, response, response_tokens, logprobs, token_rewards,
  reward`` then optional ``ref_logprobs, ground_truth, values``; prompt and
  response decoded WITH special tokens (no padding). One older copy of that
  logger has ``ref_logprobs`` commented out entirely.
- OpenRLHF: PR #658 (refs/pull/658/head, ``experience_maker.py``
  ``save_rollout_data_for_rl_logging_board``) writes ``{DIR}/data_rank{rank}.jsonl``
  (one file per torch rank), NOT ``rl_logging_board_data.jsonl``; keys
  ``prompt, response, response_tokens, logprobs, ref_logprobs, values,
  token_rewards, reward, step``; ``values`` is always a list there (the code
  zips over it, so it needs a critic). A later adaptation of that helper (seen in
  the code index, repository not named) writes ``rl_logging_board_data.jsonl``
  with ``values: null`` when there is no critic. ``variant="helper"`` (default)
  writes the latter, ``variant="pr658"`` the former. Both keep left padding in
  ``prompt`` and right padding in ``response``.
- TRL (huggingface/trl ``trl/trainer/grpo_trainer.py`` ``log``, 1.16): ``prompt`` and
  ``completion`` are strings for a plain dataset, and LISTS OF MESSAGES
  (``{"role", "content"}``) for a conversational one (the table stores the
  messages as TRL holds them; the real trainer in tests/real/ confirms it).
  Columns: ``step, prompt, completion``, one float
  column per reward function, the ``log_extra`` columns (sorted by name;
  ``accuracy_reward`` logs ``answer_parsed, gold_parsed, solution``), then
  ``advantage``. The built-in format reward is named ``think_format_reward``.
  An eval pass at the same global step rewrites the same file name.
- ROLL (alibaba/ROLL ``roll/pipeline/rlvr/utils.py`` ``write_to_json_process``):
  ONE line (``json.dumps(data, ensure_ascii=False) + "\\n"``, mode "w"), columns
  in non_tensor_batch order, then ``responses, scores, sampling_params,
  global_step`` (global_step is LAST). ``messages`` is a JSON string,
  ``difficulty`` a string, ``sampling_params`` a JSON string per row.
  Steps start at 0.
- NeMo-RL (NVIDIA-NeMo/RL ``nemo_rl/utils/logger.py`` ``log_batched_dict_as_jsonl``,
  ``nemo_rl/algorithms/grpo.py``): no step key in the line (only in the file
  name), ``idx`` is the line index. Train ``content`` is ``[[str, ...]]`` (one
  list of message strings; the user string is the whole chat-templated prompt
  WITH special tokens, the assistant string is decoded without them, then the
  environment's observation: ``experience/rollouts.py`` appends one after every
  generation, the last included; the math environment's is ``Environment:
  correct`` / ``incorrect``, tokenized and masked out of the loss).
  Validation ``content`` is ``[[{"role": ..., "content": ...}, ...]]`` (message
  DICTS), with only ``content, rewards, idx``. Token arrays are right-padded to
  the batch's longest sequence; ``advantages`` is the per-sample advantage
  expanded over every position (prompt and padding too).
- prime-rl (PrimeIntellect-ai/prime-rl ``src/prime_rl/monitors/file.py``;
  records from PrimeIntellect-ai/verifiers ``verifiers/v1/episode.py``
  ``Episode.to_record``): one nested Episode per line (``id, env, task, group,
  run, ok, errors, traces``); text lives in ``traces[0].nodes[*].message``;
  reward = sum of ``score * weight`` over ``traces[0].rewards``. ``all`` gets
  every episode in completion order, logged on arrival (before advantages are
  assigned, so no ``advantages`` in its nodes); ``effective`` gets the trained-on
  subset with advantages. Steps start at 1. Token exports
  (``src/prime_rl/trainer/rl/token_export.py``): compact JSON, non-finite
  floats written as null, optional streams written as lists of null, no reward
  and no text.
- AReaL (inclusionAI/AReaL ``areal/infra/workflow_executor.py``
  ``_dump_trajectory``): directory is the TAIL version, one file per task
  (appended), text decoded WITH special tokens, ``json.dumps`` default
  (``ensure_ascii=True``). Run dir is ``{fileroot}/logs/{user}/{experiment}/{trial}``.
- SkyRL (NovaSky-AI/SkyRL ``skyrl/train/utils/trainer_utils.py``
  ``dump_per_dataset_eval_results``): lines also carry ``env_extras`` (a dict);
  the file name replaces "/" in the data source by "_"; the same folder holds
  ``aggregated_results.jsonl`` (one metrics line, not samples); ``score`` may be
  a per-token list for token-level rewards; text keeps special tokens.

Simplifications: real dumps hold float32 values with long reprs (floats are
rounded here); prime-rl's ``agent.config`` / ``timing`` blocks are trimmed
stand-ins; token ids come from a made-up word-level tokenizer. prime-rl is the
largest dump (~400 KB at the defaults): every episode carries its token ids,
masks and logprobs, and the ``effective`` file and token exports repeat them.
"""

from __future__ import annotations

import functools
import json
import math
import random
import re
import struct
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass
class Dump:
    """What a writer put on disk and what a correct reader must find there."""

    format: str
    run_dir: Path
    files: list[Path]
    samples: int
    steps: list[int]
    reward_means: dict[int, float]
    prompts: dict[int, list[str]]
    responses: dict[int, list[str]]
    rewards: dict[int, list[float]]
    groups: dict[int, list[str]] | None = None
    components: dict[str, dict[int, float]] | None = None
    notes: str = ""

    def run_folder(self, root: Path) -> Path:
        """The run the catalogue of ``root`` makes of these files (the deepest rollout folder holding
        them)."""
        from rl_board.sources.catalogue import catalogue

        first = self.files[0].resolve()
        holding = [f.path for f in catalogue(root).rollout_folders() if first.is_relative_to(f.path)]
        return max(holding, key=lambda path: len(path.parts))


# --------------------------------------------------------------------------- text

SYSTEM = "You are a careful math tutor. Reason step by step and put the final answer in \\boxed{}."
IM_START, IM_END, EOT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
SPECIAL_IDS = {IM_START: 151644, IM_END: 151645, EOT: 151643}

_NAMES = ["Mia", "Omar", "Lena", "Ravi", "Zoe", "Tomás", "Ada", "Kenji"]
_ITEMS = ["pencils", "marbles", "stickers", "apples", "shells", "cards"]

_MUSINGS = [
    "Let me restate what is being asked.",
    "Breaking the problem into two smaller parts helps.",
    "Wait, let me re-read the question to be sure.",
    "Checking the units: everything is counted in whole items.",
    "A quick sanity check: the result should be positive.",
    "Hmm, I should not forget the last part of the question.",
]


@dataclass
class _Sample:
    step: int
    pid: int
    question: str
    answer: str
    response: str
    pred: str
    correct: bool
    reward: float
    think: bool


def _problem(rng: random.Random) -> tuple[str, str, list[str]]:
    """A made-up word problem, its answer and two worked lines."""
    kind = rng.randrange(4)
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    a, b, c = rng.randint(2, 9), rng.randint(3, 12), rng.randint(2, 6)
    if kind == 0:
        q = f"{name} has {c} boxes with {a} bags of {b} {item} each. How many {item} are there?"
        ans = a * b * c
        work = [f"One box holds {a} × {b} = {a * b} {item}.", f"So {c} boxes hold {a * b} × {c} = {ans}."]
    elif kind == 1:
        q = f"{name} collects {a} {item} a day for {b} days and then finds {c} more. How many in total?"
        ans = a * b + c
        work = [f"In {b} days that is {a} × {b} = {a * b}.", f"Adding {c} gives {ans}."]
    elif kind == 2:
        x = rng.randint(2, 15)
        q = f"Solve for x: {a}x + {b} = {a * x + b}."
        ans = x
        work = [f"Subtract {b}: {a}x = {a * x}.", f"Divide by {a}: x = {x}."]
    else:
        n = a * b + c
        q = f"{name} shares {n} {item} equally among {b} friends. How many are left over?"
        ans = n % b
        work = [f"{b} × {n // b} = {b * (n // b)}.", f"{n} - {b * (n // b)} = {ans} left over."]
    return q, str(ans), work


def _response(rng: random.Random, work: list[str], pred: str, think: bool) -> str:
    lines: list[str] = []
    if think:
        lines.append("<think>")
        lines.append(rng.choice(_MUSINGS))
        lines.extend(work)
        lines.append("</think>")
    else:
        lines.append(work[-1])
    lines.append(f"The answer is \\boxed{{{pred}}}.")
    return "\n".join(lines)


def _step_samples(rng: random.Random, step: int, prompts: int, group: int, pid0: int) -> list[_Sample]:
    """``prompts`` problems x ``group`` responses; rewards mostly 0/1, some partial credit."""
    out: list[_Sample] = []
    for p in range(prompts):
        question, answer, work = _problem(rng)
        skill = rng.choice([0.2, 0.5, 0.8, 1.0])
        for _ in range(group):
            correct = rng.random() < skill
            pred = answer if correct else str(int(answer) + rng.choice([-3, -1, 1, 2, 10]))
            think = rng.random() < 0.5
            reward = 1.0 if correct else 0.0
            if rng.random() < 0.12:
                reward = rng.choice([0.25, 0.5, 0.75])
            response = _response(rng, work, pred, think)
            out.append(_Sample(step, pid0 + p, question, answer, response, pred, correct, reward, think))
    return out


def _tokens(text: str) -> list[str]:
    """A made-up word-level tokenizer: special tokens, newlines, optional spaces + word."""
    return re.findall(r"<\|[a-z_]+\|>|\n|[^\S\n]*[^\s<]+|[^\S\n]*<", text)


def _token_id(tok: str) -> int:
    return SPECIAL_IDS.get(tok, zlib.crc32(tok.encode()) % 150000 + 1000)


def _ids(text: str) -> list[int]:
    return [_token_id(t) for t in _tokens(text)]


def _r(x: float, n: int = 4) -> float:
    return round(x, n)


def _f32(x: float) -> float:
    """The double a float32 tensor's ``tolist()`` gives."""
    return struct.unpack("f", struct.pack("f", x))[0]


def _logprobs(rng: random.Random, n: int) -> list[float]:
    return [_r(-abs(rng.gauss(0.0, 0.4)) - (rng.random() < 0.08) * rng.uniform(1, 4)) for _ in range(n)]


def _near(rng: random.Random, values: list[float], scale: float = 0.05) -> list[float]:
    return [_r(min(0.0, v + rng.gauss(0.0, scale))) for v in values]


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _hex(rng: random.Random) -> str:
    return uuid.UUID(int=rng.getrandbits(128), version=4).hex


def _chat(question: str, *, special: bool, system: bool = True) -> str:
    """Qwen-style chat prompt, either with special tokens or decoded with them skipped."""
    if special:
        sys_part = f"{IM_START}system\n{SYSTEM}{IM_END}\n" if system else ""
        return f"{sys_part}{IM_START}user\n{question}{IM_END}\n{IM_START}assistant\n"
    sys_part = f"system\n{SYSTEM}\n" if system else ""
    return f"{sys_part}user\n{question}\nassistant\n"


def _nanmean(values: list[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


def _write_jsonl(path: Path, rows: list[dict], *, ensure_ascii: bool = False, compact: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    seps = (",", ":") if compact else None
    with path.open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=ensure_ascii, separators=seps) + "\n")


def _dump(
    fmt: str,
    run_dir: Path,
    files: list[Path],
    rows: list[tuple[int, str, str, float, str | None]],
    *,
    with_groups: bool = False,
    components: dict[str, dict[int, float]] | None = None,
    notes: str = "",
) -> Dump:
    """Build a Dump from (step, prompt, response, reward, group) rows in reading order."""
    prompts: dict[int, list[str]] = {}
    responses: dict[int, list[str]] = {}
    rewards: dict[int, list[float]] = {}
    groups: dict[int, list[str]] = {}
    for step, prompt, response, reward, grp in rows:
        prompts.setdefault(step, []).append(prompt)
        responses.setdefault(step, []).append(response)
        rewards.setdefault(step, []).append(reward)
        groups.setdefault(step, []).append(str(grp))
    steps = sorted(prompts)
    return Dump(
        format=fmt,
        run_dir=run_dir,
        files=files,
        samples=len(rows),
        steps=steps,
        reward_means={s: _nanmean(rewards[s]) for s in steps},
        prompts={s: prompts[s] for s in steps},
        responses={s: responses[s] for s in steps},
        rewards={s: rewards[s] for s in steps},
        groups={s: groups[s] for s in steps} if with_groups else None,
        components=components,
        notes=notes,
    )


# --------------------------------------------------------------------------- verl


def write_verl(
    out: Path, *, steps: int = 3, prompts: int = 4, group: int = 4, seed: int = 0, v1: bool = False
) -> Dump:
    """``trainer.rollout_data_dir``: ``{out}/{global_step}.jsonl``, one file per step (steps 1..N)."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    rows: list[tuple[int, str, str, float, str | None]] = []
    for step in range(1, steps + 1):
        samples = _step_samples(rng, step, prompts, group, (step - 1) * prompts)
        lines: list[dict] = []
        if v1:
            uids = [_uuid(rng) for _ in range(prompts)]
            keyed = []
            for i, s in enumerate(samples):
                p, session = divmod(i, group)
                keyed.append(((uids[p], session, 0), s))
            keyed.sort(key=lambda t: t[0])
            for (uid, session, index), s in keyed:
                lines.append(
                    {
                        "input": _chat(s.question, special=False),
                        "output": s.response,
                        "gts": s.answer,
                        "score": s.reward,
                        "step": step,
                        "uid": f"{uid}_{session}_{index}",
                    }
                )
                rows.append((step, lines[-1]["input"], s.response, s.reward, uid))
        else:
            for s in samples:
                score = 1.0 if s.correct else -1.0  # math_dapo: +1 / -1
                lines.append(
                    {
                        "input": _chat(s.question, special=False),
                        "output": s.response,
                        "gts": s.answer,
                        "score": score,
                        "step": step,
                        "acc": s.correct,
                        "pred": s.pred,
                        "request_id": _hex(rng),
                    }
                )
                rows.append((step, lines[-1]["input"], s.response, score, None))
        path = out / f"{step}.jsonl"
        _write_jsonl(path, lines)
        files.append(path)
    if v1:
        notes = (
            "verl v1 trainer: rows sorted by uid '{uuid}_{session}_{index}'; group = the uuid part. "
            "Main reward = score."
        )
    else:
        notes = (
            "verl ray_trainer with math_dapo extras: score is +1/-1 (the extra 'score' replaces the base "
            "one), acc is the boolean accuracy. Main reward = score. Prompt = 'input' (role words as plain "
            "text)."
        )
    return _dump("verl", out, files, rows, with_groups=v1, notes=notes)


def write_verl_validation(
    out: Path, *, steps: int = 3, prompts: int = 4, group: int = 4, seed: int = 0, test_freq: int = 5
) -> Dump:
    """``trainer.validation_data_dir``: the same val set at steps 0, test_freq, 2*test_freq, ..."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    problems = [_problem(rng) for _ in range(prompts)]
    files: list[Path] = []
    rows: list[tuple[int, str, str, float, str | None]] = []
    for k in range(steps):
        step = k * test_freq
        skill = min(1.0, 0.3 + 0.25 * k)
        lines = []
        for question, answer, work in problems:
            for _ in range(group):  # val_kwargs.n, interleaved repeat
                correct = rng.random() < skill
                pred = answer if correct else str(int(answer) + rng.choice([-2, 1, 5]))
                response = _response(rng, work, pred, rng.random() < 0.5)
                score = 1.0 if correct else -1.0
                prompt = _chat(question, special=False)
                lines.append(
                    {
                        "input": prompt,
                        "output": response,
                        "gts": answer,
                        "score": score,
                        "step": step,
                        "reward": score,
                        "acc": correct,
                        "pred": pred,
                    }
                )
                rows.append((step, prompt, response, score, None))
        path = out / f"{step}.jsonl"
        _write_jsonl(path, lines)
        files.append(path)
    notes = "verl validation dump: steps 0, test_freq, ...; same prompts each time; main reward = score."
    return _dump("verl", out, files, rows, notes=notes)


# --------------------------------------------------------------------------- rl-board and its forks


def write_rl_board(out: Path, *, steps: int = 3, prompts: int = 4, group: int = 4, seed: int = 0) -> Dump:
    """rl-board's own format: ``{out}/rollout_data_rank_{r}.jsonl`` for 2 ranks, steps 0, 10, 20..."""
    rng = random.Random(seed)
    ranks = 2
    per_rank: list[list[dict]] = [[] for _ in range(ranks)]
    by_rank_rows: list[list[tuple[int, str, str, float, str | None]]] = [[] for _ in range(ranks)]
    for k in range(steps):
        step = k * 10
        samples = _step_samples(rng, step, prompts, group, k * prompts)
        for i, s in enumerate(samples):
            rank = min(ranks - 1, (i // group) * ranks // max(prompts, 1))
            toks = _tokens(s.response)
            lp = _logprobs(rng, len(toks))
            line = {
                "step": step,
                "prompt": s.question,
                "response": s.response,
                "reward": s.reward,
                "response_tokens": toks,
                "logprobs": lp,
                "ref_logprobs": _near(rng, lp),
                "ground_truth": s.answer,
            }
            per_rank[rank].append(line)
            by_rank_rows[rank].append((step, s.question, s.response, s.reward, None))
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for r in range(ranks):
        path = out / f"rollout_data_rank_{r}.jsonl"
        _write_jsonl(path, per_rank[r])
        files.append(path)
    # reading order: files sorted by name, then lines; per step that is rank 0's samples then rank 1's
    rows = sorted(
        [row for r in range(ranks) for row in by_rank_rows[r]],
        key=lambda row: row[0],
    )
    notes = "Per-step order = rank 0's lines then rank 1's (stable sort of files by name, then lines)."
    return _dump("rl-board", out, files, rows, notes=notes)


def write_rllogging_board_fork(
    out: Path,
    *,
    steps: int = 3,
    prompts: int = 4,
    group: int = 4,
    seed: int = 0,
    project: str = "math_grpo",
    experiment: str = "qwen_demo",
) -> Dump:
    """verl-fork RLLoggingBoardLogger: ``{out}/{project}/{experiment}/rollout_data_rank0.jsonl``."""
    rng = random.Random(seed)
    run_dir = out / project / experiment
    lines: list[dict] = []
    rows: list[tuple[int, str, str, float, str | None]] = []
    for step in range(1, steps + 1):
        for s in _step_samples(rng, step, prompts, group, (step - 1) * prompts):
            prompt = _chat(s.question, special=True)
            response = s.response + IM_END
            toks = _tokens(response)
            lp = _logprobs(rng, len(toks))
            token_rewards = [0.0] * (len(toks) - 1) + [s.reward]
            line: dict[str, Any] = {
                "step": step,
                "prompt": prompt,
                "response": response,
                "response_tokens": toks,
                "logprobs": lp,
                "token_rewards": token_rewards,
                "reward": s.reward,
            }
            # the first step was written by a logger copy without ref_logprobs (resumed run)
            if step > 1:
                line["ref_logprobs"] = _near(rng, lp)
            line["ground_truth"] = s.answer
            lines.append(line)
            rows.append((step, prompt, response, s.reward, None))
    path = run_dir / "rollout_data_rank0.jsonl"
    _write_jsonl(path, lines)
    notes = (
        "verl-fork RLLoggingBoardLogger: steps 1..N, special tokens kept in prompt/response; "
        "ref_logprobs missing on every line of step 1."
    )
    return _dump("rl-board", run_dir, [path], rows, notes=notes)


def write_openrlhf(
    out: Path,
    *,
    steps: int = 3,
    prompts: int = 4,
    group: int = 4,
    seed: int = 0,
    variant: str = "helper",
    kl_coef: float = 0.01,
) -> Dump:
    """OpenRLHF rl-logging-board branch.

    ``variant="helper"``: ``{out}/rl_logging_board_data.jsonl``; ``values`` null when the run had no
    critic (here: steps in the first half, before a relaunch with a critic appended to the same file).
    ``variant="pr658"``: ``{out}/data_rank{r}.jsonl`` for ranks 0 and 1, ``values`` always a list.
    """
    if variant not in ("helper", "pr658"):
        raise ValueError(f"unknown variant {variant!r}")
    rng = random.Random(seed)
    ranks = 2 if variant == "pr658" else 1
    per_rank: list[list[dict]] = [[] for _ in range(ranks)]
    per_rank_rows: list[list[tuple[int, str, str, float, str | None]]] = [[] for _ in range(ranks)]
    for step in range(1, steps + 1):
        samples = _step_samples(rng, step, prompts, group, (step - 1) * prompts)
        has_critic = variant == "pr658" or step > steps // 2
        micro_size = 2 * group  # micro_rollout_batch_size: two prompts' samples, padded together
        for m in range(0, len(samples), micro_size):
            micro = samples[m : m + micro_size]
            rank = (m // micro_size) % ranks
            prompt_toks = [_tokens(_chat(s.question, special=True)) for s in micro]
            resp_toks = [_tokens(s.response) + [IM_END] for s in micro]
            max_p = max(len(t) for t in prompt_toks)
            max_r = max(len(t) for t in resp_toks)
            for s, ptoks, rtoks in zip(micro, prompt_toks, resp_toks, strict=True):
                n_real = len(rtoks)
                ptoks = [EOT] * (max_p - len(ptoks)) + ptoks  # left padding
                rtoks = rtoks + [EOT] * (max_r - len(rtoks))  # right padding
                lp = _logprobs(rng, len(rtoks))
                ref = _near(rng, lp)
                token_rewards = [
                    _r(-kl_coef * (a - b)) if i < n_real else 0.0
                    for i, (a, b) in enumerate(zip(lp, ref, strict=True))
                ]
                token_rewards[n_real - 1] = _r(token_rewards[n_real - 1] + s.reward)
                values = [_r(rng.uniform(-0.5, 1.0)) for _ in rtoks] if has_critic else None
                prompt, response = "".join(ptoks), "".join(rtoks)
                per_rank[rank].append(
                    {
                        "prompt": prompt,
                        "response": response,
                        "response_tokens": rtoks,
                        "logprobs": lp,
                        "ref_logprobs": ref,
                        "values": values,
                        "token_rewards": token_rewards,
                        "reward": s.reward,
                        "step": step,
                    }
                )
                per_rank_rows[rank].append((step, prompt, response, s.reward, None))
    out.mkdir(parents=True, exist_ok=True)
    files = []
    if variant == "pr658":
        for r in range(ranks):
            path = out / f"data_rank{r}.jsonl"
            _write_jsonl(path, per_rank[r])
            files.append(path)
    else:
        path = out / "rl_logging_board_data.jsonl"
        _write_jsonl(path, per_rank[0])
        files.append(path)
    rows = sorted([row for r in range(ranks) for row in per_rank_rows[r]], key=lambda row: row[0])
    notes = (
        f"OpenRLHF ({variant}): prompt keeps left padding ('{EOT}' repeats) and chat special tokens; "
        f"response ends with '{IM_END}' plus right padding; Dump texts are exactly as written. "
        "response_tokens, logprobs, ref_logprobs, values, token_rewards all have the padded length."
    )
    if variant == "helper":
        notes += f" values is null on every line of steps 1..{steps // 2}."
    return _dump("openrlhf", out, files, rows, notes=notes)


# --------------------------------------------------------------------------- TRL

TRL_REWARD_FUNCS = ("accuracy_reward", "think_format_reward")


def write_trl(
    out: Path,
    *,
    steps: int = 3,
    prompts: int = 4,
    group: int = 4,
    seed: int = 0,
    conversational: bool = False,
    logging_steps: int = 10,
) -> Dump:
    """GRPOTrainer ``log_completions``: ``{out}/completions/completions_{step:05d}.parquet``."""
    rng = random.Random(seed)
    folder = out / "completions"
    folder.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    rows: list[tuple[int, str, str, float, str | None]] = []
    comp: dict[str, dict[int, float]] = {name: {} for name in TRL_REWARD_FUNCS}
    for k in range(steps):
        step = (k + 1) * logging_steps
        samples = _step_samples(rng, step, prompts, group, k * prompts)
        # accuracy_reward returns None (NaN) for every completion of a prompt whose gold is unparseable
        unparseable = {p for p in range(prompts) if rng.random() < 0.2}
        if k == 1:
            unparseable.add(0)
        acc, fmt, per_row, extra = [], [], [], {"answer_parsed": [], "gold_parsed": [], "solution": []}
        for i, s in enumerate(samples):
            p = i // group
            a = math.nan if p in unparseable else (1.0 if s.correct else 0.0)
            f = 1.0 if s.response.startswith("<think>") else 0.0
            acc.append(a)
            fmt.append(f)
            vals = [v for v in (a, f) if not math.isnan(v)]
            per_row.append(sum(vals) if vals else math.nan)  # nansum; all-NaN rows become NaN
            extra["solution"].append(f"${s.answer}$")
            if p in unparseable:
                extra["gold_parsed"].append("[unparseable]")
                extra["answer_parsed"].append("[skipped]")
            else:
                extra["gold_parsed"].append(f"[{s.answer}, '{s.answer}']")
                extra["answer_parsed"].append(f"[{s.pred}, '{s.pred}']")
        advantages = []
        for p in range(prompts):
            grp = per_row[p * group : (p + 1) * group]
            kept = [v for v in grp if not math.isnan(v)]
            mean = sum(kept) / len(kept) if kept else math.nan
            if len(kept) > 1:
                std = math.sqrt(sum((v - mean) ** 2 for v in kept) / (len(kept) - 1))
            else:
                std = math.nan
            for v in grp:
                adv = (v - mean) / (std + 1e-4)
                advantages.append(0.0 if math.isnan(adv) else _f32(adv))
        prompt_texts = [s.question for s in samples]  # a one-message conversation reads as its content
        columns: dict[str, list] = {
            "step": [step] * len(samples),
            "prompt": [[{"role": "user", "content": q}] for q in prompt_texts]
            if conversational
            else prompt_texts,
            "completion": [[{"role": "assistant", "content": s.response}] for s in samples]
            if conversational
            else [s.response for s in samples],
            "accuracy_reward": acc,
            "think_format_reward": fmt,
            **{name: extra[name] for name in sorted(extra)},
            "advantage": advantages,
        }
        chat = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
        schema = pa.schema(
            [
                ("step", pa.int64()),
                ("prompt", chat if conversational else pa.string()),
                ("completion", chat if conversational else pa.string()),
                ("accuracy_reward", pa.float64()),
                ("think_format_reward", pa.float64()),
                *[(name, pa.string()) for name in sorted(extra)],
                ("advantage", pa.float64()),
            ]
        )
        path = folder / f"completions_{step:05d}.parquet"
        pq.write_table(pa.table(columns, schema=schema), path)
        files.append(path)
        for s, prompt, reward in zip(samples, prompt_texts, per_row, strict=True):
            rows.append((step, prompt, s.response, reward, None))
        comp["accuracy_reward"][step] = _nanmean(acc)
        comp["think_format_reward"][step] = _nanmean(fmt)
    notes = (
        "TRL: 'the reward' is TRL's logged metric 'reward' = per row nansum of the reward columns "
        "(weights 1), rows where every function is NaN excluded, then the mean; components = per-function "
        "nanmean. With conversational=True prompt and completion are one-message lists, read as their "
        "content. Steps are global steps at logging (10, 20, ...). "
        "No group column: each run of `group` consecutive rows shares one prompt."
    )
    return _dump("trl", out, files, rows, components=comp, notes=notes)


# --------------------------------------------------------------------------- ROLL


def write_roll(out: Path, *, steps: int = 3, prompts: int = 4, group: int = 4, seed: int = 0) -> Dump:
    """RLVR ``rollout_dump_dir``: ``{out}/rollout_dump_data.step_{N}.jsonl``, one JSON object of columns."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    rows: list[tuple[int, str, str, float, str | None]] = []
    for step in range(steps):
        samples = _step_samples(rng, step, prompts, group, step * prompts)
        difficulty = {s.pid: f"{rng.choice([2.5, 3.0, 4.5, 6.0])}" for s in samples}
        meta = json.dumps(
            {
                "global_step": step,
                "generation_config": {"temperature": 0.99, "top_p": 0.99, "max_new_tokens": 4096},
                "num_return_sequences": group,
            }
        )
        n = len(samples)
        data = {
            "id": [str(s.pid + 1) for s in samples],
            "source": ["synthetic_math"] * n,
            "difficulty": [difficulty[s.pid] for s in samples],
            "prompt": [s.question for s in samples],
            "messages": [
                json.dumps([{"role": "system", "content": SYSTEM}, {"role": "user", "content": s.question}])
                for s in samples
            ],
            "ground_truth": [s.answer for s in samples],
            "case_type": [""] * n,
            "test_case_function": [""] * n,
            "test_cases": [""] * n,
            "tag": ["synthetic_math"] * n,
            "domain": ["math_rule"] * n,
            "responses": [s.response for s in samples],
            "scores": [s.reward for s in samples],
            "sampling_params": [meta] * n,
            "global_step": [step] * n,
        }
        path = out / f"rollout_dump_data.step_{step}.jsonl"
        path.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")
        files.append(path)
        for s in samples:
            rows.append((step, s.question, s.response, s.reward, str(s.pid + 1)))
    notes = (
        "ROLL: each file is ONE line holding one JSON object of equal-length column lists; "
        "global_step is the last column; steps start at 0; group key = 'id'; main reward = scores."
    )
    return _dump("roll", out, files, rows, with_groups=True, notes=notes)


# --------------------------------------------------------------------------- NeMo-RL


def _nemo(out: Path, steps: int, prompts: int, group: int, seed: int, val_period: int) -> tuple[Dump, Dump]:
    rng = random.Random(seed)
    run_dir = out / "exp_001"
    run_dir.mkdir(parents=True, exist_ok=True)
    train_files: list[Path] = []
    train_rows: list[tuple[int, str, str, float, str | None]] = []
    for step in range(1, steps + 1):
        samples = _step_samples(rng, step, prompts, group, (step - 1) * prompts)
        seqs = []
        for s in samples:
            user = _chat(s.question, special=True, system=False)
            p_ids, r_ids = _ids(user), _ids(s.response) + [SPECIAL_IDS[IM_END]]
            observation = "Environment: correct" if s.correct else "Environment: incorrect"
            seqs.append((s, user, p_ids, r_ids, observation, _ids(observation)))
        longest = max(len(p) + len(r) + len(o) for _, _, p, r, _, o in seqs)
        padded_len = -(-longest // 8) * 8  # make_sequence_length_divisible_by=8
        lines = []
        for i, (s, user, p_ids, r_ids, observation, o_ids) in enumerate(seqs):
            grp = [x.reward for x in samples[(i // group) * group : (i // group + 1) * group]]
            mean = sum(grp) / len(grp)
            std = math.sqrt(sum((v - mean) ** 2 for v in grp) / max(len(grp) - 1, 1))
            adv = _r((s.reward - mean) / (std + 1e-6) if std > 0 else 0.0)
            n_p, n_r, n_o = len(p_ids), len(r_ids), len(o_ids)
            pad = padded_len - n_p - n_r - n_o
            gen_lp = _logprobs(rng, n_r)
            prev = [0.0] + _logprobs(rng, n_p - 1) + _near(rng, gen_lp, 0.02)
            lines.append(
                {
                    "content": [[user, s.response, observation]],
                    "rewards": [s.reward],
                    "input_lengths": [n_p + n_r + n_o],
                    "token_ids": [p_ids + r_ids + o_ids + [SPECIAL_IDS[EOT]] * pad],
                    "token_loss_mask": [[0] * n_p + [1] * n_r + [0] * (n_o + pad)],
                    "sample_loss_mask": [1.0],
                    "advantages": [[adv] * padded_len],
                    "generation_logprobs": [[0.0] * n_p + gen_lp + [0.0] * (n_o + pad)],
                    "prev_logprobs": [prev + [0.0] * (n_o + pad)],
                    "idx": i,
                }
            )
            train_rows.append((step, user, s.response, s.reward, None))
        path = run_dir / f"train_data_step{step}.jsonl"
        _write_jsonl(path, lines, ensure_ascii=True)
        train_files.append(path)

    val_files: list[Path] = []
    val_rows: list[tuple[int, str, str, float, str | None]] = []
    problems = [_problem(rng) for _ in range(prompts)]
    for step in [0, *range(val_period, steps + 1, val_period)]:
        lines = []
        for i, (question, answer, work) in enumerate(problems):
            correct = rng.random() < 0.6
            pred = answer if correct else str(int(answer) + 1)
            response = _response(rng, work, pred, rng.random() < 0.5)
            user = _chat(question, special=True, system=False)
            reward = 1.0 if correct else 0.0
            lines.append(
                {
                    "content": [
                        [{"role": "user", "content": user}, {"role": "assistant", "content": response}]
                    ],
                    "rewards": [reward],
                    "idx": i,
                }
            )
            val_rows.append((step, user, response, reward, None))
        path = run_dir / f"val_data_step{step}.jsonl"
        _write_jsonl(path, lines, ensure_ascii=True)
        val_files.append(path)

    common = (
        "NeMo-RL: every value has a leading batch dim of 1; no step key in lines (step only in the file "
        "name); idx = line index. run_dir exp_001 holds train_data_step*.jsonl AND val_data_step*.jsonl. "
    )
    train = _dump(
        "nemo-rl",
        run_dir,
        train_files,
        train_rows,
        notes=common
        + "Train: content[0] = [chat-templated user string with special tokens, assistant text, the math "
        "environment's observation]; prompt = content[0][0], response = content[0][1] (NOT the last string), "
        "reward = rewards[0]; token arrays padded to the "
        "batch max (input_lengths gives the real length). Steps 1..N.",
    )
    val = _dump(
        "nemo-rl",
        run_dir,
        val_files,
        val_rows,
        notes=common
        + "Val: content[0] is a list of {role, content} dicts; only content, rewards, idx. Steps 0 and "
        "multiples of val_period.",
    )
    return train, val


def write_nemo_rl(
    out: Path, *, steps: int = 3, prompts: int = 4, group: int = 4, seed: int = 0, val_period: int = 2
) -> Dump:
    """``{out}/exp_001/train_data_step{N}.jsonl`` (and val files); returns the train Dump."""
    return _nemo(out, steps, prompts, group, seed, val_period)[0]


def write_nemo_rl_val(
    out: Path, *, steps: int = 3, prompts: int = 4, group: int = 4, seed: int = 0, val_period: int = 2
) -> Dump:
    """Same files as :func:`write_nemo_rl`; returns the Dump of ``val_data_step{N}.jsonl``."""
    return _nemo(out, steps, prompts, group, seed, val_period)[1]


# --------------------------------------------------------------------------- prime-rl

_T0 = 1_780_000_000.0


def _prime_node(
    rng: random.Random, parent: int | None, message: dict, t: float, sampled: bool, n_scaffold: int
) -> dict:
    text = message.get("content") or ""
    if message.get("reasoning_content"):
        text = message["reasoning_content"] + "\n" + text
    ids = [SPECIAL_IDS[IM_START]] * n_scaffold + _ids(text) + [SPECIAL_IDS[IM_END]]
    node: dict[str, Any] = {}
    if parent is not None:
        node["parent"] = parent
    node["message"] = message
    node["sampled"] = sampled
    node["timestamp"] = _r(t, 3)
    node["token_ids"] = ids
    node["mask"] = [False] * n_scaffold + [True] * (len(ids) - n_scaffold) if sampled else [False] * len(ids)
    node["is_content"] = []
    node["logprobs"] = _logprobs(rng, len(ids) - n_scaffold) if sampled else []
    return node


def _prime(out: Path, steps: int, prompts: int, group: int, seed: int) -> tuple[Dump, Dump]:
    rng = random.Random(seed)
    run_id = _hex(rng)[:12]
    all_files: list[Path] = []
    all_rows: list[tuple[int, str, str, float, str | None]] = []
    exp_files: list[Path] = []
    exp_count = 0
    exp_steps: list[int] = []
    t = _T0
    for step in range(1, steps + 1):
        samples = _step_samples(rng, step, prompts, group, (step - 1) * prompts)
        group_ids = [_uuid(rng) for _ in range(prompts)]
        episodes = []
        for i, s in enumerate(samples):
            p = i // group
            t += rng.uniform(0.5, 3.0)
            errored = step == 2 and i == 1
            task = {
                "type": "MathTask",
                "data": {"question": s.question, "answer": s.answer},
                "key": f"synthetic-math/{s.pid}",
                "hash": f"{zlib.crc32(s.question.encode()):08x}",
            }
            assistant: dict[str, Any] = {"role": "assistant"}
            answer_text = s.response
            if s.think and "</think>\n" in s.response:
                reasoning, answer_text = s.response.split("</think>\n", 1)
                assistant["content"] = answer_text
                assistant["reasoning_content"] = reasoning.removeprefix("<think>\n")
            else:
                assistant["content"] = s.response
            nodes = [
                _prime_node(rng, None, {"role": "user", "content": s.question}, t, False, 2),
            ]
            if not errored:
                nodes.append(_prime_node(rng, 0, assistant, t + 1.0, True, 3))
            n_out = sum(nodes[-1]["mask"]) if not errored else 0
            n_in = len(nodes[0]["token_ids"])
            calls = []
            if not errored:
                calls.append(
                    {
                        "node": 1,
                        "model": "demo/policy-1.5b",
                        "sampling": {"temperature": 1.0, "max_tokens": 2048},
                        "endpoint": "/chat/completions",
                        "finish_reason": "stop",
                        "usage": {"prompt_tokens": n_in, "completion_tokens": n_out},
                        "time": {"start": _r(t, 3), "end": _r(t + 1.0, 3)},
                    }
                )
            errors = (
                [{"type": "TimeoutError", "message": "sandbox did not answer in 30s", "traceback": "..."}]
                if errored
                else []
            )
            reward = 0.0 if errored else s.reward
            trace = {
                "version": 1,
                "id": _hex(rng),
                "verifiers": {"version": "0.9.1", "commit": "0a1b2c3"},
                "task": task,
                "agent": {"config": {"runtime": {"type": "local"}}, "name": "agent", "trainable": True},
                "tools": [],
                "nodes": nodes,
                "calls": calls,
                "request_rewrites": [],
                "response_rewrites": [],
                "rewards": {} if errored else {"correct_answer": {"score": s.reward, "weight": 1.0}},
                "metrics": {} if errored else {"think_format": 1.0 if s.think else 0.0},
                "info": {},
                "extra_usage": [],
                "is_completed": True,
                "ok": not errored,
                "stop_condition": "error" if errored else "done",
                "errors": errors,
                "timing": {
                    "start": _r(t, 3),
                    "boot": {"start": _r(t, 3), "end": _r(t + 0.1, 3)},
                    "setup": {"start": _r(t + 0.1, 3), "end": _r(t + 0.2, 3)},
                    "agent": {
                        "start": _r(t + 0.2, 3),
                        "end": _r(t + 1.2, 3),
                        "model": {"duration": 1.0},
                        "harness": {"duration": 0.0},
                    },
                    "finalize": {"start": _r(t + 1.2, 3), "end": _r(t + 1.3, 3)},
                    "scoring": {"start": _r(t + 1.3, 3), "end": _r(t + 1.4, 3)},
                },
            }
            dispatch_step = step - 1 if (step > 1 and rng.random() < 0.25) else step
            episode = {
                "id": _hex(rng),
                "env": {"id": "synthetic-math", "name": "math"},
                "task": task,
                "group": {"id": group_ids[p]},
                "run": {
                    "type": "train",
                    "id": run_id,
                    "name": "grpo-math-demo",
                    "work": {
                        "type": "train",
                        "step": dispatch_step,
                        "policy": {"start": step - 1, "end": step},
                    },
                },
                "ok": not errored,
                "errors": errors,
                "traces": [trace],
            }
            episodes.append((p, i, episode, s, reward, errored))
        # "all": every episode in completion (arrival) order, before advantages exist
        arrival = episodes[:]
        rng.shuffle(arrival)
        all_path = out / "rollouts" / f"step_{step}" / "train" / "all" / "traces.jsonl"
        _write_jsonl(all_path, [e[2] for e in arrival], compact=True)
        all_files.append(all_path)
        for p, _i, ep, s, reward, errored in arrival:
            response = "" if errored else ep["traces"][0]["nodes"][-1]["message"]["content"]
            all_rows.append((step, s.question, response, reward, group_ids[p]))
        # "effective": groups with reward spread, errored episodes dropped, advantages assigned
        effective = []
        for p in range(prompts):
            members = [e for e in episodes if e[0] == p and not e[5]]
            rs = [e[4] for e in members]
            if len(rs) < 2 or max(rs) == min(rs):
                continue
            mean = sum(rs) / len(rs)
            for e in members:
                rec = json.loads(json.dumps(e[2]))
                adv = _r(e[4] - mean)
                node = rec["traces"][0]["nodes"][-1]
                node["advantages"] = [adv] * len(node["logprobs"])
                effective.append((rec, adv))
        eff_path = out / "rollouts" / f"step_{step}" / "train" / "effective" / "traces.jsonl"
        _write_jsonl(eff_path, [rec for rec, _ in effective], compact=True)
        # token exports of the trained-on samples, 2 ranks, STABLE only for finished steps
        per_rank: list[list[dict]] = [[], []]
        for j, (rec, adv) in enumerate(effective):
            rank = j % 2
            nodes = rec["traces"][0]["nodes"]
            ids = [tid for n in nodes for tid in n["token_ids"]]
            mask = [m for n in nodes for m in n["mask"]]
            inf = [0.0] * (len(ids) - len(nodes[-1]["logprobs"])) + nodes[-1]["logprobs"]
            inf = [v if m else 0.0 for v, m in zip(inf, mask, strict=True)]
            trn = [
                _r(v + rng.gauss(0, 0.02), 3) if m else _r(-abs(rng.gauss(0, 1)), 3)
                for v, m in zip(inf, mask, strict=True)
            ]
            log_ratio = [_r(a - b, 3) for a, b in zip(trn, inf, strict=True)]
            ratio = [_r(math.exp(x), 3) for x in log_ratio]
            mkl = [_r(math.exp(x) - x - 1, 5) for x in log_ratio]
            delta = [_r(math.exp(a) - math.exp(b), 3) for a, b in zip(trn, inf, strict=True)]
            n = len(ids)
            per_rank[rank].append(
                {
                    "schema_version": 1,
                    "step": step,
                    "rank": rank,
                    "micro_step": j // 4,
                    "micro_sequence_idx": (j // 2) % 2,
                    "export_sequence_idx": len(per_rank[rank]),
                    "env_name": "math",
                    "token_ids": ids,
                    "position_ids": list(range(n)),
                    "loss_mask": mask,
                    "advantages": [adv if m else 0.0 for m in mask],
                    "inference_logprobs": inf,
                    "trainer_logprobs": trn,
                    "entropy": [_r(abs(rng.gauss(0.6, 0.3)), 3) for _ in range(n)],
                    "mismatch_kl": mkl,
                    "log_importance_ratio": log_ratio,
                    "importance_ratio": ratio,
                    "prob_delta": delta,
                    "is_masked": [False] * n,
                    "is_masked_high": [False] * n,
                    "is_masked_low": [False] * n,
                    "rl_weights": [None] * n,
                    "ce_weights": [None] * n,
                    "ref_kl_weights": [None] * n,
                }
            )
        step_dir = out / "token_exports" / f"step_{step}"
        for rank in range(2):
            if per_rank[rank]:
                path = step_dir / f"rank_{rank}.jsonl"
                _write_jsonl(path, per_rank[rank], compact=True)
                exp_files.append(path)
        # STABLE lands only in step dirs that got records, and not for the last step (still being written)
        if step < steps and any(per_rank):
            (step_dir / "STABLE").touch()
            exp_count += sum(len(r) for r in per_rank)
            exp_steps.append(step)
    traces = _dump(
        "prime-rl",
        out,
        all_files,
        all_rows,
        with_groups=True,
        notes=(
            "prime-rl rollouts: Dump covers rollouts/step_N/train/all/traces.jsonl (every arrival, "
            "completion order, steps 1..N from the path). rollouts/step_N/train/effective/traces.jsonl "
            "repeats the trained-on subset (do not double count). prompt = last user node's content; "
            "response = the assistant node's content (reasoning_content, when present, is separate); reward "
            "= sum of score*weight over traces[0].rewards (0.0 for the errored episode with rewards {}); "
            "group = group.id. run.work.step can be one less than the path step (async)."
        ),
    )
    exports = Dump(
        format="prime-rl",
        run_dir=out,
        files=exp_files,
        samples=exp_count,
        steps=exp_steps,
        reward_means={},
        prompts={},
        responses={},
        rewards={},
        notes=(
            f"prime-rl token exports: only step dirs with a STABLE marker count (step {steps} has none). "
            "Records carry token ids and per-token arrays but no text and no reward."
        ),
    )
    return traces, exports


def write_prime_rl(out: Path, *, steps: int = 3, prompts: int = 4, group: int = 4, seed: int = 0) -> Dump:
    """``{out}/rollouts/step_{N}/train/{all,effective}/traces.jsonl`` plus token exports; Dump of ``all``."""
    return _prime(out, steps, prompts, group, seed)[0]


def write_prime_rl_token_exports(
    out: Path, *, steps: int = 3, prompts: int = 4, group: int = 4, seed: int = 0
) -> Dump:
    """Same files as :func:`write_prime_rl`; Dump of ``{out}/token_exports/step_{N}/rank_{r}.jsonl``."""
    return _prime(out, steps, prompts, group, seed)[1]


# --------------------------------------------------------------------------- AReaL


def write_areal(
    out: Path, *, steps: int = 3, prompts: int = 4, group: int = 4, seed: int = 0, first_task_id: int = 7
) -> Dump:
    """``{out}/rollout/{tail_version}/{task_id}.jsonl``; ``out`` is the log path of one trial."""
    rng = random.Random(seed)
    files: list[Path] = []
    rows: list[tuple[int, str, str, float, str | None]] = []
    task_id = first_task_id
    for version in range(steps):
        samples = _step_samples(rng, version, prompts, group, version * prompts)
        for p in range(prompts):
            head = version - 1 if version > 0 and rng.random() < 0.4 else version
            lines = []
            for i, s in enumerate(samples[p * group : (p + 1) * group]):
                prompt = _chat(s.question, special=True)
                completion = s.response + IM_END
                prompt_len = len(_tokens(prompt))
                lines.append(
                    {
                        "task_id": task_id,
                        "sample_idx": i,
                        "seqlen": prompt_len + len(_tokens(completion)),
                        "prompt_len": prompt_len,
                        "head_version": head,
                        "tail_version": version,
                        "reward": s.reward,
                        "prompt": prompt,
                        "completion": completion,
                    }
                )
                rows.append((version, prompt, completion, s.reward, str(task_id)))
            path = out / "rollout" / str(version) / f"{task_id}.jsonl"
            _write_jsonl(path, lines, ensure_ascii=True)
            files.append(path)
            task_id += 1
    notes = (
        "AReaL: step = the version folder (tail_version); one file per task (group key = task_id); reading "
        "order = task_id NUMERIC (file names cross a digit boundary: '10' < '9' as strings), then lines. "
        "Text keeps special tokens; non-ASCII is \\u-escaped. Eval goes to eval-rollout/ (not written)."
    )
    return _dump("areal", out, files, rows, with_groups=True, notes=notes)


# --------------------------------------------------------------------------- SkyRL


def write_skyrl_eval(
    out: Path,
    *,
    steps: int = 3,
    prompts: int = 4,
    group: int = 4,
    seed: int = 0,
    eval_interval: int = 5,
    token_level_scores: bool = False,
) -> Dump:
    """``{out}/dumped_evals/global_step_{N}_evals/{data_source}.jsonl`` ("/" -> "_" in the name)."""
    rng = random.Random(seed)
    sources = ["openai/gsm8k", "math500"]
    files: list[Path] = []
    rows: list[tuple[int, str, str, float, str | None]] = []
    for k in range(steps):
        step = k * eval_interval
        folder = out / "dumped_evals" / f"global_step_{step}_evals"
        samples = _step_samples(rng, step, prompts, group, 0)
        by_source: dict[str, list[dict]] = {src: [] for src in sources}
        scores_by_source: dict[str, list[float]] = {src: [] for src in sources}
        step_rows = {src: [] for src in sources}
        for i, s in enumerate(samples):
            src = sources[0] if (i // group) < (prompts + 1) // 2 else sources[1]
            stop = "length" if rng.random() < 0.1 else "stop"
            prompt = _chat(s.question, special=True, system=False)
            response = s.response + (IM_END if stop == "stop" else "")
            score: float | list[float] = s.reward
            if token_level_scores and src == sources[1]:
                n = len(_tokens(response))
                score = [0.0] * (n - 1) + [s.reward]
            by_source[src].append(
                {
                    "input_prompt": prompt,
                    "output_response": response,
                    "score": score,
                    "stop_reason": stop,
                    "env_class": "gsm8k",
                    "env_extras": {
                        "data_source": src,
                        "reward_spec": {"method": "rule", "ground_truth": s.answer},
                        "extra_info": {"split": "test", "index": s.pid},
                    },
                    "data_source": src,
                }
            )
            scores_by_source[src].append(s.reward)
            step_rows[src].append((step, prompt, response, s.reward, None))
        metrics: dict[str, float] = {}
        for src in sources:
            if not by_source[src]:
                continue
            path = folder / f"{src.replace('/', '_')}.jsonl"
            _write_jsonl(path, by_source[src])
            files.append(path)
            metrics[f"eval/{src}/avg_score"] = _r(_nanmean(scores_by_source[src]))
        all_scores = [v for src in sources for v in scores_by_source[src]]
        metrics["eval/all/avg_score"] = _r(_nanmean(all_scores))
        metrics[f"eval/all/pass_at_{group}"] = _r(rng.uniform(0.5, 0.9))
        _write_jsonl(folder / "aggregated_results.jsonl", [metrics])
        # reading order: files sorted by name within the step folder
        for src in sorted(sources, key=lambda x: x.replace("/", "_")):
            rows.extend(step_rows[src])
    notes = (
        "SkyRL eval dump: steps 0, eval_interval, ...; order = data-source files sorted by name "
        "(math500 before openai_gsm8k), then lines. aggregated_results.jsonl in the same folder is one "
        "metrics line, not samples. env_extras is an extra dict key. With token_level_scores=True the "
        "math500 scores are per-token lists whose sum is the reward."
    )
    return _dump("skyrl", out, files, rows, notes=notes)


# --------------------------------------------------------------------------- junk


def write_junk(out: Path, *, seed: int = 0) -> list[tuple[Path, str]]:
    """Files a reader must skip, each with a short reason category."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    readme = out / "README.md"
    readme.write_text("# Run notes\n\nThis folder holds a made-up training run.\n", encoding="utf-8")
    notes = out / "notes.txt"
    notes.write_text("lr 1e-6, 8 rollouts per prompt\nreward went up after step 40\n", encoding="utf-8")
    pkl = out / "model.pkl"
    pkl.write_bytes(bytes(rng.getrandbits(8) for _ in range(48)))
    config = out / "config.json"
    config.write_text(
        json.dumps(
            {"model": "demo/policy-1.5b", "lr": 1e-6, "rollout": {"n": 8, "temperature": 1.0}}, indent=2
        )
        + "\n",
        encoding="utf-8",
    )
    weird = out / "weird.jsonl"
    _write_jsonl(weird, [{"foo": i, "bar": "x" * (i + 1)} for i in range(3)])
    return [
        (readme, "not-data: markdown"),
        (notes, "not-data: plain text"),
        (pkl, "binary: pickle (never unpickle)"),
        (config, "json: config object, not rollouts"),
        (weird, "jsonl: unknown shape"),
    ]


# --------------------------------------------------------------------------- registry

Writer = Callable[..., Dump]

ALL_WRITERS: dict[str, Writer] = {
    "verl": write_verl,
    "verl_v1": functools.partial(write_verl, v1=True),
    "verl_validation": write_verl_validation,
    "rl_board": write_rl_board,
    "rllogging_board_fork": write_rllogging_board_fork,
    "openrlhf": write_openrlhf,
    "openrlhf_pr658": functools.partial(write_openrlhf, variant="pr658"),
    "trl": write_trl,
    "trl_conversational": functools.partial(write_trl, conversational=True),
    "roll": write_roll,
    "nemo_rl": write_nemo_rl,
    "nemo_rl_val": write_nemo_rl_val,
    "prime_rl": write_prime_rl,
    "prime_rl_token_exports": write_prime_rl_token_exports,
    "areal": write_areal,
    "skyrl_eval": write_skyrl_eval,
}
