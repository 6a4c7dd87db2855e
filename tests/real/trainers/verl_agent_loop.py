"""Drive verl 0.9.1's real agent loop on CPU with a scripted policy, then verl's own rollout dump.

Usage: ``python -m tests.real.trainers.verl_agent_loop OUT``

A random tiny model never calls a tool, so the policy is scripted: ``ScriptedServer`` stands in for
verl's vLLM server actor (the one ``LLMServerClient.generate`` reaches through verl's load balancer)
and answers each turn with the token ids of the text a script says, capped at ``max_tokens`` the way
verl's vLLM server computes it. Everything around it is verl's own code, run as ``RayPPOTrainer.fit``
runs it, on a local Ray cluster (CPU only):

- the dataset: a parquet file read by verl's ``RLHFDataset`` and ``collate_fn``; ``uid`` per prompt,
  ``_get_gen_batch`` and ``DataProto.repeat`` (GRPO, ``n`` rollouts per prompt);
- ``AgentLoopManager.create`` -> an ``AgentLoopWorker`` Ray actor -> ``ToolAgentLoop`` (Hermes parser,
  ``multi_turn.max_assistant_turns``, ``max_parallel_calls=1``) with two ``BaseTool`` subclasses loaded
  from a ``tool_config_path`` YAML: ``calculator`` and ``lookup`` (which raises on an unknown key);
- ``LLMServerClient`` and verl's ``GlobalRequestLoadBalancer`` actor in front of the scripted server;
- ``RewardLoopManager``'s ``RewardLoopWorker`` actor scoring each trajectory as it finishes (math_dapo);
- ``extract_reward``, ``compute_advantage`` (GRPO), ``compute_data_metrics`` through verl's file
  ``Tracking``, and the trainer's ``_log_rollout_data`` on an instance made with ``__new__`` (no
  actor/critic workers: nothing is trained), which writes ``OUT/rollout/{step}.jsonl``.

How a trajectory is told apart from the others of its group: ``rollout.full_determinism=True`` makes
``ToolAgentLoop`` name its request ``det-{priority}`` (the row's place in the batch) and
``LLMServerClient`` pass that name on, so the server knows which script a request belongs to; which
turn it is comes from counting the assistant headers already in the prompt. ``trainer.balance_batch``
is off (``_balance_batch`` needs the actor's worker group), so the dump keeps batch order.

``OUT/truth.json``: per step and sample the conversation as the script meant it (roles in order, calls
by name, tool results and errors, calls left unanswered, the finish cause in rl-board's words:
``stop``, ``length``, ``turn_limit``). The runner checks verl did what the script meant (turn counts,
response lengths, tool results in the decoded text) before it writes the truth, so a verl change
that breaks a script fails here, not in the reader's tests.
"""

from __future__ import annotations

import ast
import json
import operator
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse

from tests.real.trainers import specs, tiny

SYSTEM = "You are a careful assistant. Check numbers with the tools before you answer."
DATA_SOURCE = "math_dapo"  # verl's default reward routes it to math_dapo: score +1/-1, acc, pred
LONG = "I will keep checking every digit once more before I give the final answer. " * 40

# A Qwen2.5-style chat template (tools in the system turn, calls as <tool_call> JSON, tool results as a
# user turn of <tool_response> blocks): what verl's Hermes parser and Qwen boundary handling expect.
QWEN_TOOL_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}"
    "{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}"
    "{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    'within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\\n</tool_call><|im_end|>\\n' }}"
    "{%- elif messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'system' and not loop.first)"
    " or (message.role == 'assistant' and not message.tool_calls) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}{{- '<|im_start|>' + message.role }}"
    "{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}"
    "{%- for tool_call in message.tool_calls %}"
    "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
    '{{- \'\\n<tool_call>\\n{"name": "\' }}{{- tool_call.name }}{{- \'", "arguments": \' }}'
    "{%- if tool_call.arguments is string %}{{- tool_call.arguments }}"
    "{%- else %}{{- tool_call.arguments | tojson }}"
    "{%- endif %}{{- '}\\n</tool_call>' }}{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}"
    "{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' }}{{- message.content }}{{- '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


