"""Run TRL's GRPOTrainer agent loop (``tools=`` and ``environment_factory=``) on CPU with a scripted policy.

Usage: ``python -m tests.real.trainers.trl_tools OUT``. A random tiny model never calls a tool, so only the
policy's tokens are scripted: the real ``model.generate`` gets one extra ``LogitsProcessor`` that forces, for
each row, the tokens of the scripted assistant turn its prompt is at (scenario found from the user text, turn
from the number of assistant headers). Everything else is TRL's own code: the Qwen3 chat template and response
parser (``reasoning_content``, ``tool_calls``), the tool loop (real Python tools, errors, unknown tools,
``max_tool_calling_iterations``), the completion budget, and the ``completions/`` Parquet it writes.
rl-board's ``RLBoardCallback`` writes a second copy of the rollouts.

Two runs land in ``OUT/tools/`` and ``OUT/environment/``. ``OUT/truth.json`` holds, per run, step and sample,
the messages the script meant (roles, reasoning, calls with the arguments the model wrote, results, errors,
unanswered calls) and the finish cause in rl-board's vocabulary; the runner fails if TRL recorded anything
else.
"""

from __future__ import annotations

import ast
import json
import operator
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.real.trainers import specs, tiny

MAX_ITERATIONS = 2  # GRPOConfig.max_tool_calling_iterations
MAX_COMPLETION = 200  # tokens of the whole multi-turn completion (tool results included)
NUM_GENERATIONS = 2


