"""The Patterns page: template families, loops and mixed-script answers of a run with failures planted on
purpose, each opening its samples in the step browser. Expected numbers come from what the planted generator
says it wrote (``Planted``) and from the lines written, never from rl-board's own answer."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from rl_board.rollouts import planted
from rl_board.writer import RolloutWriter
from tests.helpers.apptest import assert_clean, decode, figures, open_page, plain_texts, table, texts, trace

STEPS, SAMPLES = 10, 30
SECOND = "Sure thing, the final answer here is {n} and you can trust me on {n} for certain, no doubt at all."
SECOND_STEPS = range(5, 10)  # two answers per step of a second, smaller family, in a second rank file


@pytest.fixture
def planted_root(tmp_path, serve) -> tuple[Path, planted.Planted]:
    root = tmp_path / "served"
    truth = planted.write(
        root / "planted", steps=STEPS, samples=SAMPLES, seed=2, template=0.5, loops=0.3, mixed=0.3
    )
    with RolloutWriter(root / "planted", rank=1) as writer:  # rank 1 sorts after rank 0: planted indices hold
        for step in SECOND_STEPS:
            for k in range(2):
                writer.write(step, f"extra {k}", SECOND.format(n=step * 10 + k), 0.25)
    planted.write(root / "clean", steps=4, samples=20, seed=3)
    serve(root)
    return root, truth


def lines(root: Path) -> list[dict]:
    """The planted run's lines in the store's order: by step, then file, then line."""
    rows = [
        json.loads(x) for p in sorted((root / "planted").glob("*.jsonl")) for x in p.read_text().splitlines()
    ]
    by_step: dict[int, list] = {}
    for row in rows:
        by_step.setdefault(row["step"], []).append(row)
    return [dict(x, _sample=k) for step in sorted(by_step) for k, x in enumerate(by_step[step])]


def follow(at: AppTest, key: str) -> AppTest:
    """Click a button that opens another page; the router switches on the next run."""
    at.button(key=key).click().run()
    at.switch_page({"Step browser": "views/steps.py", "Sample": "views/sample.py"}[at.title[0].value]).run()
    assert_clean(at)
    return at


def shown_pairs(at: AppTest) -> set[tuple[int, int]]:
    frame = table(at)
    return {(int(s), int(i)) for s, i in zip(frame["step"], frame["sample"], strict=True)}


def test_families_listed_largest_first_with_their_numbers(planted_root):
    root, truth = planted_root
    at = open_page("patterns", run="planted")
    assert_clean(at)
    written = lines(root)
    n = len(written)
    families = next(f.value for f in at.dataframe if "family" in f.value.columns)
    assert families["family"].tolist() == ["T1", "T2"]
    big, small = families.iloc[0], families.iloc[1]
    assert big["answers"] == len(truth.template) and small["answers"] == 2 * len(SECOND_STEPS)
    assert big["share"] == pytest.approx(len(truth.template) / n)
    assert big["first step"] == min(s for s, _ in truth.template) and small["first step"] == SECOND_STEPS[0]
    assert small["last step"] == SECOND_STEPS[-1]
    in_family, in_step = Counter(s for s, _ in truth.template), Counter(x["step"] for x in written)
    assert big["share per step"] == pytest.approx([in_family[s] / in_step[s] for s in range(STEPS)], abs=1e-4)
    assert big["mean reward"] == pytest.approx(1.0) and small["mean reward"] == pytest.approx(0.25)
    members = truth.template | {(s, SAMPLES + k) for s in SECOND_STEPS for k in range(2)}
    rest = [x["reward"] for x in written if (x["step"], x["_sample"]) not in members]
    assert big["others' reward"] == pytest.approx(np.mean(rest))
    assert big["example"].startswith("Great question! Indeed")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Template families"] == "2"
    assert metrics["Loops"] == f"{len(truth.loop)} ({len(truth.loop) / n:.1%})"
    assert metrics["Mixed scripts"] == f"{len(truth.mixed)} ({len(truth.mixed) / n:.1%})"


def test_the_share_curve_and_the_signal_bars_per_step(planted_root):
    root, truth = planted_root
    at = open_page("patterns", run="planted")
    charts = figures(at)
    per_step = [sum(1 for x in lines(root) if x["step"] == s) for s in range(STEPS)]
    t1 = trace(charts["Share of each step's answers, per family"], "T1")
    want = [sum(1 for s, _ in truth.template if s == step) / per_step[step] for step in range(STEPS)]
    assert decode(t1["y"]).tolist() == pytest.approx(want)
    loops = charts["Answers that loop, per step"]["data"][0]
    assert decode(loops["y"]).tolist() == [
        sum(1 for s, _ in truth.loop if s == step) for step in range(STEPS)
    ]
    mixed = charts["Answers that mix scripts, per step"]["data"][0]
    assert decode(mixed["y"]).tolist() == [
        sum(1 for s, _ in truth.mixed if s == step) for step in range(STEPS)
    ]


def _place(head: str) -> tuple[int, int]:
    """(step, sample) from a heading such as "**Latest** · step 9 · sample 4 · reward 1"."""
    parts = head.split(" · ")
    return int(parts[1].removeprefix("step ")), int(parts[2].removeprefix("sample "))


def test_a_family_answers_shown_as_text_beside_two_others(planted_root):
    root, truth = planted_root
    at = open_page("patterns", run="planted")
    heads = {
        t.split(" · ")[0]: _place(t)
        for t in texts(at.markdown)
        if t.startswith(("**Representative**", "**First seen**", "**Latest**"))
    }
    assert len(heads) == 3 and len(set(heads.values())) == 3 and set(heads.values()) <= truth.template
    others = sorted(truth.template - {heads["**Representative**"]})
    assert heads["**First seen**"] == others[0] and heads["**Latest**"] == others[-1]
    codes = plain_texts(at)  # text boxes (st.text), not the code viewer
    written = {(x["step"], x["_sample"]): x["response"] for x in lines(root)}
    for place in heads.values():
        assert written[place] in codes  # the answer itself, as text


def test_a_family_opens_in_the_step_browser_over_all_steps_and_at_a_step(planted_root):
    _, truth = planted_root
    at = open_page("patterns", run="planted")
    follow(at, "family_all")
    assert at.title[0].value == "Step browser"
    assert at.query_params["template"] in ("1", ["1"]) and at.query_params["all_steps"] in ("1", ["1"])
    assert shown_pairs(at) == truth.template
    assert set(table(at)["template"]) == {"T1"}
    assert any(t.startswith(f"**{len(truth.template)}** of ") for t in texts(at.markdown))

    at = open_page("patterns", run="planted", family="2")
    assert any(t.startswith("#### T2 · 10 answers") for t in texts(at.markdown))
    at.selectbox(key="w.step").set_value(7).run()
    follow(at, "family_at_step")
    assert at.query_params["step"] in ("7", ["7"]) and "all_steps" not in at.query_params
    frame = table(at)
    assert frame["sample"].tolist() == [SAMPLES, SAMPLES + 1] and set(frame["template"]) == {"T2"}


def test_loops_and_mixed_scripts_open_in_the_step_browser(planted_root):
    _, truth = planted_root
    at = open_page("patterns", run="planted")
    follow(at, "signal_all_loops")
    assert at.query_params["repetition"] in ("0.5:", ["0.5:"])
    assert shown_pairs(at) == truth.loop
    frame = table(at)
    assert list(frame["repetition"]) == sorted(frame["repetition"], reverse=True)  # the worst loops first

    at = open_page("patterns", run="planted")
    follow(at, "signal_all_mixed_scripts")
    assert at.query_params["scripts"] in ("+", ["+"])
    assert shown_pairs(at) == truth.mixed
    assert all("+" in s for s in table(at)["scripts"])


def test_a_clean_run_has_no_family_no_loop_no_mix(planted_root):
    at = open_page("patterns", run="clean")
    assert_clean(at)
    assert any("No family of near-identical answers" in str(i.value) for i in at.info)
    assert {m.label: m.value for m in at.metric}["Loops"] == "0 (0.0%)"
    assert "No loops in this run." in texts(at.caption)
    assert "No mixed-script answers in this run." in texts(at.caption)


def test_the_health_finding_on_mixed_scripts_opens_just_those_answers(planted_root):
    """The Health link filters the step browser to the mixed answers of its step, not only sorts by
    scripts."""
    _, truth = planted_root
    at = open_page("health")
    assert_clean(at)
    [card] = [t for t in texts(at.markdown) if "use more than one writing system" in t]
    step = int(card.split(" of the answers at step ")[1].split(" ")[0])
    [key] = [
        b.key
        for b in at.button
        if b.key
        and b.key.startswith("hlink.")
        and b.label == f"Open step {step}"
        and any("scripts contains" in c for c in texts(at.caption))
    ]
    at.button(key=key).click().run()
    at.switch_page("views/steps.py").run()
    assert_clean(at)
    assert at.query_params["scripts"] in ("+", ["+"])
    assert at.slider(key="w.step").value == step
    assert {int(i) for i in table(at)["sample"]} == {i for s, i in truth.mixed if s == step}