# ----------------------------------------------------------------------- the tools (verl BaseTool subclasses)

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
FACTS = {"seconds_per_day": "86400", "bytes_per_kilobyte": "1024", "days_per_week": "7"}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    raise ValueError(f"unsupported expression: {ast.dump(node)}")


def calculate(expression: str) -> str:
    """Arithmetic on numbers and + - * / (no names, no calls), as the calculator tool returns it."""
    value = _evaluate(ast.parse(expression, mode="eval").body)
    return str(int(value)) if float(value).is_integer() else str(value)


class CalculatorTool(BaseTool):
    """``calculator``: evaluates an arithmetic expression."""

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict]:
        return ToolResponse(text=calculate(str(parameters["expression"]))), 0.0, {}


class LookupTool(BaseTool):
    """``lookup``: a fact from a small table; raises on a key it does not know (verl turns that into an error
    text)."""

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict]:
        key = str(parameters["key"])
        if key not in FACTS:
            raise LookupError(f"no entry named {key}")
        return ToolResponse(text=FACTS[key]), 0.0, {}


MODULE = "tests.real.trainers.verl_agent_loop"  # the name Ray actors import this file by (never __main__)
TOOLS: list[dict[str, Any]] = [
    {
        "class_name": f"{MODULE}.CalculatorTool",
        "config": {"type": "native"},
        "tool_schema": {
            "type": "function",
            "function": {
                "name": "calculator",
                "description": "Evaluate an arithmetic expression.",
                "parameters": {
                    "type": "object",
                    "properties": {"expression": {"type": "string", "description": "Numbers with + - * /."}},
                    "required": ["expression"],
                },
            },
        },
    },
    {
        "class_name": f"{MODULE}.LookupTool",
        "config": {"type": "native"},
        "tool_schema": {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look a fact up by key.",
                "parameters": {
                    "type": "object",
                    "properties": {"key": {"type": "string", "description": "The fact's key."}},
                    "required": ["key"],
                },
            },
        },
    },
]
TOOL_NAMES = [t["tool_schema"]["function"]["name"] for t in TOOLS]


# --------------------------------------------------------------------------- the scripts


@dataclass(frozen=True)
class Question:
    """A prompt: the user's text, the right answer, and what the scripts pass the tools."""

    text: str
    answer: str
    expr: str
    expr2: str
    key: str


QUESTIONS = {
    "times": Question("What is 17 times 23?", "391", "17 * 23", "23 * 17", "days_per_week"),
    "seconds": Question(
        "How many seconds are in 3 days?", "259200", "3 * 86400", "86400 * 3", "seconds_per_day"
    ),
    "plus": Question("What is 45 plus 78?", "123", "45 + 78", "78 + 45", "days_per_week"),
    "bytes": Question(
        "How many bytes are in 5 kilobytes?", "5120", "5 * 1024", "1024 * 5", "bytes_per_kilobyte"
    ),
}
# Per step, the prompts in dataset order and the kind of trajectory each of its ``VERL_N`` rollouts plays.
SCHEDULE: dict[int, list[tuple[str, list[str]]]] = {
    1: [
        ("times", ["direct", "one_call", "two_calls", "tool_error"]),
        ("seconds", ["unknown_tool", "turn_limit", "length", "lookup"]),
    ],
    2: [
        ("plus", ["turn_limit", "direct", "length", "one_call"]),
        ("bytes", ["two_calls", "tool_error", "lookup", "unknown_tool"]),
    ],
}
STEPS = tuple(SCHEDULE)
MAX_ASSISTANT_TURNS = 3
PROMPT_LENGTH, RESPONSE_LENGTH = 1024, 384
FINISH = {"turn_limit": "turn_limit", "length": "length"}  # every other kind ends on an answer: "stop"

Call = tuple[str, dict[str, str]]


