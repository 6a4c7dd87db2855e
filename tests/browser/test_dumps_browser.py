"""A verl dump and a TRL completions table in a real browser: prompt, response and reward in the step
browser and the sample view, and the sidebar saying how each run was read."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.helpers import trainer_dumps as T
from tests.helpers.apptest import APP
from tests.helpers.screens import REPO, save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns, start_streamlit, stop_streamlit

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("dumps") / "logs"
    verl, trl = T.write_verl(root / "verl"), T.write_trl(root / "trl")
    logs = tmp_path_factory.mktemp("dumps-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=REPO,
        env_extra={"RL_BOARD_ROOTS": str(root), "RL_BOARD_CACHE_DIR": str(logs / "cache")},
    )
    yield srv, verl, trl
    stop_streamlit(srv.proc)


@pytest.mark.parametrize(("run", "name"), [("verl", "verl"), ("trl/completions", "trl")])
def test_dump_reads_in_the_browser(chromium_browser, dumps, run, name):
    srv, verl, trl = dumps
    dump = verl if name == "verl" else trl
    step = dump.steps[1]
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    runs = StreamlitRuns(page)
    try:
        runs.goto(f"{srv.url}/steps?run={run}&step={step}&sort=reward&descending=1")
        main = page.get_by_test_id("stMain")
        expect(main.get_by_text(f"of {len(dump.responses[step])} samples in step {step}")).to_be_visible()
        sidebar = page.get_by_test_id("stSidebar")
        expect(sidebar.get_by_text(re.compile(r"Fields: how this run is read"))).to_be_visible()
        save_screenshot(page, f"{name}-step-browser.png")

        # a click on any cell (here the middle of the first row, a text cell) opens that sample
        grid = main.get_by_test_id("stDataFrameResizable").first
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        with runs.expect_rerun():
            page.mouse.click(box["x"] + box["width"] * 0.45, box["y"] + 35 + 17)
        page.wait_for_url(re.compile(r"/sample\?"))
        expect(main.get_by_text(re.compile(rf"Step {step} · sample \d+"))).to_be_visible()

        best = max(range(len(dump.rewards[step])), key=lambda k: dump.rewards[step][k])
        runs.goto(f"{srv.url}/sample?run={run}&step={step}&sample={best}")
        expect(main.get_by_text(f"Step {step} · sample {best}")).to_be_visible()
        code = main.get_by_test_id("stText")
        expect(code.nth(0)).to_contain_text(dump.prompts[step][best].strip().splitlines()[-1][:40])
        expect(code.nth(1)).to_contain_text(dump.responses[step][best].strip().splitlines()[-1][:40])
        reward = main.get_by_test_id("stMetric").filter(has_text="Reward").first
        expect(reward).to_contain_text(f"{dump.rewards[step][best]:.4g}")
        save_screenshot(page, f"{name}-sample.png")
    finally:
        context.close()
