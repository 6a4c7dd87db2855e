"""The token view reruns alone (a fragment): a colour change redraws the chips and keeps the link current."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_colour_change_reruns_the_token_view_and_updates_the_link(app_page, runs, server):
    page = app_page
    runs.goto(f"{server.url}/sample?run=ppo_math&step=7&sample=5")
    expect(page.get_by_text("Top tokens by KL (k3)")).to_be_visible()
    with runs.expect_rerun():
        page.get_by_role("radiogroup", name="Colour tokens by").get_by_role(
            "radio", name="logp", exact=True
        ).click()
    expect(page.get_by_text("Top tokens by log-prob")).to_be_visible()
    expect(page.locator(".rlb-chip").first).to_be_visible()
    expect(page.get_by_text("Step 7 · sample 5")).to_be_visible()  # the rest of the page stays
    page.wait_for_url(re.compile(r"[?&]token_metric=logp(&|$)"))
    assert "run=ppo_math" in page.url and "sample=5" in page.url
    assert page.dialogs == []
