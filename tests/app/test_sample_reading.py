"""The Sample page as a reading surface: the response in the main column (no space for texts the log lacks),
its thinking folded, its final answer first, a very long one in a tall box or whole on request, and the
rendered view (``rendered`` in the URL) shared by the response, the conversation and the trajectory's turns,
model text made safe by ``safe_markdown``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rl_board.rollouts.demo_agent import AgentSpec, write_agent_run
from rl_board.ui.components.text_block import LONG_CHARS
from rl_board.ui.safe_markdown import safe_markdown
from tests.helpers.apptest import assert_clean, open_page, plain_texts, texts
from tests.helpers.markdown_payloads import PAYLOADS

THINKING = "Let me add: $2 + 2 = 4$.\nCheck [again](http://e.example)."
ANSWER = "## Result\n\nThe sum is $4$.\n\n```python\nprint(2 + 2)\n```\n\nSo \\boxed{4}"
HOSTILE = "\n\n".join(PAYLOADS[:20])


def _line(step: int, response: str, **extra: object) -> str:
    record = {"step": step, "prompt": "What is $2+2$?", "response": response, "reward": 1.0}
    return json.dumps(record | extra)


@pytest.fixture
def reading_root(tmp_path: Path, serve) -> Path:
    root = tmp_path / "served"
    run = root / "reading"
    run.mkdir(parents=True)
    lines = [
        _line(0, f"<think>\n{THINKING}\n</think>\n\n{ANSWER}", ground_truth="4"),
        _line(0, HOSTILE),
        _line(0, "word " * (LONG_CHARS // 4) + "\nThe end: \\boxed{7}"),
        _line(0, "<think>thinking that never closes", ref_response="4"),
    ]
    (run / "r.jsonl").write_text("\n".join(lines) + "\n")
    chat = root / "chat"
    chat.mkdir()
    messages = [
        {"role": "user", "content": "2+2? [x](http://e.example)"},
        {"role": "assistant", "content": ANSWER},
    ]
    (chat / "r.jsonl").write_text(json.dumps({"step": 0, "messages": messages, "reward": 1.0}) + "\n")
    write_agent_run(root / "agent", AgentSpec(steps=2, trajectories=3, turns=8, seed=5))
    return serve(root)


def test_the_response_reads_with_its_thinking_folded_and_final_answer_first(reading_root):
    at = open_page("sample", run="reading", step="0", sample="0")
    assert_clean(at)
    headings = texts(at.markdown)
    assert any(t.startswith("**Response** · ") for t in headings)
    assert any(t.startswith("**Ground truth** · ") for t in headings)
    assert not any(t.startswith("**Ref response**") for t in headings)  # not in this log: no space
    assert not any("not in this log" in t for t in texts(at.caption))
    assert ":material/flag: **Final line**" in headings and "· **last \\\\boxed\\{\\}**" in headings
    assert "So \\boxed{4}" in plain_texts(at) and "4" in plain_texts(at)  # the last line, the boxed value
    fold = [e for e in at.expander if str(e.label).startswith("Thinking · ")]
    assert len(fold) == 1 and not fold[0].proto.expanded
    assert str(fold[0].label) == f"Thinking · {len(THINKING)} characters"
    assert ANSWER in plain_texts(at) and THINKING not in plain_texts(at)  # plain text; thinking folded
    assert at.toggle(key="w.rendered").value is False
    at.session_state["response_thinking"] = True  # opened: drawn then
    at.run()
    assert_clean(at)
    assert THINKING in plain_texts(at)


def test_the_rendered_view_from_a_link_and_the_toggle(reading_root):
    at = open_page("sample", run="reading", step="0", sample="0", rendered="1")
    assert_clean(at)
    assert at.toggle(key="w.rendered").value is True
    at.session_state["response_thinking"] = True
    at.run()
    bodies = texts(at.markdown)
    assert safe_markdown(ANSWER) in bodies and safe_markdown(THINKING) in bodies
    assert ANSWER not in plain_texts(at) and THINKING not in plain_texts(at)
    assert "$4$" in bodies  # the boxed final answer, as LaTeX
    at.toggle(key="w.rendered").set_value(False).run()
    assert_clean(at)
    assert ANSWER in plain_texts(at)
    assert at.query_params.get("rendered") in (None, "0", ["0"], [])


def test_hostile_text_in_the_rendered_view_is_made_safe(reading_root):
    at = open_page("sample", run="reading", step="0", sample="1", rendered="1")
    assert_clean(at)
    assert safe_markdown(HOSTILE) in texts(at.markdown)
    assert HOSTILE not in texts(at.markdown)


def test_a_very_long_answer_scrolls_in_a_tall_box_or_shows_whole(reading_root):
    at = open_page("sample", run="reading", step="0", sample="2")
    assert_clean(at)
    whole = at.toggle(key="response_all")
    assert whole.value is False and str(whole.label).startswith("Show all ")
    assert "The end: \\boxed{7}" in plain_texts(at) and "7" in plain_texts(at)  # the final line, first
    whole.set_value(True).run()
    assert_clean(at)


def test_a_thinking_that_never_closes_is_shown_and_said(reading_root):
    at = open_page("sample", run="reading", step="0", sample="3")
    assert_clean(at)
    assert not [e for e in at.expander if str(e.label).startswith("Thinking · ")]
    assert "<think>thinking that never closes" in plain_texts(at)
    assert any(t.startswith("All of it is thinking: its \\<think\\> never closes") for t in texts(at.caption))
    assert any(t.startswith("**Ref response** · ") for t in texts(at.markdown))  # beside it: the log has it


def test_a_conversation_shares_the_rendered_view(reading_root):
    at = open_page("sample", run="chat", step="0", sample="0", rendered="1")
    assert_clean(at)
    bodies = texts(at.markdown)
    assert safe_markdown("2+2? [x](http://e.example)") in bodies  # the user's message, made safe
    assert safe_markdown(ANSWER) in bodies  # the assistant's message
    assert not any("response" in t.lower() for t in texts(at.caption))  # no response field: nothing said


def test_a_trajectory_shares_the_rendered_view_and_keeps_calls_plain(reading_root):
    for step, sample in ((s, k) for s in range(2) for k in range(3)):  # a trajectory that calls a tool
        plain = open_page("sample", run="agent", step=str(step), sample=str(sample))
        if any(t.startswith("{") for t in plain_texts(plain)):
            break
    assert_clean(plain)
    at = open_page("sample", run="agent", step=str(step), sample=str(sample), rendered="1")
    assert_clean(at)
    boxes, bodies = plain_texts(at), texts(at.markdown)
    arguments = [t for t in plain_texts(plain) if t.startswith("{")]
    assert arguments and all(a in boxes for a in arguments)  # tool calls' arguments stay plain text
    moved = [t for t in plain_texts(plain) if t not in boxes]  # the turns' texts: Markdown made safe now
    assert moved and all(safe_markdown(t).strip() in bodies for t in moved)  # (st.markdown strips its body)
