"""Drive verl 0.9.1's own rollout-dump and metric-logging code on CPU, without a model or a GPU.

Usage: ``python -m tests.real.trainers.verl_dump OUT classic|v1 ...``

- ``classic``: the ``RayPPOTrainer`` path. For each step a GRPO batch (``VERL_PROMPTS_PER_STEP``
  prompts x ``VERL_N`` responses, ``uid`` per prompt) is built as ``DataProto``s and repeated with
  verl's ``DataProto.repeat``; verl's ``NaiveRewardManager`` scores it with verl's math_dapo rule
  (``score`` +1/-1, ``acc``, ``pred``); the reward ``DataProto`` is put together as verl's
  ``RewardLoopManager.compute_rm_score`` does after its Ray fan-out (the one step done here by hand),
  then verl's ``extract_reward``, ``compute_response_mask``, ``compute_advantage`` (GRPO) and
  ``compute_data_metrics`` run as in ``RayPPOTrainer.fit``. The dump itself is the trainer's
  ``_log_rollout_data`` on an instance made with ``__new__`` (no workers), writing
  ``OUT/verl/rollout/{step}.jsonl`` from its own dump thread; the metrics go through verl's
  ``Tracking(default_backend=["file"])`` into ``OUT/verl/metrics/{project}/{experiment}.jsonl``.
  ``OUT/verl/batch_uids.json`` keeps each row's ``uid`` (the classic dump does not write it) so
  tests can check groups.
- ``v1``: the v1 trainer (``PPOTrainerSync``), whose ``_log_rollout_data`` reads the samples back
  from TransferQueue, sorts them by key and adds ``uid``. TransferQueue needs a local Ray cluster
  (its controller and storage are Ray actors), started here on CPU; the same samples are put in
  under verl's key format ``{uid}_{session}_{index}``, in shuffled order.

Responses are text written here (correct, wrong and unparsable answers) and tokenized with the
tiny tokenizer; what matters is that verl's code turns them into its files.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from tests.real.trainers import specs, tiny

DATA_SOURCE = "math_dapo"  # verl's default_compute_score routes it to math_dapo: score/acc/pred


def problems(step: int) -> list[dict[str, Any]]:
    """The prompts of one step and their responses; the first prompt's responses are all right."""
    rng = random.Random(specs.SEED * 1000 + step)
    out = []
    for p in range(specs.VERL_PROMPTS_PER_STEP):
        a, b = rng.randint(2, 40), rng.randint(2, 40)
        answer = a + b
        responses = []
        for r in range(specs.VERL_N):
            roll = 0.0 if p == 0 else rng.random()
            if roll < 0.5:
                text = f"{a} plus {b} makes {answer}.\nAnswer: {answer}"
            elif roll < 0.85:
                text = f"Adding them: {a} + {b} = {answer + rng.choice([-2, 1, 10])}.\nAnswer: {answer + 1}"
            else:
                text = "I am not sure how to add these."
            if r % 2 == 0:
                text += tiny.EOS  # stopped on eos: decoded with skip_special_tokens, it disappears
            responses.append(text)
        out.append(
            {
                "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "messages": [
                    {"role": "system", "content": "Think, then give the final line as 'Answer: N'."},
                    {"role": "user", "content": f"What is {a} plus {b}?"},
                ],
                "ground_truth": str(answer),
                "responses": responses,
            }
        )
    return out