# --------------------------------------------------------------------------- the tools the policy calls


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression of numbers and + - * /.

    Args:
        expression: The expression to evaluate, e.g. 17+25.
    """
    ops: dict[type, Callable[[Any, Any], Any]] = {
        ast.Add: operator.add,
        ast.Sub: operator.sub,
        ast.Mult: operator.mul,
        ast.Div: operator.truediv,
    }

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"unsupported expression: {expression}")

    result = value(ast.parse(expression, mode="eval").body)  # 1/0 raises ZeroDivisionError
    return str(int(result) if float(result).is_integer() else result)


FACTS = {
    "sky": "The sky is blue.",
    "sea": "The sea is salty.",
    "wind": "Air moves from high to low pressure.",
}


def lookup(term: str) -> str:
    """Look a term up in a small encyclopedia.

    Args:
        term: The term to look up, e.g. sky.
    """
    return FACTS[term]


class Ledger:
    """An environment for ``environment_factory``: a running total the policy changes through ``add``."""

    def reset(self, **kwargs: Any) -> str:
        self.total = 0
        return " The ledger starts at 0."  # TRL appends it to the user message

    def add(self, amount: int) -> str:
        """Add an amount to the ledger.

        Args:
            amount: How much to add.
        """
        if amount < 0:  # a tool error inside an environment
            raise ValueError(f"cannot add {amount}: amounts are positive")
        self.total += amount
        return f"total {self.total}"

    def get_reward(self) -> float:
        return float(self.total)


# --------------------------------------------------------------------------- the script


@dataclass(frozen=True)
class Turn:
    """One scripted assistant turn: optional thinking, text, then tool calls (name, arguments as written)."""

    reasoning: str | None = None
    answer: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()

    def text(self) -> str:
        """The turn as the Qwen3 template renders it, ended by ``<|im_end|>`` (the tokenizer's eos)."""
        parts = [
            f"<think>\n{self.reasoning}\n</think>\n\n" if self.reasoning is not None else "",
            self.answer,
        ]
        for k, (name, arguments) in enumerate(self.calls):
            call = json.dumps({"name": name, "arguments": arguments})
            parts.append(("\n" if self.answer or k else "") + f"<tool_call>\n{call}\n</tool_call>")
        return "".join(parts) + tiny.IM_END


@dataclass(frozen=True)
class Scenario:
    """A prompt and the turns the policy plays for it; ``finish`` is the cause the trajectory must end
    with."""

    name: str
    user: str
    turns: tuple[Turn, ...]
    finish: str
    system: bool = False


LONG = "Wind blows because air moves from high pressure to low pressure, again and again. " * 12
TOOL_SCENARIOS = (
    Scenario(
        "calc",
        "Add seventeen and twenty-five.",
        system=True,
        finish="stop",
        turns=(
            Turn("I need to add 17 and 25.", calls=(("calculator", {"expression": "17+25"}),)),
            Turn("The tool says 42.", "17 + 25 = 42."),
        ),
    ),
    Scenario(
        "pair",
        "Tell me a fact about the sky and six times seven.",
        finish="stop",
        turns=(
            Turn(
                "I need a fact and a product.",
                calls=(("lookup", {"term": "sky"}), ("calculator", {"expression": "6*7"})),
            ),
            Turn(None, "The sky is blue and 6*7 is 42."),
        ),
    ),
    Scenario(
        "unknown",
        "What is the weather in Paris?",
        system=True,
        finish="stop",
        turns=(
            Turn("Maybe a weather tool exists.", "Let me check.", calls=(("weather", {"city": "Paris"}),)),
            Turn("There is no such tool.", "I cannot check the weather."),
        ),
    ),
    Scenario(
        "raises",
        "Divide one by zero.",
        finish="stop",
        turns=(
            Turn("The calculator can try it.", calls=(("calculator", {"expression": "1/0"}),)),
            Turn(None, "Division by zero is undefined."),
        ),
    ),
    Scenario(
        "direct",
        "Say hello.",
        system=True,
        finish="stop",
        turns=(Turn("This needs no tool.", "Hello! Nice to meet you."),),
    ),
    Scenario("plain", "Name a colour.", finish="stop", turns=(Turn(None, "Blue."),)),
    Scenario(
        "budget",
        "Keep checking the sea.",
        system=True,
        finish="tool_budget",
        turns=tuple(
            Turn(f"Check the sea, try {k}.", calls=(("lookup", {"term": "sea"}),))
            for k in range(MAX_ITERATIONS + 1)
        ),
    ),
    Scenario(
        "length",
        "Why does the wind blow?",
        finish="length",
        turns=(
            Turn("Look it up first.", calls=(("lookup", {"term": "wind"}),)),
            Turn("Now explain at length.", LONG),
        ),
    ),
)
ENV_SCENARIOS = (
    Scenario(
        "env_add",
        "Add two to the ledger.",
        system=True,
        finish="stop",
        turns=(Turn("Two it is.", calls=(("add", {"amount": 2}),)), Turn(None, "The total is 2.")),
    ),
    # Not {"amount": "many"}: TRL 1.16 then fails to write its Parquet (one ``arguments`` field, int and str
    # values).
    Scenario(
        "env_bad",
        "Take three from the ledger.",
        finish="stop",
        turns=(
            Turn("Adding minus three should do.", calls=(("add", {"amount": -3}),)),
            Turn("It failed.", "I could not add that."),
        ),
    ),
)


@dataclass(frozen=True)
class Run:
    """One GRPOTrainer run: its scenarios (one dataset row each), tools or environment, batch and steps."""

    name: str
    scenarios: tuple[Scenario, ...]
    steps: int
    environment: bool = False

    @property
    def batch(self) -> int:
        return len(self.scenarios) * NUM_GENERATIONS  # every prompt in every step

    def tools(self) -> dict[str, Callable[..., Any]]:
        """The tools one trajectory sees (a freshly reset ledger for the environment run)."""
        if not self.environment:
            return {"calculator": calculator, "lookup": lookup}
        ledger = Ledger()
        ledger.reset()
        return {"add": ledger.add}


RUNS = (
    Run(specs.TRL_TOOLS_RUNS[0], TOOL_SCENARIOS, steps=3),
    Run(specs.TRL_TOOLS_RUNS[1], ENV_SCENARIOS, steps=2, environment=True),
)


def scenario_of(scenarios: tuple[Scenario, ...], text: str) -> Scenario:
    """The scenario whose user text is in ``text`` (a decoded prompt, or a logged user message)."""
    found = [s for s in scenarios if s.user in text]
    if len(found) != 1:
        raise AssertionError(f"{len(found)} scenarios match {text[-200:]!r}")
    return found[0]


# --------------------------------------------------------------------------- forcing the policy's tokens


def scripted_generate(lm: Any, tok: Any, scenarios: tuple[Scenario, ...]) -> None:
    """Wrap ``lm.generate`` (the real one runs) so each row is forced to emit its scripted turn, then eos."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    eos = tok.eos_token_id
    cache: dict[str, list[int]] = {}

    def target(prefix: str) -> list[int]:
        scenario = scenario_of(scenarios, prefix)
        turn = prefix.count(f"{tiny.IM_START}assistant") - 1  # the generation prompt is the last header
        if turn >= len(scenario.turns):
            return [eos]
        text = scenario.turns[turn].text()
        if text not in cache:
            cache[text] = tok(text, add_special_tokens=False)["input_ids"]
        return cache[text]

    class Forced(LogitsProcessor):
        """Every score -inf except the row's next scripted token (eos once its turn is written)."""

        def __init__(self, targets: list[list[int]], start: int) -> None:
            self.targets, self.start = targets, start

        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            at = input_ids.shape[1] - self.start
            forced = torch.full_like(scores, float("-inf"))
            for row, ids in enumerate(self.targets):
                forced[row, ids[at] if at < len(ids) else eos] = 0.0
            return forced

    real = lm.generate

    def generate(*args: Any, input_ids: torch.Tensor, **kwargs: Any) -> Any:
        targets = [target(tok.decode(row.tolist())) for row in input_ids]
        kwargs["logits_processor"] = LogitsProcessorList([Forced(targets, input_ids.shape[1])])
        return real(*args, input_ids=input_ids, **kwargs)

    lm.generate = generate


# --------------------------------------------------------------------------- what the script means


def expected_messages(scenario: Scenario, tools: dict[str, Callable[..., Any]]) -> list[dict[str, Any]]:
    """The completion's messages as TRL's loop would build them from the script (before any length cut)."""
    out: list[dict[str, Any]] = []
    for k, turn in enumerate(scenario.turns):
        calls = [{"name": n, "arguments": a, "answered": k < MAX_ITERATIONS} for n, a in turn.calls]
        out.append(
            {"role": "assistant", "content": turn.answer, "reasoning": turn.reasoning, "tool_calls": calls}
        )
        if not calls or k >= MAX_ITERATIONS:
            break
        for name, arguments in turn.calls:
            try:  # TRL's loop: an unknown tool raises ValueError, any failure becomes str({"error": ...})
                if name not in tools:
                    raise ValueError(f"Tool {name} not found.")
                content, error = str(tools[name](**arguments)), False
            except Exception as exc:
                content, error = str({"error": str(exc)}), True
            out.append({"role": "tool", "name": name, "content": content, "error": error})
    return out


def _plain(value: Any) -> Any:
    """A Parquet value as plain Python (numpy arrays -> lists), struct padding (None fields) dropped."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def recorded_messages(completion: Any) -> list[dict[str, Any]]:
    """TRL's logged completion in the truth's shape (reasoning, calls with their non-null arguments)."""
    out: list[dict[str, Any]] = []
    for m in _plain(completion):
        if m["role"] == "tool":
            out.append({"role": "tool", "name": m.get("name"), "content": m.get("content")})
            continue
        calls = [
            {"name": c["function"]["name"], "arguments": c["function"].get("arguments", {})}
            for c in m.get("tool_calls") or ()
        ]
        out.append(
            {
                "role": m["role"],
                "content": m.get("content"),
                "reasoning": m.get("reasoning_content"),
                "tool_calls": calls,
            }
        )
    return out


def truth_for(
    scenario: Scenario, tools: dict[str, Callable[..., Any]], prompt: Any, completion: Any, truncated: bool
) -> dict[str, Any]:
    """One sample's truth: the script's messages, checked against what TRL recorded; raises if they differ."""
    want = expected_messages(scenario, tools)
    got = recorded_messages(completion)
    where = f"scenario {scenario.name}"
    assert [m["role"] for m in got] == [m["role"] for m in want], (where, got, want)
    for g, w in zip(got, want, strict=True):
        if w["role"] == "tool":
            assert (g["name"], g["content"]) == (w["name"], w["content"]), (where, g, w)
            continue
        assert g["reasoning"] == w["reasoning"], (where, g, w)
        assert [(c["name"], c["arguments"]) for c in g["tool_calls"]] == [
            (c["name"], c["arguments"]) for c in w["tool_calls"]
        ], (where, g, w)
        if scenario.finish == "length" and g is got[-1]:
            assert g["content"] != w["content"] and w["content"].startswith(g["content"]), (
                where,
                g["content"],
            )
            w["content"] = g["content"]  # what is left of the cut turn
        assert g["content"] == w["content"], (where, g, w)
    # The cause from TRL's own record: its completion ids end without eos (cut by the budget), or its last
    # assistant turn still calls tools (the loop stopped at max_tool_calling_iterations), or it answered.
    recorded = "length" if truncated else "tool_budget" if got[-1]["tool_calls"] else "stop"
    assert recorded == scenario.finish, (where, recorded, scenario.finish)
    messages = [{"role": m["role"], "content": m["content"]} for m in _plain(prompt)] + want
    for m in messages:
        if m["role"] in ("system", "user"):
            m.update(reasoning=None, tool_calls=[])
    return {"scenario": scenario.name, "finish_reason": scenario.finish, "messages": messages}


# --------------------------------------------------------------------------- the runs


def tokenizer() -> Any:
    """tiny's byte-level BPE with TRL's Qwen3 chat template and ``<|im_end|>`` as eos (as Qwen3's), so TRL
    sets up its own response parser for tool calls. Trained on the rendered conversations of the script (tool
    schemas included) so prompts and turns take few tokens."""
    from trl.chat_template_utils import qwen3_chat_template

    def made(corpus: list[str], size: int) -> Any:
        tok = tiny.tokenizer(corpus, vocab_size=size, all_bytes=True)
        tok.eos_token = tiny.IM_END
        tok.chat_template = qwen3_chat_template
        return tok

    draft = made(tiny.CORPUS, 300)
    corpus = []
    for run in RUNS:
        for s in run.scenarios:
            turns = [{"role": "assistant", "content": t.text().removesuffix(tiny.IM_END)} for t in s.turns]
            chat = [*prompt_of(s), *turns, {"role": "tool", "content": " ".join(FACTS.values())}]
            corpus.append(draft.apply_chat_template(chat, tools=list(run.tools().values()), tokenize=False))
    return made(corpus, 1200)


def prompt_of(scenario: Scenario) -> list[dict[str, str]]:
    return ([{"role": "system", "content": specs.SYSTEM}] if scenario.system else []) + [
        {"role": "user", "content": scenario.user}
    ]


def dataset(run: Run) -> Any:
    from datasets import Dataset

    return Dataset.from_dict({"prompt": [prompt_of(s) for s in run.scenarios]})


def train(run: Run, out: Path) -> dict[str, Any]:
    """Train ``run`` into ``out``; returns the truth of every logged sample and facts about the run."""
    import pyarrow.parquet as pq
    from trl import GRPOConfig, GRPOTrainer

    from rl_board.integrations.trl import RLBoardCallback

    started = time.perf_counter()
    tok = tokenizer()
    lm = tiny.model(tok, specs.SEED)
    # The tools' schemas make the prompt long: room for it plus the completion (TRL drops a tool result that
    # would reach the model's maximum length, and rotary embeddings have no table to outgrow).
    lm.config.max_position_embeddings = 1024
    scripted_generate(lm, tok, run.scenarios)
    # Per generation batch, per row: its user text and whether its completion ids end without eos.
    truncated: list[list[tuple[str, bool]]] = []

    def scripted_reward(
        prompts: list[Any], completions: list[Any], completion_ids: list[list[int]], **kwargs: Any
    ) -> list[float]:
        """Counts the completion's tool results; records which rows the budget cut (for the truth)."""
        truncated.append(
            [
                (p[-1]["content"], not ids or ids[-1] != tok.eos_token_id)
                for p, ids in zip(prompts, completion_ids, strict=True)
            ]
        )
        return [float(sum(m.get("role") == "tool" for m in c)) for c in completions]

    arguments = {
        **specs.grpo_arguments(),
        "num_generations": NUM_GENERATIONS,
        "per_device_train_batch_size": run.batch,
        "max_completion_length": MAX_COMPLETION,
        "max_steps": run.steps,
        "save_strategy": "no",
        "max_tool_calling_iterations": MAX_ITERATIONS,
    }
    config = GRPOConfig(**arguments, output_dir=str(out), report_to="none")
    extra: dict[str, Any] = (
        {"environment_factory": Ledger} if run.environment else {"tools": [calculator, lookup]}
    )
    trainer = GRPOTrainer(
        model=lm,
        reward_funcs=[scripted_reward],
        args=config,
        train_dataset=dataset(run),
        processing_class=tok,
        **extra,
    )
    callback = RLBoardCallback(out / specs.CALLBACK_DIR).attach(trainer)
    trainer.train()
    seconds = time.perf_counter() - started

    files = sorted((out / "completions").glob("completions_*.parquet"))
    assert len(files) == run.steps == len(truncated), (files, len(truncated))
    steps: dict[str, list[dict[str, Any]]] = {}
    for path, cut in zip(files, truncated, strict=True):
        frame = pq.read_table(path).to_pandas()
        step = int(frame["step"].iloc[0])
        assert len(frame) == len(cut) == run.batch, (path, len(frame), len(cut))
        samples = []
        for i, row in frame.iterrows():
            user = [m["content"] for m in row["prompt"] if m["role"] == "user"][-1]
            assert cut[i][0] == user, (
                path,
                i,
                cut[i][0],
                user,
            )  # the reward saw the rows in the logged order
            scenario = scenario_of(run.scenarios, user)
            sample = truth_for(scenario, run.tools(), row["prompt"], row["completion"], cut[i][1])
            samples.append({"sample": int(i), **sample})
        steps[str(step)] = samples
    assert callback.problems == 0 and callback.samples_written == run.steps * run.batch, callback.last_problem
    return {
        "completions": f"{run.name}/completions",
        "callback": f"{run.name}/{specs.CALLBACK_DIR}",
        "reward_funcs": list(trainer.reward_func_names),
        "seconds": round(seconds, 2),
        "steps": steps,
    }


def main(argv: list[str]) -> int:
    import torch
    import trl

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.set_num_threads(1)
    root = Path(argv[0])
    started = time.perf_counter()
    truth: dict[str, Any] = {
        "trl": trl.__version__,
        "max_tool_calling_iterations": MAX_ITERATIONS,
        "max_completion_length": MAX_COMPLETION,
        "runs": {},
    }
    for run in RUNS:
        truth["runs"][run.name] = train(run, root / run.name)
    truth["seconds"] = round(time.perf_counter() - started, 2)
    (root / specs.TRL_TOOLS_TRUTH).write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
