"""Tiny hand-written agent dumps, one folder per on-disk shape in ``shared/reference/agentic-formats.md``.

Each ``write_<shape>(root)`` writes a few samples exactly as that trainer lays them out and returns the folder
rl-board is pointed at. The samples are spelled out literally (no random episodes, no shared episode model)
so that a reader can count their turns, calls, errors and endings by eye;
``tests/unit/test_trajectory_counts.py`` holds those counts, written by hand from the texts below. Nothing
here reuses ``agentic_dumps`` or ``agentic_text_dumps``: a mistake shared by a writer and a reader would hide
itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

IM_START, IM_END = "<|im_start|>", "<|im_end|>"

# Qwen2.5's system turn when tools are given: the tool list and an example call whose name is
# ``<function-name>`` (a template placeholder, never a call the model made).
TOOLS_SYSTEM = (
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\n"
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    '{"type": "function", "function": {"name": "python", "description": "Run Python code.", "parameters": '
    '{"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}}\n'
    '{"type": "function", "function": {"name": "search", "description": "Search the web.", "parameters": '
    '{"type": "object", "properties": {"query": {"type": "string"}, "top_k": {"type": "integer"}}, '
    '"required": ["query"]}}}\n</tools>\n\n'
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """A call as Qwen's template (and a Qwen model) writes it after the turn's text."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def response_text(content: str) -> str:
    """One tool result inside the ``user`` block Qwen renders tool messages in."""
    return f"<tool_response>\n{content}\n</tool_response>"


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


# --------------------------------------------------------------------------- verl agent loop


def write_verl(root: Path) -> Path:
    """``{step}.jsonl`` of verl's agent loop: ``input``/``output`` decoded with ``skip_special_tokens``, so
    the ChatML markers are gone and each role word stands alone on its line; tool results sit in a ``user``
    block.

    Written as the reference's own example is: a newline between ``</tool_call>`` and the ``user`` line.
    """
    prompt_17 = f"system\n{TOOLS_SYSTEM}\nuser\nWhat is 17*23?\nassistant\n"
    cut = "0 1 2 3 4 5 6 7 8 9 " * 6 + "...(truncated)..." + " 990 991 992 993 994 995 996 997 998 999" * 3
    rows = [
        # 0: one call answered, then the answer
        {
            "input": prompt_17,
            "output": "Let me run it.\n"
            + call_text("python", {"code": "print(17*23)"})
            + "\nuser\n"
            + response_text("391")
            + "\nassistant\n#### 391",
        },
        # 1: max_assistant_turns=2 reached: the second turn's call is shown and never run
        {
            "input": f"system\n{TOOLS_SYSTEM}\nuser\nList the numbers below 1000.\nassistant\n",
            "output": "I will print them.\n"
            + call_text("python", {"code": "print(*range(1000))"})
            + "\nuser\n"
            + response_text(cut)
            + "\nassistant\nThe output was cut; once more in pieces.\n"
            + call_text("python", {"code": "print(*range(500))"}),
        },
        # 2: two calls in one turn; max_parallel_calls=1 runs only the first, and it fails
        {
            "input": f"system\n{TOOLS_SYSTEM}\nuser\nWhat is x*3, and who named x?\nassistant\n",
            "output": "I need both.\n"
            + call_text("python", {"code": "print(x * 3)"})
            + "\n"
            + call_text("search", {"query": "who named the variable x"})
            + "\nuser\n"
            + response_text("Error executing tool 'python': NameError: name 'x' is not defined")
            + "\nassistant\nThe tool failed; I cannot tell.",
        },
        # 3: answered without a call: an ordinary single-turn text (the tools system prompt still there)
        {"input": f"system\n{TOOLS_SYSTEM}\nuser\nWhat is 2+2?\nassistant\n", "output": "#### 4"},
    ]
    run = root / "verl"
    for i, row in enumerate(rows):
        row.update(
            {
                "gts": ["391", "0..999", "unknown", "4"][i],
                "score": [1.0, 0.0, 0.0, 1.0][i],
                "step": 3,
                "request_id": f"req-{i}",
            }
        )
    _jsonl(run / "3.jsonl", rows)
    return run