def turns(kind: str, q: Question) -> list[tuple[str, list[Call]]]:
    """The assistant turns a kind of trajectory says: each a text and the calls it makes."""
    calc, calc2 = ("calculator", {"expression": q.expr}), ("calculator", {"expression": q.expr2})
    return {
        "direct": [(f"I can work this out in my head.\nAnswer: {q.answer}", [])],
        "one_call": [
            ("Let me compute it.", [calc]),
            (f"The calculator says {q.answer}.\nAnswer: {q.answer}", []),
        ],
        "two_calls": [
            ("I will compute it two ways.", [calc, calc2]),
            (f"That gives {q.answer}.\nAnswer: {q.answer}", []),
        ],
        "tool_error": [
            ("Let me look that up.", [("lookup", {"key": "pluto_mass"})]),
            (f"The lookup failed, so I worked it out.\nAnswer: {q.answer}", []),
        ],
        "unknown_tool": [
            ("Searching the web.", [("web_search", {"query": q.text})]),
            (f"There is no search tool, so from memory.\nAnswer: {q.answer}", []),
        ],
        "lookup": [
            ("Let me look that up.", [("lookup", {"key": q.key})]),
            (f"From the table.\nAnswer: {q.answer}", []),
        ],
        "turn_limit": [
            ("First the table.", [("lookup", {"key": q.key})]),
            ("Now the product.", [calc]),
            ("Once more to be sure.", [calc2]),
        ],
        "length": [("Let me compute it.", [calc]), (LONG, [])],
    }[kind]


def assistant_text(text: str, calls: list[Call]) -> str:
    """What the model writes for one turn: its text, then each call as a Hermes ``<tool_call>`` block."""
    blocks = "".join(
        f"\n<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls
    )
    return text + blocks


def tool_result(name: str, arguments: dict[str, str]) -> tuple[str, bool]:
    """The text verl's ToolAgentLoop puts in the tool message for a call, and whether it is a failure."""
    if name not in TOOL_NAMES:
        return f"Unknown function '{name}'. Available tools: {TOOL_NAMES}", True
    if name == "lookup" and arguments["key"] not in FACTS:
        return f"Error executing tool 'lookup': no entry named {arguments['key']}", True
    return (calculate(arguments["expression"]) if name == "calculator" else FACTS[arguments["key"]]), False


def truth_of(kind: str, q: Question) -> dict[str, Any]:
    """The conversation a script means, in rl-board's terms: messages, calls (answered or not) and finish."""
    finish = FINISH.get(kind, "stop")
    said = turns(kind, q)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": q.text},
    ]
    calls: list[dict[str, Any]] = []
    for k, (text, made) in enumerate(said):
        turn = len(messages)
        messages.append({"role": "assistant", "content": text, "calls": [n for n, _ in made]})
        if finish == "length" and k == len(said) - 1:
            messages[-1]["cut"] = (
                True  # response_length ends it part-way: the dump holds a prefix of the text
            )
        runs = k < len(said) - 1  # the loop goes on after this turn: its first call is run
        for c, (name, arguments) in enumerate(made):
            answered = runs and c < 1  # max_parallel_calls=1
            content, error = tool_result(name, arguments) if answered else (None, None)
            calls.append(
                {
                    "turn": turn,
                    "call": c,
                    "name": name,
                    "arguments": arguments,
                    "answered": answered,
                    "error": error,
                    "result": content,
                }
            )
        for call in calls:
            if call["turn"] == turn and call["answered"]:
                messages.append(
                    {"role": "tool", "name": call["name"], "content": call["result"], "error": call["error"]}
                )
    return {
        "kind": kind,
        "finish": finish,
        "messages": messages,
        "calls": calls,
        "num_turns": 2 * len(said),
    }  # verl's __num_turns__: assistant + user turns + 1


# --------------------------------------------------------------------------- the scripted policy


