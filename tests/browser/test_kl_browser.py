"""The KL estimator in a real browser: switched to k2 in the sidebar, the overview's KL curve and the
sample page's KL cards and token colours follow, and the link carries it."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from rl_board.rollouts.store import RolloutStore
from tests.helpers.screens import SHOTS, save_screenshot
from tests.helpers.streamlit_browser import pick_radio

pytestmark = pytest.mark.browser


def _params(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def test_switching_to_k2_redraws_the_kl_everywhere(app_page, runs, server, browser_root, tmp_path):
    page = app_page
    runs.goto(f"{server.url}/?run=ppo_math")
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text("KL (k3) to the reference per step")).to_be_visible()

    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Display settings").click()
    pick_radio(runs, sidebar.get_by_role("radiogroup", name="KL estimator"), "k2 · ½·r²")
    expect(main.get_by_text("KL (k2) to the reference per step")).to_be_visible()
    expect(main.get_by_text("KL (k3) to the reference per step")).to_have_count(0)
    page.wait_for_url(re.compile(r"[?&]kl_estimator=k2(&|$)"))
    save_screenshot(page, "kl-k2-overview.png")
    radios = sidebar.get_by_role("radiogroup", name="KL estimator")
    if not radios.is_visible():
        sidebar.get_by_text("Display settings").click()
    expect(radios.get_by_role("radio", name="k2 · ½·r²")).to_be_checked()
    sidebar.get_by_test_id("stExpander").filter(has_text="Display settings").screenshot(
        path=str(SHOTS / "kl-k2-sidebar.png")
    )

    store = RolloutStore.open(browser_root / "ppo_math", cache_dir=tmp_path / "cache")
    mean = store.samples(step=7, columns=["kl_k2_mean"])["kl_k2_mean"].iloc[5]
    runs.goto(f"{server.url}/sample?run=ppo_math&step=7&sample=5&kl_estimator=k2")
    expect(page.get_by_text("Top tokens by KL (k2)")).to_be_visible()
    card = main.get_by_test_id("stMetric").filter(has_text="KL (k2, mean)")
    expect(card).to_contain_text(f"{mean:.4g}")
    expect(main.get_by_test_id("stMetric").filter(has_text="KL (k3, mean)")).to_have_count(0)
    chip = page.locator(".rlb-chip").first
    expect(chip).to_be_visible()
    assert "kl_k2 = " in chip.get_attribute("title")  # hover lists every estimate
    assert _params(page)["kl_estimator"] == "k2" and page.dialogs == []
    save_screenshot(page, "kl-k2-sample.png")