def _pad(rows: list[list[int]], pad: int, *, left: bool) -> tuple[Any, Any]:
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if left:
            ids[i, width - len(r) :], mask[i, width - len(r) :] = torch.tensor(r), 1
        else:
            ids[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
    return ids, mask


def step_batch(tok: Any, step: int) -> tuple[Any, list[dict[str, Any]]]:
    """A rollout ``DataProto`` for one step: prompts repeated by verl, then joined with their responses."""
    import numpy as np
    import torch
    from tensordict import TensorDict
    from verl import DataProto

    probs = problems(step)
    prompt_ids = [
        tok.apply_chat_template(p["messages"], add_generation_prompt=True, tokenize=True, return_dict=False)
        for p in probs
    ]
    prompt_ids = [list(ids["input_ids"] if isinstance(ids, dict) else ids) for ids in prompt_ids]
    prompts, prompt_mask = _pad(prompt_ids, tok.pad_token_id, left=True)
    base = DataProto(
        batch=TensorDict({"input_ids": prompts, "attention_mask": prompt_mask}, batch_size=len(probs)),
        non_tensor_batch={
            "uid": np.array([p["uid"] for p in probs], dtype=object),
            "data_source": np.array([DATA_SOURCE] * len(probs), dtype=object),
            "reward_model": np.array(
                [{"ground_truth": p["ground_truth"], "style": "rule"} for p in probs], dtype=object
            ),
        },
    )
    batch = base.repeat(repeat_times=specs.VERL_N, interleave=True)
    response_ids = [
        tok(text, add_special_tokens=False)["input_ids"] for p in probs for text in p["responses"]
    ]
    responses, response_mask = _pad(response_ids, tok.pad_token_id, left=False)
    repeated_prompts = batch.batch["input_ids"]
    gen = DataProto(
        batch=TensorDict(
            {
                "prompts": repeated_prompts,
                "responses": responses,
                "input_ids": torch.cat([repeated_prompts, responses], dim=1),
                "attention_mask": torch.cat([batch.batch["attention_mask"], response_mask], dim=1),
            },
            batch_size=len(response_ids),
        )
    )
    batch.pop(batch_keys=["input_ids", "attention_mask"])
    return batch.union(gen), probs


def score(batch: Any, tok: Any) -> Any:
    """verl's NaiveRewardManager on every sample, assembled into the reward ``DataProto`` verl builds."""
    import numpy as np
    from omegaconf import OmegaConf
    from tensordict import TensorDict
    from verl import DataProto
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager

    manager = NaiveRewardManager(OmegaConf.create({}), tok, compute_score=None)

    async def run_all() -> list[dict[str, Any]]:
        return await asyncio.gather(*(manager.run_single(batch[i : i + 1]) for i in range(len(batch))))

    outputs = manager.loop.run_until_complete(run_all())
    rm_scores = NaiveRewardManager.assemble_rm_scores(batch, [o["reward_score"] for o in outputs])
    extras = [o.get("reward_extra_info", {}) for o in outputs]
    keys = list(extras[0])
    return DataProto(
        batch=TensorDict({"rm_scores": rm_scores}, batch_size=len(batch)),
        non_tensor_batch={k: np.array([e[k] for e in extras]) for k in keys},
        meta_info={"reward_extra_keys": keys},
    )


def classic(out: Path) -> dict[str, Any]:
    import numpy as np
    from verl.trainer.ppo.core_algos import AdvantageEstimator
    from verl.trainer.ppo.metric_utils import compute_data_metrics
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer, compute_advantage, compute_response_mask
    from verl.trainer.ppo.reward import extract_reward
    from verl.utils.tracking import Tracking

    tok = tiny.tokenizer(vocab_size=400, all_bytes=True)
    os.environ["VERL_FILE_LOGGER_ROOT"] = str(out / "metrics")
    tracking = Tracking(specs.VERL_PROJECT, specs.VERL_EXPERIMENT, default_backend=["file"])
    trainer = RayPPOTrainer.__new__(RayPPOTrainer)
    trainer.tokenizer = tok
    trainer._init_dump_executor()
    uids: dict[int, list[str]] = {}
    for step in specs.VERL_STEPS:
        trainer.global_steps = step
        batch, _ = step_batch(tok, step)
        batch = batch.union(score(batch, tok))
        reward_tensor, reward_extra_infos_dict = extract_reward(batch)
        batch.batch["token_level_scores"] = reward_tensor
        batch.non_tensor_batch.update({k: np.array(v) for k, v in reward_extra_infos_dict.items()})
        batch.batch["token_level_rewards"] = batch.batch["token_level_scores"]
        batch.batch["response_mask"] = compute_response_mask(batch)
        batch = compute_advantage(batch, adv_estimator=AdvantageEstimator.GRPO, num_repeat=specs.VERL_N)
        tracking.log(data=compute_data_metrics(batch, use_critic=False), step=step)
        trainer._log_rollout_data(batch, reward_extra_infos_dict, {}, str(out / "rollout"))
        uids[step] = [str(u) for u in batch.non_tensor_batch["uid"]]
    trainer._shutdown_dump_executor()
    tracking.finish()
    (out / "batch_uids.json").write_text(json.dumps(uids, indent=1) + "\n", encoding="utf-8")
    return {"steps": list(specs.VERL_STEPS)}


def v1(out: Path) -> dict[str, Any]:
    import ray
    import torch
    import transfer_queue as tq
    from omegaconf import OmegaConf
    from transfer_queue import KVBatchMeta
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    tok = tiny.tokenizer(vocab_size=400, all_bytes=True)
    ray_tmp = tempfile.mkdtemp(prefix="ray")  # short: Ray's socket paths must stay under ~100 bytes
    # A cluster of its own ("local": never one another process started on this machine). TransferQueue's
    # controller and storage unit each ask Ray for one CPU: with fewer than two logical CPUs tq.init waits
    # forever.
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=ray_tmp)
    try:
        tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
        trainer = PPOTrainerSync.__new__(PPOTrainerSync)
        trainer.tokenizer = tok
        trainer._init_dump_executor()
        for step in specs.VERL_STEPS:
            trainer.global_steps = step
            batch, probs = step_batch(tok, step)
            rm = score(batch, tok).batch["rm_scores"]
            keys, fields = [], []
            for i in range(len(batch)):
                prob = probs[i // specs.VERL_N]
                valid = batch.batch["attention_mask"][i]
                width = batch.batch["prompts"].shape[1]
                prompt = batch.batch["prompts"][i][valid[:width].bool()]
                n_resp = int(valid[width:].sum())
                keys.append(f"{prob['uid']}_{i % specs.VERL_N}_0")
                fields.append(
                    {
                        "uid": prob["uid"],
                        "prompts": prompt.clone(),
                        "responses": batch.batch["responses"][i][:n_resp].clone(),
                        "rm_scores": rm[i][:n_resp].clone().to(torch.float32),
                        "reward_model": {"ground_truth": prob["ground_truth"]},
                    }
                )
            order = list(range(len(keys)))
            random.Random(step).shuffle(order)  # the trainer sorts them back by key
            keys = [keys[i] for i in order]
            tq.kv_batch_put(
                keys=keys, partition_id="train", fields=list_of_dict_to_tensordict([fields[i] for i in order])
            )
            meta = KVBatchMeta(partition_id="train", keys=keys, tags=[{} for _ in keys])
            trainer._log_rollout_data(meta, {}, str(out / "rollout"))
            tq.kv_clear(keys=keys, partition_id="train")
        trainer._shutdown_dump_executor()
        tq.close()
    finally:
        ray.shutdown()
        shutil.rmtree(ray_tmp, ignore_errors=True)
    return {"steps": list(specs.VERL_STEPS)}


PARTS = {"classic": ("verl", classic), "v1": ("verl_v1", v1)}


def main(argv: list[str]) -> int:
    import torch
    import verl

    # pytest terminates a process still running at session end: exit through ``finally`` so Ray is shut down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    torch.set_num_threads(1)
    root = Path(argv[0])
    manifest: dict[str, Any] = {"verl": verl.__version__, "parts": {}}
    for name in argv[1:] or list(PARTS):
        folder, fn = PARTS[name]
        started = time.perf_counter()
        facts = fn(root / folder)
        manifest["parts"][name] = {**facts, "seconds": round(time.perf_counter() - started, 2)}
    (root / f"manifest-verl-{'-'.join(argv[1:]) or 'all'}.json").write_text(
        json.dumps(manifest, indent=1) + "\n", encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
