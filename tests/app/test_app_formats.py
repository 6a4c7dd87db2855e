"""Trainers' dumps in the pages: a verl dump and a TRL table show prompt, response and reward; a root
with nothing readable says so and lists what it found."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import agentic_dumps, agentic_text_dumps
from tests.helpers import trainer_dumps as T
from tests.helpers.apptest import assert_clean, open_page, plain_texts, svg_charts, table, texts


@pytest.fixture
def dumps_root(tmp_path: Path, serve) -> Path:
    root = tmp_path / "served"
    T.write_verl(root / "verl")
    T.write_trl(root / "trl")
    serve(root)
    return root


@pytest.mark.parametrize(("run", "step"), [("verl", "2"), ("trl/completions", "2")])
def test_step_browser_shows_prompt_response_reward(dumps_root: Path, run: str, step: str) -> None:
    at = open_page("steps", run=run, step=step)
    assert_clean(at)
    frame = table(at)
    assert {"prompt", "response", "reward"} <= set(frame.columns)
    assert frame["response"].notna().all() and frame["reward"].notna().all()
    read_as = [c for c in texts(at.sidebar.caption) if c.startswith("Read as")]
    assert read_as and ("verl rollout dump" in read_as[0] or "TRL completions" in read_as[0])


def test_sample_view_of_a_verl_dump(dumps_root: Path) -> None:
    at = open_page("sample", run="verl", step="2", sample="0")
    assert_clean(at)
    codes = plain_texts(at)
    assert len(codes) >= 3 and all(codes[:2])  # prompt and response as plain text
    assert any(m.label == "Reward" for m in at.metric)
    assert not any("not in this log" in t for t in texts(at.caption)[:2])


def test_trl_reward_components_are_columns(dumps_root: Path) -> None:
    at = open_page("steps", run="trl/completions", step="2")
    frame = table(at)
    assert {"accuracy_reward", "think_format_reward", "advantage"} <= set(frame.columns)


def test_rollouts_left_out_of_training_are_shown_with_their_reason(tmp_path: Path, serve) -> None:
    """prime-rl's all/ beside effective/: every episode is a row, the dropped ones say why."""
    expected = agentic_dumps.write_prime_rl(tmp_path / "served" / "out")
    serve(tmp_path / "served")
    at = open_page("steps", run="out/rollouts", step="1")
    assert_clean(at)
    frame = table(at)
    want = [w for w in expected if w.step == 1]
    assert len(frame) == len(want) and {"kept", "dropped_reason"} <= set(frame.columns)
    dropped = frame[~frame["kept"].astype(bool)]
    assert len(dropped) == sum(w.kept is False for w in want) > 0
    assert (
        dropped["dropped_reason"].notna().all()
        and frame.loc[frame["kept"].astype(bool), "dropped_reason"].isna().all()
    )


def test_fields_panel_says_how_turns_were_split(tmp_path: Path, serve) -> None:
    """verl's agent-loop dump decodes without chat markers: the Fields panel says the turns came from role
    lines."""
    agentic_text_dumps.write_verl_agent_loop(tmp_path / "served" / "verl")
    serve(tmp_path / "served")
    at = open_page("steps", run="verl")
    assert_clean(at)
    said = [t for t in texts(at.sidebar.caption) if t.startswith("Turns split from the chat text of")]
    assert said and "role lines" in said[0], texts(at.sidebar.caption)


def test_root_with_nothing_readable_says_so(tmp_path: Path, serve) -> None:
    T.write_junk(tmp_path / "junk")
    serve(tmp_path / "junk")
    at = open_page(None)
    assert_clean(at)
    assert any("no rollout run rl-board can read" in t for t in texts(at.warning))
    listed = [df.value for df in at.dataframe]
    assert any("model.pkl" in set(df.iloc[:, 0]) for df in listed if len(df.columns) == 2)
    health = open_page("health")
    assert_clean(health)
    assert any("No rule was run" in t for t in texts(health.warning))


