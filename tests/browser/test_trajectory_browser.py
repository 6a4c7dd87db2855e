"""An agent run walked in a real browser: the step browser's trajectory columns and filters, a 20-turn sample
with its tool cards, a failed call found with a jump, the Overview's trajectory curves, and the Tools page
whose example opens its sample at the turn that made the call. Screenshots of each view."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.demo_agent import AgentSpec, write_agent_run
from tests.helpers.apptest import APP
from tests.helpers.screens import REPO, save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns, set_toggle, start_streamlit, stop_streamlit

pytestmark = pytest.mark.browser
SPEC = AgentSpec(steps=12, trajectories=24, turns=20, seed=3)
STEP = 9


def _params(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


@pytest.fixture(scope="module")
def agent_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("agent") / "logs"
    write_agent_run(root / "agent", SPEC)
    write_run(root / "ppo", DemoSpec(steps=4, samples=4, ranks=1, tokens=8))
    logs = tmp_path_factory.mktemp("agent-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=REPO,
        env_extra={"RL_BOARD_ROOTS": str(root), "RL_BOARD_CACHE_DIR": str(logs / "cache")},
    )
    yield srv, root
    stop_streamlit(srv.proc)


@pytest.fixture
def tab(chromium_browser, agent_server):
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1100})
    page = context.new_page()
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    yield page, StreamlitRuns(page)
    context.close()


def _lines(root) -> list[dict]:
    """The agent run's lines of STEP in the store's order (files, then lines)."""
    lines = [
        json.loads(x) for p in sorted((root / "agent").glob("*.jsonl")) for x in p.read_text().splitlines()
    ]
    return [x for x in lines if x["step"] == STEP]


def _failed(x: dict) -> bool:
    return any(m["role"] == "tool" and m["content"].startswith(("Error", "Traceback")) for m in x["messages"])


def _click_row(page, runs, row: int, table: int = 0) -> None:
    grid = page.get_by_test_id("stMain").get_by_test_id("stDataFrameResizable").nth(table)
    grid.scroll_into_view_if_needed()
    expect(grid.locator('[data-testid="glide-cell-1-0"]')).to_be_attached()
    box = grid.bounding_box()  # a canvas: click the row's selection marker
    with runs.expect_rerun():
        page.mouse.click(box["x"] + 18, box["y"] + 35 * (row + 1) + 17)


def test_a_trajectory_walked_in_the_browser(tab, agent_server):
    page, runs = tab
    srv, root = agent_server
    main = page.get_by_test_id("stMain")
    lines = _lines(root)
    want = [k for k, x in enumerate(lines) if _failed(x) and x["finish_reason"] in ("stop", "length")]

    # the step browser: trajectory columns, filtered to failed calls that stopped or ran out of tokens
    runs.goto(
        f"{srv.url}/steps?run=agent&step={STEP}&tool_errors=1&finish_reason=stop,length&sort=turns"
        "&descending=1"
    )
    expect(
        main.get_by_text(f"{len(want)} of {len(lines)} samples in step {STEP} match the filters")
    ).to_be_visible()
    longest = max(want, key=lambda k: (len(lines[k]["messages"]), -k))
    expect(page.locator('[data-testid="glide-cell-1-0"]')).to_have_text(str(longest))
    expect(page.locator('[data-testid="glide-cell-2-0"]')).to_have_text(str(len(lines[longest]["messages"])))
    save_screenshot(page, "trajectory-steps.png")

    # the panel opened by hand stays open while filters come and go (it folded when the last one went)
    runs.goto(f"{srv.url}/steps?run=agent&step={STEP}")
    main.get_by_text("Filter and search").click()
    toggle = main.get_by_text("Any tool error", exact=True)
    for on in (True, False, True):
        set_toggle(runs, main.get_by_test_id("stCheckbox").filter(has_text="Any tool error"), on)
        expect(toggle).to_be_visible()
    with runs.expect_rerun():
        main.get_by_role("button", name="Clear filters").click()
    expect(toggle).to_be_visible()
    runs.goto(
        f"{srv.url}/steps?run=agent&step={STEP}&tool_errors=1&finish_reason=stop,length&sort=turns"
        "&descending=1"
    )

    # a row opens the sample: the conversation turn by turn, tool calls as cards with their results
    _click_row(page, runs, 0)
    page.wait_for_url(re.compile(r"/sample\?"))
    assert _params(page)["sample"] == str(longest)
    messages = lines[longest]["messages"]
    expect(main.get_by_text(re.compile(rf"^Conversation · {len(messages)} turns"))).to_be_visible()
    first_call = next(m for m in messages if m.get("tool_calls"))["tool_calls"][0]["function"]
    expect(
        main.get_by_text(re.compile(r"^result · turn \d+|^error · result in turn \d+")).first
    ).to_be_visible()
    expect(main.get_by_text(first_call["name"], exact=True).first).to_be_visible()
    expect(page.locator(".rlb-turn").first).to_be_visible()  # the chips split at turns
    save_screenshot(page, "trajectory-sample.png")

    # the jump to the next failed call focuses that turn and shows its error
    error_turn = next(
        k
        for k, m in enumerate(messages)
        if m["role"] == "tool" and m["content"].startswith(("Error", "Traceback"))
    )
    with runs.expect_rerun():
        main.get_by_role("button", name="Next error ▶").click()
    expect(main.get_by_text(f"Next tool error: turn {error_turn}.")).to_be_visible()
    assert _params(page)["turn"] == str(error_turn)
    focused = page.locator(".st-key-turn_focus")
    expect(focused).to_contain_text(f"turn {error_turn}")
    expect(focused).to_contain_text("error")
    expect(focused.get_by_test_id("stText").first).to_contain_text(
        messages[error_turn]["content"].splitlines()[0]
    )

    # the Overview: turns, tool calls, tool error rate and finish reasons per step
    runs.goto(f"{srv.url}/?run=agent")
    for title in (
        "Turns per trajectory",
        "Tool calls per trajectory",
        "Tool error rate per step",
        "Why trajectories ended, per step",
    ):
        expect(main.get_by_text(title)).to_be_visible()
    save_screenshot(page, "trajectory-overview.png")

    # the Tools page: an example call opens its sample at the turn that made it
    runs.goto(f"{srv.url}/tools?run=agent&step={STEP}")
    expect(main.get_by_text("Calls per step, per tool")).to_be_visible()
    save_screenshot(page, "tools.png")
    _click_row(page, runs, 0, table=1)
    page.wait_for_url(re.compile(r"/sample\?"))
    params = _params(page)
    turn = int(params["turn"])
    assert params["step"] == str(STEP) and lines[int(params["sample"])]["messages"][turn].get("tool_calls")
    expect(page.locator(".st-key-turn_focus")).to_contain_text(f"turn {turn}")
    assert page.dialogs == []