class ScriptedServer:
    """Stands in for verl's vLLM server actor: ``generate`` returns the script's token ids for the turn.

    ``scripts`` maps a request id (``det-{priority}``) to the token ids of each assistant turn. The turn
    is the number of assistant headers already in the prompt minus the one the generation prompt adds;
    the answer is capped at ``max_tokens`` as verl's vLLM server computes it (``min(response_length,
    prompt_length + response_length - len(prompt_ids))``).
    """

    def __init__(self, header: list[int], prompt_length: int, response_length: int) -> None:
        self.header, self.prompt_length, self.response_length = header, prompt_length, response_length
        self.scripts: dict[str, list[list[int]]] = {}
        self.step = 0

    def load(self, step: int, scripts: dict[str, list[list[int]]]) -> None:
        self.step, self.scripts = step, scripts

    def _turn(self, prompt_ids: list[int]) -> int:
        h, n = self.header, len(self.header)
        return sum(prompt_ids[i : i + n] == h for i in range(len(prompt_ids) - n + 1)) - 1

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **kwargs: Any
    ) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        prompt_ids = [int(t) for t in prompt_ids]
        ids = self.scripts[request_id][self._turn(prompt_ids)]
        max_tokens = max(
            1, min(self.response_length, self.prompt_length + self.response_length - len(prompt_ids))
        )
        return TokenOutput(
            token_ids=ids[:max_tokens], stop_reason="completed", extra_fields={"global_steps": self.step}
        )


# --------------------------------------------------------------------------- the run


def config(model: Path, tools: Path, data: Path, out: Path) -> Any:
    """verl's ``ppo_trainer`` config (Hydra compose) with the multi-turn agent-loop settings of this run."""
    import verl
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(
        config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None
    ):
        return compose(
            "ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={model}",
                "actor_rollout_ref.rollout.name=vllm",
                f"actor_rollout_ref.rollout.n={specs.VERL_N}",
                f"actor_rollout_ref.rollout.prompt_length={PROMPT_LENGTH}",
                f"actor_rollout_ref.rollout.response_length={RESPONSE_LENGTH}",
                "actor_rollout_ref.rollout.full_determinism=True",
                "actor_rollout_ref.rollout.calculate_log_probs=False",
                "actor_rollout_ref.rollout.multi_turn.enable=True",
                f"actor_rollout_ref.rollout.multi_turn.max_assistant_turns={MAX_ASSISTANT_TURNS}",
                "actor_rollout_ref.rollout.multi_turn.max_parallel_calls=1",
                "actor_rollout_ref.rollout.multi_turn.format=hermes",
                f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tools}",
                "actor_rollout_ref.rollout.agent.num_workers=1",
                "actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent",
                f"data.train_files={data}",
                f"data.train_batch_size={len(SCHEDULE[1])}",
                f"data.max_prompt_length={PROMPT_LENGTH}",
                f"data.max_response_length={RESPONSE_LENGTH}",
                f"+data.cache_dir={out / 'cache'}",
                "data.filter_overlong_prompts_workers=1",
                "reward.num_workers=1",
                "algorithm.adv_estimator=grpo",
                "trainer.balance_batch=False",
                f"trainer.rollout_data_dir={out / 'rollout'}",
                f"trainer.project_name={specs.VERL_PROJECT}",
                f"trainer.experiment_name={specs.VERL_AGENT_EXPERIMENT}",
            ],
        )


def prepare(out: Path) -> tuple[Any, Path, Path, Path]:
    """The tiny tokenizer and model config saved as a model folder, the tools YAML and the dataset parquet."""
    import pandas as pd

    corpus = (
        tiny.CORPUS
        + [SYSTEM, LONG, *(q.text for q in QUESTIONS.values())]
        + [
            assistant_text(text, calls)
            for q in QUESTIONS.values()
            for kind in ("two_calls", "turn_limit")
            for text, calls in turns(kind, q)
        ]
    )
    tok = tiny.tokenizer(corpus, vocab_size=600, all_bytes=True)
    tok.chat_template = QWEN_TOOL_TEMPLATE
    model = out / "model"
    tok.save_pretrained(model)
    lm = tiny.model(tok, specs.SEED)
    lm.config.architectures = [type(lm).__name__]  # verl's HFModelConfig wants exactly one
    lm.config.save_pretrained(model)
    lm.generation_config.save_pretrained(model)
    tools = out / "tools.yaml"
    tools.write_text(json.dumps({"tools": TOOLS}, indent=1) + "\n", encoding="utf-8")  # JSON is YAML
    rows = []
    for step in STEPS:
        for name, _ in SCHEDULE[step]:
            q = QUESTIONS[name]
            rows.append(
                {
                    "data_source": DATA_SOURCE,
                    "agent_name": "tool_agent",
                    "prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q.text}],
                    "reward_model": {"ground_truth": q.answer, "style": "rule"},
                    "extra_info": {"index": len(rows), "question": name},
                }
            )
    data = out / "train.parquet"
    pd.DataFrame(rows).to_parquet(data)
    return tok, model, tools, data


