"""Chart pages opened from a deep link draw SVG charts and never fetch Plotly (issue 31 part 2: a fresh tab
in <= 2 s; Plotly's script alone cost 1.1-1.3 s of the browser); "Interactive charts" brings Plotly back."""

from __future__ import annotations

import base64
import re

import pytest
from playwright.sync_api import expect

from tests.helpers.screens import save_screenshot
from tests.helpers.streamlit_browser import set_toggle, wait_for_app_idle

pytestmark = pytest.mark.browser

PLOTLY_CHUNK = re.compile(r"PlotlyChart\.[^/]*\.js")


def _plotly_requests(page) -> list[str]:
    found: list[str] = []
    page.on("request", lambda r: found.append(r.url) if PLOTLY_CHUNK.search(r.url) else None)
    return found


@pytest.mark.parametrize(
    ("link", "title"),
    [
        ("/?run=ppo_math", "Reward per step"),
        ("/steps?run=ppo_math&step=3", "Reward per sample"),
    ],
)
def test_a_deep_link_to_a_chart_page_loads_no_plotly(app_page, runs, server, link, title):
    page = app_page
    plotly = _plotly_requests(page)
    runs.goto(server.url + link)
    main = page.get_by_test_id("stMain")
    chart = main.locator(".rlb-chart").filter(has_text=title).first
    expect(chart.locator("img")).to_be_visible()
    wait_for_app_idle(page)
    box = chart.locator("img").bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 100  # drawn at its column's width
    assert chart.locator("img").evaluate("i => i.naturalWidth") > 0  # the SVG decoded
    # hover: one band per x position, titled with every series' value there
    band = chart.locator(".h [title]").nth(2)  # a link on step curves (they open the step), else a band
    assert re.match(r"^(step|sample) \d+\n", band.get_attribute("title") or "")
    band.hover()
    src = chart.locator("img").get_attribute("src") or ""
    svg = base64.b64decode(src.split(",", 1)[1]).decode()
    assert svg.startswith("<svg") and "<text" in svg  # ticks and axis titles in the picture
    assert main.get_by_test_id("stPlotlyChart").count() == 0
    assert not plotly, plotly  # the 4.6 MB Plotly chunk was never asked for
    assert not page.dialogs
    if link.startswith("/?"):
        save_screenshot(page, "overview-deep-link.png")

    # Interactive charts: the same chart with Plotly (zoom, pan, click a point)
    sidebar = page.get_by_test_id("stSidebar")
    set_toggle(runs, sidebar.get_by_test_id("stCheckbox").filter(has_text="Interactive charts"), True)
    expect(main.get_by_test_id("stPlotlyChart").first).to_be_visible()
    wait_for_app_idle(page)
    assert plotly  # now it is loaded
    assert main.locator(".rlb-chart").count() == 0
    assert "interactive_charts=1" in page.url  # kept in the link


def test_a_step_of_an_overview_curve_opens_in_the_step_browser(app_page, runs, server):
    """Without Plotly a curve's step is still a click away: its hover band is a link to the step browser at
    that step, with the run and the view kept, as a deep link opens it."""
    page = app_page
    plotly = _plotly_requests(page)
    runs.goto(server.url + "/?run=ppo_math")
    main = page.get_by_test_id("stMain")
    chart = main.locator(".rlb-chart").filter(has_text="Reward per step").first
    expect(chart.locator("img")).to_be_visible()
    wait_for_app_idle(page)
    band = chart.locator(".h a[title]").nth(7)
    title = band.get_attribute("title") or ""
    found = re.match(r"^step (\d+)\n", title)
    assert found, title
    step = int(found.group(1))
    assert (band.get_attribute("href") or "").startswith("steps?")
    band.click()
    page.wait_for_url(re.compile(r"/steps\?"))
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text(f"samples in step {step}").first).to_be_visible(timeout=30_000)
    wait_for_app_idle(page)
    assert f"step={step}" in page.url and "run=ppo_math" in page.url
    assert not plotly, plotly
    save_screenshot(page, "curve-step-link.png")
