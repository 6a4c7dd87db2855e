"""The main journey in a real browser: start page → run → step from the curve → sort by KL →
top sample → token view. Plus deep links and hostile text."""

from __future__ import annotations

import csv
import json
import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from rl_board.rollouts.store import RolloutStore
from tests.helpers.screens import save_screenshot
from tests.helpers.streamlit_browser import choose_option, set_toggle

pytestmark = pytest.mark.browser


def _params(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def test_journey_to_the_tokens_that_carry_the_kl(app_page, runs, server, browser_root, tmp_path):
    page = app_page
    runs.goto(server.url)
    expect(page.get_by_text("Choose a run in the sidebar")).to_be_visible()
    save_screenshot(page, "start.png")

    # choose the training run
    choose_option(
        page,
        runs,
        page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Run"),
        re.compile(r"^ppo_math"),
    )
    expect(page.get_by_text("Reward per step")).to_be_visible()
    assert _params(page)["run"] == "ppo_math"
    expect(page.locator(".rlb-chart img").first).to_be_visible()  # SVG charts by default
    assert page.get_by_test_id("stPlotlyChart").count() == 0
    save_screenshot(page, "overview.png")

    # open a step from the reward curve: Plotly charts on, click the last point of the reward mean line
    sidebar = page.get_by_test_id("stSidebar")
    set_toggle(runs, sidebar.get_by_test_id("stCheckbox").filter(has_text="Interactive charts"), True)
    assert _params(page)["interactive_charts"] == "1"
    chart = page.get_by_test_id("stPlotlyChart").first
    points = chart.locator(".scatterlayer .trace .points path")
    expect(points.first).to_be_attached()
    with runs.expect_rerun():
        points.nth(29).click(force=True)  # the reward trace is the first with markers
    page.wait_for_url(re.compile(r"/steps\?"))
    step = int(_params(page)["step"])
    assert 0 <= step < 30
    expect(page.get_by_test_id("stMain").get_by_test_id("stSlider")).to_contain_text(str(step))
    set_toggle(runs, sidebar.get_by_test_id("stCheckbox").filter(has_text="Interactive charts"), False)

    # sort by KL, descending
    choose_option(
        page,
        runs,
        page.get_by_test_id("stSelectbox").filter(has_text="Sort by"),
        re.compile(r"^KL \(k3, mean\)$"),
        typed="KL (k3, mean)",
    )
    with runs.expect_rerun():
        page.get_by_test_id("stCheckbox").filter(has_text="Descending").locator("label").click()
    assert _params(page)["sort"] == "kl_mean" and _params(page)["descending"] == "1"
    store = RolloutStore.open(browser_root / "ppo_math", cache_dir=tmp_path / "cache")
    top = int(store.samples(step=step, sort_by="kl_mean", descending=True)["sample"].iloc[0])
    expect(page.locator('[data-testid="glide-cell-1-0"]')).to_have_text(str(top))
    save_screenshot(page, "step-browser.png")

    # open the top sample by selecting the first row of the table
    grid = page.get_by_test_id("stMain").get_by_test_id("stDataFrameResizable").first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()  # the grid is a canvas: click the first row's selection marker
    with runs.expect_rerun():
        page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)
    page.wait_for_url(re.compile(r"/sample\?"))
    assert _params(page)["sample"] == str(top) and _params(page)["step"] == str(step)
    expect(page.get_by_text(f"Step {step} · sample {top}")).to_be_visible()

    # the token view: chips coloured by KL, hover titles with every metric, top tokens
    chips = page.locator(".rlb-chip")
    expect(chips.first).to_be_visible()
    assert chips.count() > 3
    assert "kl = " in chips.first.get_attribute("title")
    expect(page.get_by_text("Top tokens by KL (k3)")).to_be_visible()
    save_screenshot(page, "sample.png")
    assert page.dialogs == []


def test_deep_link_opens_the_same_view_in_a_new_tab(app_page, runs, server):
    page = app_page
    runs.goto(f"{server.url}/sample?run=ppo_math&step=7&sample=5&token_metric=logp")
    expect(page.get_by_text("Step 7 · sample 5")).to_be_visible()
    expect(page.get_by_text("Top tokens by log-prob")).to_be_visible()
    runs.goto(
        f"{server.url}/steps?run=ppo_math&step=20&search=Great&all_steps=1&kl=0.1:&sort=kl_mean&descending=1"
    )
    expect(page.get_by_text(re.compile(r"of 720 samples in all steps match the filters"))).to_be_visible()
    expect(page.get_by_role("textbox", name="Search prompt, response and ground truth")).to_have_value(
        "Great"
    )
    save_screenshot(page, "search-all-steps.png")
    runs.goto(f"{server.url}/steps?run=eval_math&step=400&sort=reward&descending=1")
    expect(page.get_by_text("12 of 12 samples in step 400")).to_be_visible()
    expect(page.get_by_role("combobox", name="Step (irregular spacing)")).to_have_value("400")
    save_screenshot(page, "eval-step-browser.png")

    # the export holds the filtered table in the chosen order
    with page.expect_download() as download:
        page.get_by_role("button", name="Export CSV").click()
    assert download.value.suggested_filename == "eval_math-step400.csv"
    with open(download.value.path(), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    rewards = [float(r["reward"]) for r in rows]
    assert len(rows) == 12 and rewards == sorted(rewards, reverse=True)


def test_bad_link_is_a_message(app_page, runs, server):
    page = app_page
    runs.goto(f"{server.url}/sample?run=../../etc&step=abc")
    expect(page.get_by_text(re.compile("Refused run"))).to_be_visible()
    expect(page.get_by_text(re.compile("must be a whole number"))).to_be_visible()
    assert page.get_by_test_id("stException").count() == 0


def test_hostile_text_never_runs(app_page, runs, server):
    page = app_page
    runs.goto(f"{server.url}/sample?run=hostile&step=0&sample=0")
    expect(page.locator(".rlb-chip").first).to_be_visible()
    expect(page.get_by_text("# Big heading", exact=False)).to_be_visible()  # Markdown shown as text
    page.locator(".rlb-chip").nth(2).hover()
    page.wait_for_timeout(300)
    assert page.evaluate("window.__xss") is None
    assert page.dialogs == []
    assert page.locator("main img[src='x']").count() == 0
    assert page.get_by_role("heading", name="Big heading").count() == 0


def test_follow_new_data_redraws_when_the_trainer_appends(app_page, runs, server, browser_root):
    page = app_page
    runs.goto(f"{server.url}/?run=growing")
    expect(page.get_by_text("8 samples · 2 steps").first).to_be_visible()
    with runs.expect_rerun():
        page.get_by_test_id("stSidebar").get_by_text("Follow new data").click()
    record = {"step": 2, "prompt": "p", "response": "r", "reward": 0.5}
    with (browser_root / "growing" / "rollout_data_rank_0.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")
    expect(page.get_by_text("9 samples · 3 steps").first).to_be_visible(timeout=20_000)