def step_scripts(tok: Any, step: int) -> tuple[dict[str, list[list[int]]], list[dict[str, Any]]]:
    """The token ids the server says for each request of a step, and each sample's truth (batch order)."""
    im_end = tok.convert_tokens_to_ids(tiny.IM_END)
    scripts, truths = {}, []
    for name, kinds in SCHEDULE[step]:
        for kind in kinds:
            said = turns(kind, QUESTIONS[name])
            # A finished turn ends on <|im_end|>, where a Qwen model stops; the answer response_length cuts
            # never does.
            ids = [
                tok.encode(assistant_text(text, calls), add_special_tokens=False)
                + ([] if FINISH.get(kind) == "length" and k == len(said) - 1 else [im_end])
                for k, (text, calls) in enumerate(said)
            ]
            scripts[f"det-{len(truths)}"] = ids
            truths.append(
                {"step": step, "sample": len(truths), "prompt": name, **truth_of(kind, QUESTIONS[name])}
            )
    return scripts, truths


def check(batch: Any, truths: list[dict[str, Any]], tok: Any) -> None:
    """verl did what each script meant: its turn count, whether the response hit response_length, tool
    results."""
    outputs = tok.batch_decode(batch.batch["responses"], skip_special_tokens=True)
    lengths = batch.batch["attention_mask"][:, -RESPONSE_LENGTH:].sum(-1).tolist()
    for truth, turns_, length, text in zip(
        truths, batch.non_tensor_batch["__num_turns__"], lengths, outputs, strict=True
    ):
        where = f"step {truth['step']} sample {truth['sample']} ({truth['kind']})"
        assert int(turns_) == truth["num_turns"], (where, int(turns_), truth["num_turns"])
        assert (length == RESPONSE_LENGTH) == (truth["finish"] == "length"), (where, length)
        for m in truth["messages"]:
            if m["role"] == "tool":
                assert f"<tool_response>\n{m['content']}\n</tool_response>" in text, (where, m["content"])
        assert text.count("<tool_response>") == sum(m["role"] == "tool" for m in truth["messages"]), where
        assert text.count("<tool_call>") == len(truth["calls"]), where


