"""A TRL tool run in a real browser: a turn's reasoning folded under its answer and opened, and a call the
loop never ran (max_tool_calling_iterations) marked unanswered, with the trajectory counted as cut by the
budget. Screenshots of each."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.agentic_shapes import write_trl
from tests.helpers.apptest import APP
from tests.helpers.screens import REPO, save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns, start_streamlit, stop_streamlit

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def trl_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("reasoning") / "logs"
    write_trl(root)
    logs = tmp_path_factory.mktemp("reasoning-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=REPO,
        env_extra={"RL_BOARD_ROOTS": str(root), "RL_BOARD_CACHE_DIR": str(logs / "cache")},
    )
    yield srv
    stop_streamlit(srv.proc)


@pytest.fixture
def tab(chromium_browser, trl_server):
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1100})
    page = context.new_page()
    yield page, StreamlitRuns(page)
    context.close()


def test_reasoning_folded_then_opened(tab, trl_server):
    page, runs = tab
    main = page.get_by_test_id("stMain")
    runs.goto(f"{trl_server.url}/sample?run=trl/completions&step=1&sample=0")
    expect(main.get_by_text("Conversation · 5 turns", exact=False)).to_be_visible()
    fold = main.get_by_test_id("stExpander").filter(has_text="Reasoning · 21 characters")
    expect(fold).to_be_visible()
    thought = main.get_by_text("pondering the product", exact=True)
    expect(thought).to_be_hidden()  # folded: the answer's text first
    expect(main.get_by_text("Let me compute.", exact=True)).to_be_visible()
    save_screenshot(page, "reasoning-folded.png")
    fold.locator("summary").click()  # opened in the browser: no rerun
    expect(thought).to_be_visible()
    fold.scroll_into_view_if_needed()
    save_screenshot(page, "reasoning-open.png")


def test_an_unanswered_call_is_marked(tab, trl_server):
    page, runs = tab
    main = page.get_by_test_id("stMain")
    runs.goto(f"{trl_server.url}/sample?run=trl/completions&step=1&sample=2")
    save_screenshot(page, "unanswered-call.png")
    expect(main.get_by_text("finish reason: tool_budget", exact=False)).to_be_visible()
    why = main.get_by_text("the loop stopped before running it", exact=False)
    expect(why).to_have_count(1)
    expect(main.get_by_text("unanswered", exact=False).first).to_be_visible()
    why.scroll_into_view_if_needed()
    save_screenshot(page, "unanswered-call.png")
