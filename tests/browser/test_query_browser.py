"""The SQL page in a real browser: a query from a link, an example click, and a row click that opens the
sample."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, quote, urlparse

import pytest
from playwright.sync_api import expect

from rl_board.rollouts.store import RolloutStore
from tests.helpers.screens import save_screenshot

pytestmark = pytest.mark.browser

TOP = (
    "SELECT step, sample, kl_mean, left(response, 60) AS response FROM samples ORDER BY kl_mean DESC LIMIT 10"
)


def _params(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def test_query_then_open_a_row(app_page, runs, server, browser_root, tmp_path):
    page = app_page
    main = page.get_by_test_id("stMain")
    store = RolloutStore.open(browser_root / "ppo_math", cache_dir=tmp_path / "cache")
    top = store.samples(sort_by="kl_mean", descending=True, limit=1).iloc[0]

    runs.goto(f"{server.url}/query?run=ppo_math&sql={quote(TOP)}")
    expect(main.get_by_text("10 rows in")).to_be_visible()
    expect(page.locator('[data-testid="glide-cell-1-0"]').last).to_have_text(str(int(top["step"])))
    save_screenshot(page, "sql.png")

    grid = main.get_by_test_id("stDataFrameResizable").last
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()  # a canvas: click the first row's selection marker
    with runs.expect_rerun():
        page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)
    page.wait_for_url(re.compile(r"/sample\?"))
    assert _params(page)["step"] == str(int(top["step"])) and _params(page)["sample"] == str(
        int(top["sample"])
    )
    expect(page.get_by_text(f"Step {int(top['step'])} · sample {int(top['sample'])}")).to_be_visible()


def test_example_click_and_error(app_page, runs, server):
    page = app_page
    main = page.get_by_test_id("stMain")
    runs.goto(f"{server.url}/query?run=ppo_math")
    with runs.expect_rerun():
        main.get_by_role("button", name="Reward by step").click()
    expect(main.get_by_text("30 rows in")).to_be_visible()
    assert _params(page)["sql"].startswith("SELECT step, count(*)")

    box = main.get_by_role("textbox", name="SQL (DuckDB)")
    box.fill("SELECT * FROM read_csv('/etc/passwd')")
    with runs.expect_rerun():
        main.get_by_role("button", name="Run").click()
    expect(main.get_by_text(re.compile("disabled by configuration")).first).to_be_visible()
    assert page.get_by_test_id("stException").count() == 0