def run(out: Path) -> dict[str, Any]:
    """Every step as ``RayPPOTrainer.fit`` runs it, up to the dump (no log-probs, no update: nothing to
    train)."""
    import numpy as np
    import ray
    from torch.utils.data import DataLoader
    from verl import DataProto
    from verl.experimental.agent_loop import AgentLoopManager
    from verl.experimental.reward_loop import RewardLoopManager
    from verl.trainer.ppo.core_algos import AdvantageEstimator
    from verl.trainer.ppo.metric_utils import compute_data_metrics
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer, compute_advantage, compute_response_mask
    from verl.trainer.ppo.reward import extract_reward
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
    from verl.utils.tracking import Tracking
    from verl.workers.rollout.llm_server import LLMServerClient
    from verl.workers.rollout.router import get_router_handle

    # By module name, not __main__: the Ray actors import the server and the tools from it.
    from tests.real.trainers import verl_agent_loop as me

    tok, model, tools, data = prepare(out)
    cfg = config(model, tools, data, out)
    dataset = RLHFDataset(data_files=[str(data)], tokenizer=tok, config=cfg.data)
    loader = DataLoader(dataset, batch_size=cfg.data.train_batch_size, shuffle=False, collate_fn=collate_fn)
    os.environ["VERL_FILE_LOGGER_ROOT"] = str(out / "metrics")
    tracking = Tracking(specs.VERL_PROJECT, cfg.trainer.experiment_name, default_backend=["file"])
    trainer = RayPPOTrainer.__new__(RayPPOTrainer)
    trainer.tokenizer, trainer.config = tok, cfg
    trainer._init_dump_executor()

    ray_tmp = tempfile.mkdtemp(prefix="ray")  # short: Ray's socket paths must stay under ~100 bytes
    # Four logical CPUs: the load balancer, the scripted server, the reward worker and the agent-loop worker
    # each ask Ray for one to be scheduled (two real cores run them).
    ray.init(
        address="local",
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=ray_tmp,
        runtime_env={
            "env_vars": {
                "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                "OMP_NUM_THREADS": "1",
                "TOKENIZERS_PARALLELISM": "false",
            }
        },
    )
    header = tok.encode(f"{tiny.IM_START}assistant\n", add_special_tokens=False)
    truth: list[dict[str, Any]] = []
    try:
        server = ray.remote(me.ScriptedServer).remote(header, PROMPT_LENGTH, RESPONSE_LENGTH)
        balancer = get_router_handle({"scripted": server}, full_determinism=True)
        rewards = RewardLoopManager(config=cfg)
        manager = AgentLoopManager.create(
            config=cfg,
            llm_client=LLMServerClient(cfg, balancer),
            reward_loop_worker_handles=rewards.reward_loop_workers,
        )
        for step, batch_dict in zip(STEPS, loader, strict=True):
            trainer.global_steps = step
            scripts, truths = step_scripts(tok, step)
            ray.get(server.load.remote(step, scripts))
            batch = DataProto.from_single_dict(batch_dict)
            assert [e["question"] for e in batch.non_tensor_batch["extra_info"]] == [
                n for n, _ in SCHEDULE[step]
            ]
            batch.non_tensor_batch["uid"] = np.array(
                [str(uuid.uuid4()) for _ in range(len(batch))], dtype=object
            )
            gen_batch = trainer._get_gen_batch(batch)
            gen_batch.meta_info["global_steps"] = step
            gen_output = manager.generate_sequences(
                gen_batch.repeat(repeat_times=specs.VERL_N, interleave=True)
            )
            gen_output.meta_info.pop("timing", None)
            batch = batch.repeat(repeat_times=specs.VERL_N, interleave=True).union(gen_output)
            if "response_mask" not in batch.batch.keys():  # noqa: SIM118 (a TensorDict has no `in`)
                batch.batch["response_mask"] = compute_response_mask(batch)
            reward_tensor, reward_extra_infos_dict = extract_reward(batch)
            batch.batch["token_level_scores"] = reward_tensor
            batch.non_tensor_batch.update({k: np.array(v) for k, v in reward_extra_infos_dict.items()})
            batch.batch["token_level_rewards"] = batch.batch["token_level_scores"]
            batch = compute_advantage(batch, adv_estimator=AdvantageEstimator.GRPO, num_repeat=specs.VERL_N)
            check(batch, truths, tok)
            tracking.log(data=compute_data_metrics(batch, use_critic=False), step=step)
            trainer._log_rollout_data(batch, reward_extra_infos_dict, {}, str(out / "rollout"))
            truth += truths
        trainer._shutdown_dump_executor()
        tracking.finish()
    finally:
        ray.shutdown()
        shutil.rmtree(ray_tmp, ignore_errors=True)
    limits = {
        "max_assistant_turns": MAX_ASSISTANT_TURNS,
        "max_parallel_calls": 1,
        "response_length": RESPONSE_LENGTH,
        "rollouts_per_prompt": specs.VERL_N,
    }
    (out / "truth.json").write_text(
        json.dumps({"limits": limits, "samples": truth}, indent=1) + "\n", encoding="utf-8"
    )
    return {"steps": list(STEPS), "samples": len(truth)}


def main(argv: list[str]) -> int:
    import torch
    import verl

    # pytest terminates a process still running at session end: exit through ``finally`` so Ray is shut down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    torch.set_num_threads(1)
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    facts = run(out)
    manifest = {"verl": verl.__version__, **facts, "seconds": round(time.perf_counter() - started, 2)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