# --------------------------------------------------------------------------- TRL completions Parquet

_ARGUMENTS = pa.struct([("code", pa.string()), ("query", pa.string()), ("top_k", pa.int64())])
_CALL = pa.struct(
    [("type", pa.string()), ("function", pa.struct([("name", pa.string()), ("arguments", _ARGUMENTS)]))]
)
_PROMPT = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
_COMPLETION = pa.list_(
    pa.struct(
        [
            ("role", pa.string()),
            ("content", pa.string()),
            ("tool_calls", pa.list_(_CALL)),
            ("name", pa.string()),
            ("reasoning_content", pa.string()),
        ]
    )
)


def _trl_call(name: str, **arguments: Any) -> dict[str, Any]:
    """A call whose ``arguments`` struct has every tool's parameters: its own set, the others null."""
    return {
        "type": "function",
        "function": {"name": name, "arguments": {"code": None, "query": None, "top_k": None} | arguments},
    }


def _say(
    content: str, *, calls: list[dict[str, Any]] | None = None, reasoning: str | None = None
) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": calls,
        "name": None,
        "reasoning_content": reasoning,
    }


def _tool(name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_calls": None, "name": name, "reasoning_content": None}


def write_trl(root: Path) -> Path:
    """``completions/completions_00001.parquet`` as TRL 1.16 writes a tool run: message lists as Arrow
    structs, the think text apart in ``reasoning_content``, one ``arguments`` struct shared by both tools."""
    prompts = [
        [
            {"role": "system", "content": "You are a careful solver."},
            {"role": "user", "content": "What is 17*23?"},
        ],
        [{"role": "user", "content": "What is the capital of France?"}],
        [{"role": "user", "content": "Compute 2**100, then its digit sum."}],
        [
            {"role": "system", "content": "You are a careful solver."},
            {"role": "user", "content": "What is 2+2?"},
        ],
    ]
    completions = [
        [
            _say(
                "Let me compute.",
                calls=[_trl_call("python", code="print(17*23)")],
                reasoning="pondering the product",
            ),
            _tool("python", "391"),
            _say("#### 391"),
        ],
        [
            _say(
                "",
                calls=[_trl_call("search", query="capital of France", top_k=3)],
                reasoning="pondering where to look",
            ),
            _tool("search", "{'error': 'rate limit exceeded'}"),
            _say("Again.", calls=[_trl_call("search", query="France capital city")]),
            _tool("search", "Paris is the capital of France."),
            _say("Paris"),
        ],
        # max_tool_calling_iterations=1: the second turn's call is left without a tool message
        [
            _say("First the power.", calls=[_trl_call("python", code="print(2**100)")]),
            _tool("python", "1267650600228229401496703205376"),
            _say("Now the digits.", calls=[_trl_call("python", code="print(sum(map(int, str(2**100))))")]),
        ],
        [_say("4", reasoning="pondering small sums")],
    ]
    table = pa.table(
        {
            "step": pa.array([1] * 4, pa.int64()),
            "prompt": pa.array(prompts, _PROMPT),
            "completion": pa.array(completions, _COMPLETION),
            "correctness": pa.array([1.0, 1.0, 0.0, 1.0], pa.float64()),
            "advantage": pa.array([0.5, 0.5, -1.5, 0.5], pa.float64()),
        }
    )
    run = root / "trl" / "completions"  # {output_dir}/completions/: the folder of the run's tables
    run.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, run / "completions_00001.parquet")
    return run


# --------------------------------------------------------------------------- prime-rl / verifiers v1


def _node(message: dict[str, Any], parent: int | None, sampled: bool) -> dict[str, Any]:
    node: dict[str, Any] = {} if parent is None else {"parent": parent}
    return node | {"message": message, "sampled": sampled, "token_ids": [11, 12], "mask": [int(sampled)] * 2}


