"""Only the token holder sees the runs, in a real browser (issue 32): each case in a fresh browser context
(its own cookies), on the session's server, which has a token (conftest.py).

Without the token, and with a wrong one, the page says how to get in and shows nothing of the runs. With
the right one the runs show, the token leaves the address bar, and a deep link without it opens in the same
browser, also when the link is followed from another site (the cookie is SameSite=Strict: the refusal page
asks once more from the server's own origin)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

import rl_board
from tests.helpers.screens import SHOTS, save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns

pytestmark = pytest.mark.browser

RUNS = ("ppo_math", "eval_math", "hostile", "growing")
DEEP = "/sample?run=ppo_math&step=7&sample=5"


@pytest.fixture(scope="module")
def question(browser_root, tmp_path_factory) -> str:
    """The question of the deep link's sample, as its prompt holds it (after the system prompt)."""
    run = rl_board.open(browser_root / "ppo_math", cache_dir=tmp_path_factory.mktemp("cache"))
    frame = run.samples(step=7)
    prompt = str(frame.loc[frame["sample"] == 5, "prompt"].iloc[0])
    found = re.search(r"What is \d+ \+ \d+\?", prompt)
    assert found, prompt
    return found[0]


def fresh_tab(chromium_browser):
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    return context, context.new_page()


def shoot(page, name: str) -> None:
    """A screenshot of a page that is not the app (``save_screenshot`` waits for the app to render)."""
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


def assert_refused(page, question: str) -> None:
    """The plain page: how to get in, no run name, no sample text (neither shown nor in the HTML)."""
    page.wait_for_timeout(500)  # the page asks once more by itself (a link from another site): let it
    page.wait_for_load_state("load")
    expect(page.get_by_role("heading", name="This rl-board server needs its token")).to_be_visible()
    text, html = page.locator("body").inner_text(), page.content()
    assert "?token=" in text
    for name in (*RUNS, question, "What is"):
        assert name not in text and name not in html, name
    assert page.locator('[data-testid="stApp"]').count() == 0


def test_without_the_token_nothing_of_the_runs_shows(chromium_browser, server, question):
    context, page = fresh_tab(chromium_browser)
    try:
        for path in ("/", "/?run=ppo_math", DEEP):
            response = page.goto(server.url + path)
            assert response.status == 403
            assert_refused(page, question)
        shoot(page, "token-missing.png")
    finally:
        context.close()


def test_a_wrong_token_is_refused_like_none(chromium_browser, server, question):
    context, page = fresh_tab(chromium_browser)
    try:
        for wrong in (server.token[:-1], server.token + "0", "nope"):
            page.goto(f"{server.url}{DEEP}&token={wrong}")
            assert_refused(page, question)
            assert context.cookies() == []
        shoot(page, "token-wrong.png")
    finally:
        context.close()


def test_the_token_lets_this_browser_in_and_deep_links_work_after(chromium_browser, server, question):
    context, page = fresh_tab(chromium_browser)
    runs = StreamlitRuns(page)
    try:
        runs.goto(server.login_url)  # the address the server printed
        assert page.url == server.url + "/"  # the token left the address bar
        sidebar = page.get_by_test_id("stSidebar")
        expect(page.get_by_text("Choose a run in the sidebar")).to_be_visible()
        sidebar.get_by_test_id("stSelectbox").filter(has_text="Run").click()
        expect(page.get_by_role("option", name=re.compile(r"^ppo_math"))).to_be_visible()
        page.keyboard.press("Escape")
        save_screenshot(page, "token-in.png")
        (cookie,) = [c for c in context.cookies() if c["name"].startswith("rl-board-")]  # besides Streamlit's
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
        assert cookie["name"].startswith(f"rl-board-{server.port}-") and server.token not in cookie["value"]

        runs.goto(server.url + DEEP)  # a deep link without the token, in the same browser
        expect(page.get_by_text("Step 7 · sample 5")).to_be_visible()
        expect(page.get_by_text(question, exact=False).first).to_be_visible()
        assert "token" not in page.url
        save_screenshot(page, "token-deep-link.png")
    finally:
        context.close()


def test_a_deep_link_followed_from_another_site_opens(chromium_browser, server, question):
    """A SameSite=Strict cookie is not sent when a link on another site is followed: the refusal page asks
    once more from this server's origin, and the cookie goes with that."""
    context, page = fresh_tab(chromium_browser)
    runs = StreamlitRuns(page)
    try:
        runs.goto(server.login_url)
        context.route(
            "http://chat.example/**",
            lambda route: route.fulfill(
                content_type="text/html", body=f'<a id="link" href="{server.url}{DEEP}">the sample</a>'
            ),
        )
        page.goto("http://chat.example/")
        answers = []
        page.on("response", lambda r: answers.append(r.status) if r.url == server.url + DEEP else None)
        with runs.expect_rerun(timeout_ms=60_000):
            page.locator("#link").click()
        expect(page.get_by_text("Step 7 · sample 5")).to_be_visible()
        expect(page.get_by_text(question, exact=False).first).to_be_visible()
        assert answers == [403, 200]  # refused without the cookie, let in when asked again from here
    finally:
        context.close()
