"""What a page asks of a run comes through one generic way: the question registry (``rollouts/questions.py``)
answers every question on real runs, equal to the store's own answer, and ``ui/cached.py`` keeps no one-line
pass-through wrapper per question."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rl_board import api
from rl_board.errors import InvalidArgumentError
from rl_board.formats import fields as F
from rl_board.rollouts.questions import QUESTIONS

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "rollout_samples"
CACHED = ROOT / "rl_board" / "ui" / "cached.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, api.RolloutStore]:
    """The bundled runs and a synthetic agent run (tools, turns), opened through one cache."""
    tmp = tmp_path_factory.mktemp("questions")
    api.write_agent_run(tmp / "agent", api.AgentSpec(steps=3, trajectories=4, turns=8, ranks=1))
    paths = {p.name: p for p in sorted(SAMPLES.iterdir()) if p.is_dir()}
    paths["agent"] = tmp / "agent"
    return {name: api.open_run(path, api.Served(tmp / "cache")) for name, path in paths.items()}


def example_params(question: str, store: api.RolloutStore, labels_file: Path) -> dict[str, Any]:
    """A value for every parameter of a question (a new parameter name needs one here)."""
    prompts = store.samples(columns=["prompt"])["prompt"] if store.has("prompt") else pd.Series(["none"])
    examples: dict[str, Any] = {
        "step": store.steps[-1],
        "columns": ("reward", "n_tokens", "turns"),
        "threshold": None,
        "prompt": str(prompts.iloc[0]),
        "kl": F.kl_estimator("k2"),
        "labels_file": str(labels_file),
    }
    names = list(inspect.signature(QUESTIONS[question].answer).parameters)[1:]
    missing = [n for n in names if n not in examples]
    assert not missing, f"give the test an example of {missing} (question {question!r})"
    return {name: examples[name] for name in names}


def test_every_question_answers_on_every_bundled_run(
    runs: dict[str, api.RolloutStore], tmp_path: Path
) -> None:
    assert len(QUESTIONS) >= 15 and api.QUESTIONS is QUESTIONS
    labels = api.LabelStore(tmp_path / "labels.sqlite")
    for run, store in runs.items():
        labels.put(**store.label_key(step=store.steps[0], index=0), tag="loop")
        for name, question in QUESTIONS.items():
            assert question.name == name and question.doc, name
            answer = api.ask(store, name, **example_params(name, store, labels.path))
            assert answer is None or isinstance(answer, (pd.DataFrame, tuple, float)), (run, name)


def test_answers_are_the_stores_own(runs: dict[str, api.RolloutStore], tmp_path: Path) -> None:
    store = runs["grpo_math"]
    pd.testing.assert_frame_equal(api.ask(store, "step_summary"), store.step_summary())
    pd.testing.assert_frame_equal(api.ask(store, "groups", step=2), store.groups(step=2))
    assert api.ask(store, "reward_threshold") == store.reward_threshold()
    frame = api.ask(store, "step_frame", step=2, columns=("reward", "no_such_column"))
    assert "reward" in frame.columns and "no_such_column" not in frame.columns and set(frame["step"]) == {2}
    prompt = str(store.samples(step=2, columns=["prompt"])["prompt"].iloc[0])
    history = api.ask(store, "prompt_history", prompt=prompt, kl=F.kl_estimator("k2"))
    pd.testing.assert_frame_equal(history, store.prompt_history(prompt=prompt, kl="kl_k2_mean"))
    calls = api.ask(runs["agent"], "tool_calls", step=1)
    assert isinstance(calls, pd.DataFrame) and len(calls) == runs["agent"].tool_calls(step=1).num_rows


def test_labels_questions_are_keyed_by_the_labels_file_version(
    runs: dict[str, api.RolloutStore], tmp_path: Path
) -> None:
    store, labels = runs["ppo_math"], api.LabelStore(tmp_path / "labels.sqlite")
    version = api.question("labels").version
    assert version is not None
    before = version(store, labels_file=str(labels.path))
    labels.put(**store.label_key(step=store.steps[0], index=1), tag="good")
    assert version(store, labels_file=str(labels.path)) != before
    tags = api.ask(store, "tags_by_sample", labels_file=str(labels.path))
    assert tags["tags"].tolist() == ["good"]


def test_an_unknown_question_names_the_known_ones(runs: dict[str, api.RolloutStore]) -> None:
    with pytest.raises(InvalidArgumentError, match="step_summary"):
        api.ask(runs["ppo_math"], "no_such_question")


def test_the_kl_estimator_travels_as_an_object() -> None:
    """A frozen dataclass: hashable and equal by value (a cache keys on it); the field catalogue takes it."""
    k2 = F.kl_estimator("k2")
    assert hash(k2) == hash(F.kl_estimator("k2")) and k2 == F.kl_estimator("k2")
    assert F.as_kl("kl_mean", k2) == "kl_k2_mean" == F.as_kl("kl_mean", "k2")
    assert F.table_columns(k2) == F.table_columns("k2") and F.step_cards(k2) == F.step_cards("k2")
    assert F.filter_field("kl", {"kl_mean", "kl_k2_mean"}, k2) == F.sample("kl_k2_mean")


def _is_pass_through(function: ast.FunctionDef) -> bool:
    """A body (after its docstring) that is only ``return _store.<name>(...)`` (or ``...(...).<more>()``)."""
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return False
    node: ast.expr = body[0].value
    while isinstance(node, (ast.Call, ast.Attribute)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id == "_store"


def test_cached_has_no_pass_through_wrappers() -> None:
    tree = ast.parse(CACHED.read_text(encoding="utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert any(f.name == "ask" for f in functions)
    wrappers = [f.name for f in functions if _is_pass_through(f)]
    assert not wrappers, f"ask the run through cached.ask and a question in rollouts/questions.py: {wrappers}"
    one_liner = ast.parse("def x(run_path, signature, _store):\n    return _store.prompts()\n").body[0]
    assert isinstance(one_liner, ast.FunctionDef) and _is_pass_through(one_liner)  # the check sees one


def test_pages_ask_through_the_generic_way() -> None:
    """No page calls a per-question wrapper of ``cached`` (the names the wrappers had)."""
    gone = {
        "column_summary",
        "groups",
        "prompts",
        "mismatch_summary",
        "length_distribution",
        "group_stats",
        "run_max_reward",
        "step_summary",
        "step_frame",
        "trajectory_summary",
        "tools_summary",
        "tool_calls",
        "pattern_families",
        "family_shares",
        "signals_by_step",
        "run_labels",
        "tags_by_sample",
    }
    offenders = []
    for path in (ROOT / "rl_board" / "ui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "cached"
                and node.attr in gone
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: cached.{node.attr}")
    assert not offenders, offenders