def _chain(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    """A linear conversation as a node graph: each node's parent is the one before it."""
    return [_node(m, k - 1 if k else None, m["role"] == "assistant") for k, m in enumerate(messages)]


def _episode(
    k: int, nodes: list[dict[str, Any]], finishes: list[str], stop: str | None, score: float
) -> dict:
    """One ``Episode.to_record()``: ``exclude_none``, so a ``stop_condition`` of None is absent."""
    assistants = [i for i, n in enumerate(nodes) if n["message"]["role"] == "assistant"]
    calls = [
        {
            "node": i,
            "model": "qwen3-4b",
            "endpoint": "chat",
            "finish_reason": f,
            "usage": {"prompt_tokens": 20, "completion_tokens": 9},
            "time": 0.4,
        }
        for i, f in zip(assistants, finishes, strict=True)
    ]
    trace: dict[str, Any] = {
        "tools": [{"name": "python"}, {"name": "search"}],
        "nodes": nodes,
        "calls": calls,
        "rewards": {"correct": {"score": score, "weight": 1.0}},
        "metrics": {},
        "info": {},
        "is_completed": True,
        "ok": True,
        "errors": [],
        "timing": {"total": 1.5},
    }
    if stop is not None:
        trace["stop_condition"] = stop
    return {
        "id": f"ep-{k}",
        "env": {"id": "tool-math", "name": "tool-math"},
        "task": {"type": "ToolTask", "data": {}, "key": f"t{k}", "hash": f"h{k}"},
        "group": {"id": f"g{k // 2}"},
        "run": {"work": {"step": 1, "policy": 1}},
        "ok": True,
        "errors": [],
        "traces": [trace],
    }


def _flat(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """verifiers' flat call (no nested ``function``), arguments as JSON text."""
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


def write_prime_rl(root: Path) -> Path:
    """``rollouts/step_1/train/all/traces.jsonl``: message graphs, flat calls, the per-call finish reasons and
    the trace's ``stop_condition`` (absent on the episode cut by length: verifiers reads it from the last
    call)."""
    user = {"role": "user", "content": "What is 17*23?"}
    system = {"role": "system", "content": "Solve with tools."}
    episodes = [
        _episode(
            0,
            _chain(
                system,
                user,
                {
                    "role": "assistant",
                    "reasoning_content": "pondering the product",
                    "tool_calls": [_flat("c1", "python", {"code": "print(17*23)"})],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "391"},
                {"role": "assistant", "content": "#### 391"},
            ),
            ["tool_calls", "stop"],
            "agent_completed",
            1.0,
        ),
        # no stop_condition: the last call finished "length", so the episode was truncated
        _episode(
            1,
            _chain(
                {"role": "user", "content": "Who named Paris?"},
                {
                    "role": "assistant",
                    "content": "Searching.",
                    "tool_calls": [_flat("c1", "search", {"query": "Paris name origin"})],
                },
                {"role": "tool", "tool_call_id": "c1", "name": "search", "content": "The Parisii tribe."},
                {"role": "assistant", "content": "The name comes from the Parisii, a tribe who"},
            ),
            ["tool_calls", "length"],
            None,
            0.0,
        ),
        # max_turns: the refused turn's two calls were never run
        _episode(
            2,
            _chain(
                {"role": "user", "content": "Compute 2**100 and look up who first did."},
                {"role": "assistant", "tool_calls": [_flat("c1", "python", {"code": "print(2**100)"})]},
                {"role": "tool", "tool_call_id": "c1", "content": "1267650600228229401496703205376"},
                {
                    "role": "assistant",
                    "content": "Two more.",
                    "tool_calls": [
                        _flat("c2", "python", {"code": "print(len(str(2**100)))"}),
                        _flat("c3", "search", {"query": "first to compute 2**100"}),
                    ],
                },
            ),
            ["tool_calls", "tool_calls"],
            "max_turns",
            0.0,
        ),
        # single turn: a system prompt, a question, one answer (with its reasoning apart)
        _episode(
            3,
            _chain(
                system,
                {"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": "4", "reasoning_content": "pondering small sums"},
            ),
            ["stop"],
            "agent_completed",
            1.0,
        ),
    ]
    run = root / "prime" / "rollouts"
    _jsonl(run / "step_1" / "train" / "all" / "traces.jsonl", episodes)
    return run


# --------------------------------------------------------------------------- ROLL agentic


def _parts(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


def _openai_call(call_id: str, index: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "index": index,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _columns(run: Path, step: int, data: list[dict[str, Any]], messages: list[Any]) -> None:
    """``rollout_dump_data.step_{N}.jsonl``: ONE object of column lists, the first three cells JSON text."""
    tools = json.dumps([{"type": "function", "function": {"name": n}} for n in ("python", "search")])
    obj = {
        "trajectory_data": [json.dumps(d) for d in data],
        "messages": [json.dumps(m) for m in messages],
        "tools": [tools] * len(data),
        "exp_name": ["agentic-tools"] * len(data),
        "global_step": [step] * len(data),
    }
    run.mkdir(parents=True, exist_ok=True)
    (run / f"rollout_dump_data.step_{step}.jsonl").write_text(json.dumps(obj) + "\n", encoding="utf-8")


def write_roll_proxy(root: Path) -> Path:
    """``ProxyEnvManager``: OpenAI messages with content parts and nested ``function`` calls, results by
    ``tool_call_id`` with a null name, and ``finish_reason`` in the trajectory data (default ``unknown``)."""
    sys_, q = (
        {"role": "system", "content": _parts("Use tools.")},
        {"role": "user", "content": _parts("What is 17*23?")},
    )
    conversations = [
        [
            sys_,
            q,
            {
                "role": "assistant",
                "content": _parts("Running."),
                "tool_calls": [_openai_call("tc-0", 0, "python", {"code": "print(17*23)"})],
            },
            {"role": "tool", "content": _parts("391"), "tool_call_id": "tc-0", "name": None},
            {"role": "assistant", "content": _parts("#### 391")},
        ],
        [
            {"role": "user", "content": _parts("Capital of France, and 2+2?")},
            {
                "role": "assistant",
                "content": _parts("Both at once."),
                "tool_calls": [
                    _openai_call("tc-0", 0, "search", {"query": "capital of France"}),
                    _openai_call("tc-1", 1, "python", {"code": "print(2+2)"}),
                ],
            },
            {
                "role": "tool",
                "content": _parts("Error: the search service timed out"),
                "tool_call_id": "tc-0",
                "name": None,
            },
            {"role": "tool", "content": _parts("4"), "tool_call_id": "tc-1", "name": None},
            {"role": "assistant", "content": _parts("2+2 is 4; the capital I would guess is")},
        ],
        [
            {"role": "user", "content": _parts("Print 2**100.")},
            {
                "role": "assistant",
                "content": _parts(""),
                "tool_calls": [_openai_call("tc-0", 0, "python", {"code": "print(2**100)"})],
            },
            {
                "role": "tool",
                "content": _parts("1267650600228229401496703205376"),
                "tool_call_id": "tc-0",
                "name": None,
            },
            {
                "role": "assistant",
                "content": _parts("Check it."),
                "tool_calls": [_openai_call("tc-1", 0, "python", {"code": "print(2**100 % 7)"})],
            },
        ],
        [
            sys_,
            {"role": "user", "content": _parts("What is 2+2?")},
            {"role": "assistant", "content": _parts("4")},
        ],
    ]
    finishes = ["stop", "length", "unknown", "stop"]
    data = [
        {
            "trajectory_id": f"proxy_0_{k}_1234_{k}_20260819_153610_00000{k}",
            "num_actions": sum(m["role"] == "assistant" for m in chat),
            "reward_info": {"episode_reward": float(k == 0), "step_reward": float(k == 0)},
            "messages": chat,
            "finish_reason": why,
        }
        for k, (chat, why) in enumerate(zip(conversations, finishes, strict=True))
    ]
    run = root / "roll_proxy"
    _columns(run, 2, data, conversations)
    return run


def write_roll_native(root: Path) -> Path:
    """``AgentNativeStepEnvManager``: ``messages`` is ``[[...]]``, the last step's prompt and the reply, each
    reply decoded text with its calls only inside it; ``failure_info.stop_reason`` says why it ended.

    The reference does not say how the prompt keeps earlier tool results; they are written as ``tool``
    messages here (what the env manager hands the template), and the earlier replies as the text they were.
    Rows with a null are dropped by ROLL's writer, so there is one row per trajectory.
    """
    conversations = [
        [
            {"role": "system", "content": "Use tools."},
            {"role": "user", "content": "What is 17*23?"},
            {
                "role": "assistant",
                "content": "I will run it.\n" + call_text("python", {"code": "print(17*23)"}),
            },
            {"role": "tool", "content": "391"},
            {"role": "assistant", "content": "#### 391"},
        ],
        [
            {"role": "user", "content": "Who wrote Candide, and when?"},
            {
                "role": "assistant",
                "content": "Searching.\n" + call_text("search", {"query": "Candide author"}),
            },
            {"role": "tool", "content": "Error: search backend unavailable"},
            {"role": "assistant", "content": "Again.\n" + call_text("search", {"query": "Candide Voltaire"})},
            {"role": "tool", "content": "Candide was written by Voltaire."},
            {
                "role": "assistant",
                "content": "Now the year.\n" + call_text("python", {"code": "print(1700 + 59)"}),
            },
        ],
        [
            {"role": "system", "content": "Use tools."},
            {"role": "user", "content": "Describe the number 7 in depth."},
            {"role": "assistant", "content": "Seven is a prime number, the fourth one, and it appears in"},
        ],
    ]
    stops = ["FINISH", "MAX_STEPS", "MAX_LENGTH"]
    step_rewards = [[0.0, 1.0], [0.0, 0.0, 0.0], [0.0]]
    data = [
        {
            "trajectory_id": f"native_0_{k}_20260819_153610_00000{k}",
            "env_info": {"env_id": k, "group_id": 0, "tag": "native", "seed": 77, "episode_id": 0},
            "length_info": {"num_actions": len(rewards)},
            "reward_info": {"episode_reward": sum(rewards), "step_rewards": rewards},
            "failure_info": {"failure_mode": "", "stop_reason": stop, "has_failure": False},
        }
        for k, (stop, rewards) in enumerate(zip(stops, step_rewards, strict=True))
    ]
    run = root / "roll_native"
    _columns(run, 0, data, [[chat] for chat in conversations])
    return run


# --------------------------------------------------------------------------- NeMo-RL


def _nemo_tokens(trained: list[bool]) -> tuple[list[int], list[int]]:
    """Two token ids per message; the loss mask set on the generations only (one run of ones each)."""
    ids, mask = [], []
    for k, on in enumerate(trained):
        ids += [100 + 2 * k, 101 + 2 * k]
        mask += [int(on)] * 2
    return ids, mask


def _rendered_user(text: str) -> str:
    """A user message rendered by the chat template, ending with the generation prompt."""
    return f"{IM_START}user\n{text}{IM_END}\n{IM_START}assistant\n"


def write_nemo_train(root: Path) -> Path:
    """``train_data_step1.jsonl``: ``content: [[str, ...]]`` without roles, the environment's observation
    after every generation (the last too), the loss mask on the generations."""
    samples = [  # (contents, roles as NeMo-RL built the message log)
        (
            [
                "You are a math tutor.",
                _rendered_user("What is 17*23?"),
                "<code>print(17*23)</code>",
                "<result>\n391\n</result>",
                "#### 391",
                "Environment: correct",
            ],
            ["system", "user", "assistant", "environment", "assistant", "environment"],
        ),
        (
            [_rendered_user("What is 6*7?"), "#### 42", "Environment: correct"],
            ["user", "assistant", "environment"],
        ),
        (
            [
                _rendered_user("What is 1/0?"),
                "<code>print(1/0)</code>",
                "<result>\nZeroDivisionError: division by zero\n</result>",
                "#### undefined",
                "Environment: incorrect",
            ],
            ["user", "assistant", "environment", "assistant", "environment"],
        ),
    ]
    rows = []
    for i, (contents, roles) in enumerate(samples):
        ids, mask = _nemo_tokens([r == "assistant" for r in roles])
        rows.append(
            {
                "content": [contents],
                "rewards": [1.0 if i < 2 else 0.0],
                "input_lengths": [len(ids)],
                "token_ids": [ids],
                "token_loss_mask": [mask],
                "sample_loss_mask": [1.0],
                "generation_logprobs": [[-0.5 if m else 0.0 for m in mask]],
                "idx": i,
            }
        )
    run = root / "nemo_train" / "exp_001"
    _jsonl(run / "train_data_step1.jsonl", rows)
    return run


def write_nemo_val(root: Path) -> Path:
    """``val_data_step2.jsonl`` alone in its folder: ``content: [[{role, content}]]``, roles kept."""
    chats = [
        [
            {"role": "user", "content": _rendered_user("What is 2+2?")},
            {"role": "assistant", "content": "<code>print(2+2)</code>"},
            {"role": "environment", "content": "<result>\n4\n</result>"},
            {"role": "assistant", "content": "#### 4"},
            {"role": "environment", "content": "Environment: correct"},
        ],
        [
            {"role": "system", "content": "You are a math tutor."},
            {"role": "user", "content": _rendered_user("What is 3+4?")},
            {"role": "assistant", "content": "#### 8"},
            {"role": "environment", "content": "Environment: incorrect"},
        ],
    ]
    run = root / "nemo_val" / "exp_001"
    _jsonl(
        run / "val_data_step2.jsonl",
        [{"content": [c], "rewards": [float(i == 0)], "idx": i} for i, c in enumerate(chats)],
    )
    return run


# --------------------------------------------------------------------------- markers kept (SkyRL, AReaL)


def _block(role: str, body: str) -> str:
    return f"{IM_START}{role}\n{body}{IM_END}\n"


def write_skyrl(root: Path) -> Path:
    """``dumped_evals/global_step_10_evals/tool_math.jsonl``: ``tokenizer.decode`` keeps the markers; the
    response is every turn and observation after the prompt, but the last observation; ``stop_reason`` is
    stop or length (a turn-limited end says stop)."""
    head = _block("system", TOOLS_SYSTEM)
    gen = f"{IM_START}assistant\n"
    rows = [
        {
            "input_prompt": head + _block("user", "What is 17*23?") + gen,
            "output_response": "Let me run it.\n"
            + call_text("python", {"code": "print(17*23)"})
            + f"{IM_END}\n"
            + _block("user", response_text("391"))
            + gen
            + f"#### 391{IM_END}",
            "stop_reason": "stop",
            "score": 1.0,
        },
        # max turns: the last call's observation was removed with the last observation
        {
            "input_prompt": _block("user", "Who wrote Candide, and how old was he?") + gen,
            "output_response": "Searching.\n"
            + call_text("search", {"query": "Candide author"})
            + f"{IM_END}\n"
            + _block("user", response_text("Error: search backend unavailable"))
            + gen
            + "Again.\n"
            + call_text("search", {"query": "Candide Voltaire"})
            + f"{IM_END}\n"
            + _block("user", response_text("Voltaire, born 1694, wrote Candide in 1759."))
            + gen
            + "Now his age.\n"
            + call_text("python", {"code": "print(1759 - 1694)"})
            + IM_END,
            "stop_reason": "stop",
            "score": 0.0,
        },
        # cut by length: no end marker after the last words
        {
            "input_prompt": head + _block("user", "Describe the number 7 in depth.") + gen,
            "output_response": "Seven is a prime number, the fourth one, and it appears in",
            "stop_reason": "length",
            "score": 0.0,
        },
    ]
    for row in rows:
        row.update(
            {"env_class": "tools", "data_source": "tool_math", "env_extras": {"data_source": "tool_math"}}
        )
    run = root / "skyrl" / "dumped_evals"
    _jsonl(run / "global_step_10_evals" / "tool_math.jsonl", rows)
    return run


def write_areal(root: Path) -> Path:
    """``rollout/{version}/{task_id}.jsonl``: markers kept; ``MultiTurnWorkflow``'s retry puts the split
    between prompt and completion inside the conversation (after the user's feedback)."""
    gen = f"{IM_START}assistant\n"
    retry_prompt = (
        _block("user", "What is 17*23?")
        + gen
        + f"7{IM_END}\n"
        + _block("user", "Your answer is wrong. Please try again.")
        + gen
    )
    single_prompt = _block("system", "You are a careful solver.") + _block("user", "What is 2+2?") + gen
    for task, prompt, completion, reward in (
        (12, retry_prompt, f"391{IM_END}", 0.5),
        (13, single_prompt, f"The answer is 4.{IM_END}", 1.0),
    ):
        row = {
            "task_id": task,
            "sample_idx": 0,
            "seqlen": (len(prompt) + len(completion)) // 4,
            "prompt_len": len(prompt) // 4,
            "head_version": 3,
            "tail_version": 3,
            "version_rle": [[3, (len(prompt) + len(completion)) // 4]],
            "reward": reward,
            "prompt": prompt,
            "completion": completion,
        }
        _jsonl(root / "areal" / "rollout" / "3" / f"{task}.jsonl", [row])
    return root / "areal" / "rollout"


# --------------------------------------------------------------------------- open-instruct


def write_open_instruct(root: Path) -> Path:
    """``{run}_rollouts_000000.jsonl``: token ids only (no messages), ``finish_reason``, and the tool calls
    counted in ``request_info`` (``tool_call_stats`` one entry per call)."""

    def info(stats: list[tuple[str, bool]], outputs: list[str]) -> dict[str, Any]:
        return {
            "num_calls": len(stats),
            "timeouts": 0,
            "tool_errors": "".join(o for o, (_, ok) in zip(outputs, stats, strict=True) if not ok),
            "tool_outputs": "".join(outputs),
            "tool_runtimes": 0.1 * len(stats),
            "tool_calleds": bool(stats),
            "tool_call_stats": [{"tool_name": n, "success": ok, "runtime": 0.1} for n, ok in stats],
        }

    rows = [
        {
            "finish_reason": "stop",
            "reward": 1.0,
            "request_info": info(
                [("python", True), ("python", False)], ["391", "NameError: name 'x' is not defined"]
            ),
        },
        {"finish_reason": "length", "reward": 0.0, "request_info": info([("search", True)], ["Paris"])},
        {"finish_reason": "stop", "reward": 1.0, "request_info": info([], [])},
    ]
    for i, row in enumerate(rows):
        row.update(
            {
                "step": 1,
                "sample_idx": i,
                "prompt_idx": 0,
                "prompt_tokens": [151644, 872, 198, 3838],
                "response_tokens": [785, 4226, 374, 220, 19 + i],
                "advantage": row["reward"] - 2 / 3,
                "dataset": "tool_math",
                "ground_truth": "391",
                "logprobs": [-0.1] * 5,
            }
        )
    run = root / "open_instruct"
    _jsonl(run / "grpo_tools_rollouts_000000.jsonl", rows)
    return run


WRITERS: dict[str, Callable[[Path], Path]] = {
    "verl": write_verl,
    "trl": write_trl,
    "prime-rl": write_prime_rl,
    "roll-proxy": write_roll_proxy,
    "roll-native": write_roll_native,
    "nemo-train": write_nemo_train,
    "nemo-val": write_nemo_val,
    "skyrl": write_skyrl,
    "areal": write_areal,
    "open-instruct": write_open_instruct,
}