def test_main_reward_can_be_switched_from_the_sidebar(dumps_root: Path) -> None:
    at = open_page("steps", run="verl", step="2")
    before = table(at)
    at.sidebar.selectbox(key="fieldmap.reward").set_value("acc").run()
    assert_clean(at)
    assert at.query_params["fields"] in ("reward=acc", ["reward=acc"])
    after = table(at)
    assert sorted(after["reward"]) == sorted(before["acc"].astype(float))
    assert any("acc → reward" in c for c in texts(at.sidebar.caption))
    at.sidebar.selectbox(key="fieldmap.reward").set_value("(as read)").run()
    assert sorted(table(at)["reward"]) == sorted(before["reward"])


def test_a_link_carries_the_field_map(dumps_root: Path) -> None:
    at = open_page("steps", run="verl", step="2", fields="reward=acc")
    assert_clean(at)
    frame = table(at)
    assert set(frame["reward"]) <= {0.0, 1.0}


def test_reward_components_have_curves_and_a_filter(dumps_root: Path) -> None:
    at = open_page(None, run="trl/completions")
    assert_clean(at)
    chart = svg_charts(at)["Reward components per step"]  # an SVG chart: its legend names each part
    assert "accuracy_reward" in chart and "think_format_reward" in chart
    steps = open_page(
        "steps", run="trl/completions", step="2", filter_column="accuracy_reward", filter_range="1:"
    )
    assert_clean(steps)
    frame = table(steps)
    assert len(frame) and (frame["accuracy_reward"] >= 1).all()
    everything = open_page("steps", run="trl/completions", step="2")
    assert len(table(everything)) > len(frame)


def test_token_ids_page_says_how_to_get_text(tmp_path: Path, serve) -> None:
    T.write_nemo_rl(tmp_path / "served" / "nemo")
    serve(tmp_path / "served")
    at = open_page("sample", run="nemo/exp_001", step="1", sample="0")
    assert_clean(at)
    assert any("--tokenizer PATH" in t for t in texts(at.info))


def test_sample_view_shows_the_reward_components(dumps_root: Path) -> None:
    at = open_page("sample", run="trl/completions", step="2", sample="0")
    assert_clean(at)
    labels = {m.label for m in at.metric}
    assert {"Reward", "accuracy_reward", "think_format_reward", "advantage"} <= labels


def test_reward_weights_are_set_in_the_fields_panel(dumps_root: Path) -> None:
    """TRL's reward functions are the reward's parts; a weight typed in the Fields panel remakes the
    reward."""
    at = open_page("steps", run="trl/completions", step="20")
    assert_clean(at)
    box = at.sidebar.text_input(key="fieldmap.reward_sum")
    assert box.value == "accuracy_reward + think_format_reward"
    before = table(at)
    box.input("accuracy_reward + 0.5*think_format_reward").run()
    assert_clean(at)
    assert "reward=accuracy_reward + 0.5*think_format_reward" in at.query_params["fields"]
    after = table(at)
    parts = after[["accuracy_reward", "think_format_reward"]].to_numpy(dtype=float)
    for (acc, fmt), reward in zip(parts, after["reward"], strict=True):
        terms = [v for v in (acc, 0.5 * fmt) if v == v]  # NaN parts skipped
        assert (reward != reward) if not terms else abs(reward - sum(terms)) < 1e-9
    assert len(after) == len(before)


def test_a_conversational_trl_sample_shows_its_conversation(tmp_path: Path, serve) -> None:
    root = tmp_path / "served"
    T.write_trl(root / "chat", conversational=True)
    serve(root)
    at = open_page("sample", run="chat/completions", step="20", sample="0")
    assert_clean(at)
    assert any(t.startswith("**Conversation**") for t in texts(at.markdown))
    # the answer thinks first: its reasoning is kept apart, so the sample is shown turn by turn, reasoning
    # folded
    roles = [m.split("**")[1] for m in texts(at.markdown) if " · turn " in m]
    assert roles[:2] == ["user", "assistant"] or roles[:3] == ["system", "user", "assistant"], roles
    folded = [e for e in at.expander if str(e.label).startswith("Reasoning · ")]
    assert folded and all(not e.proto.expanded for e in folded)
