"""A sweep in a real browser: the Metrics page lists every run and draws the first one's charts while
the index of all runs fills in the background (worker processes), then shows each run's tag count."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from rl_board.metrics.parallel import MIN_PARALLEL
from tests.helpers.apptest import APP
from tests.helpers.screens import save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns, start_streamlit, stop_streamlit

pytestmark = pytest.mark.browser

RUNS = MIN_PARALLEL + 16  # enough for the index to be read by worker processes
TAGS = 4


@pytest.fixture(scope="module")
def sweep_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep-root")
    for r in range(RUNS):
        folder = root / "sweep" / f"seed_{r:03d}"
        folder.mkdir(parents=True)
        writer = EventFileWriter(str(folder))
        for step in range(30):
            values = [
                summary_pb2.Summary.Value(tag=f"train/m{k}", simple_value=float(k + step + r))
                for k in range(TAGS)
            ]
            writer.add_event(
                event_pb2.Event(step=step, wall_time=float(step), summary=summary_pb2.Summary(value=values))
            )
        writer.close()
    logs = tmp_path_factory.mktemp("sweep-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=APP.parents[2],
        env_extra={"RL_BOARD_ROOTS": str(root), "RL_BOARD_CACHE_DIR": str(logs / "cache")},
    )
    yield srv
    stop_streamlit(srv.proc)


def test_sweep_lists_runs_at_once_and_gains_tag_counts(chromium_browser, sweep_server):
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    try:
        runs = StreamlitRuns(page)
        runs.goto(sweep_server.url)
        with runs.expect_rerun():
            page.get_by_test_id("stSidebarNav").get_by_role("link", name="Metrics").click()
        main = page.get_by_test_id("stMain")
        expect(main.get_by_text(f"Metric runs ({RUNS})")).to_be_visible()
        expect(main.locator(".rlb-chart img").first).to_be_visible(timeout=30_000)
        assert main.locator(".rlb-chart").count() == TAGS  # the one chosen run's tags, as SVG charts
        # the background index completes and the page redraws once by itself: the chosen run's chip
        # now says how many tags it holds
        expect(main.get_by_text(re.compile(rf"seed_000 · TensorBoard · {TAGS} tags"))).to_be_visible(
            timeout=90_000
        )
        expect(main.get_by_text("Indexing metric runs")).to_have_count(0)
        save_screenshot(page, "metrics-sweep.png")
    finally:
        context.close()
