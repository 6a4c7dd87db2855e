"""Metrics and Health in a real browser: a DI-engine experiment (the real one when present), a
TensorBoard run and rollout runs under one root; a health finding's link opens the step browser."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from rl_board.rollouts.demo import DemoSpec, write_run
from tests.helpers.apptest import APP
from tests.helpers.metric_fixtures import write_di_engine_folder, write_tensorboard_run
from tests.helpers.screens import save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns, start_streamlit, stop_streamlit

pytestmark = pytest.mark.browser

REAL_DI_ENGINE = Path(__file__).resolve().parents[2].parent / "shared/real-logs/di-engine-mappo-ant"


@pytest.fixture(scope="module")
def metrics_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("metrics-browser-root")
    if REAL_DI_ENGINE.is_dir():
        shutil.copytree(REAL_DI_ENGINE, root / "di-engine-mappo-ant")
    else:
        write_di_engine_folder(root / "di-engine-mappo-ant", iterations=12)
    write_tensorboard_run(root / "tb" / "trl_ppo", steps=60, unstable=True)
    write_run(root / "ppo_math", DemoSpec(steps=30, samples=24))
    logs = tmp_path_factory.mktemp("metrics-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=APP.parents[2],
        env_extra={  # the project's config.toml
            "RL_BOARD_ROOTS": str(root),
            "RL_BOARD_CACHE_DIR": str(logs / "cache"),
        },
    )
    yield srv
    stop_streamlit(srv.proc)


@pytest.fixture
def page(chromium_browser, metrics_server, request):
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    pg = context.new_page()
    yield pg
    context.close()
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        print(metrics_server.log_path.read_text()[-5000:])


def _nav(page, runs: StreamlitRuns, name: str) -> None:
    with runs.expect_rerun():
        page.get_by_test_id("stSidebarNav").get_by_role("link", name=name).click()


def test_metrics_and_health_pages(page, metrics_server):
    runs = StreamlitRuns(page)
    runs.goto(metrics_server.url)
    _nav(page, runs, "Metrics")
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading", name="Evaluator reward")).to_be_visible()
    expect(main.get_by_text("Each dot is one evaluation episode")).to_be_visible()
    charts = main.locator(".rlb-chart")  # SVG charts (no Plotly by default)
    # the episodes chart and one page (up to 12) of the first open group
    # the page reruns once more when the background run index completes: wait for what it settles on
    if REAL_DI_ENGINE.is_dir():
        expect(charts).to_have_count(13)
    else:
        expect(charts.nth(1)).to_be_visible()
        assert charts.count() <= 13
    assert main.get_by_test_id("stPlotlyChart").count() == 0
    assert main.locator(".rlb-chart .h i[title]").count() > 12  # hover bands: a series' values per step

    # narrow the tags: the groups holding reward tags stay, open (few tags), one chart per tag
    search = main.get_by_label("Filter tags")
    search.fill("reward")
    with runs.expect_rerun():
        search.press("Enter")
    # the run counted above may be one the page started before the filter reached it: wait for a summary
    # of at most one page of tags (the unfiltered real run has more)
    summary = main.get_by_text(re.compile(r"^\d+ of \d+ tags in \d+ group"))
    expect(summary).to_have_text(re.compile(r"^([1-9]|1[0-2]) of \d+ tags in \d+ group"))
    shown = int(summary.inner_text().split()[0])
    expect(charts).to_have_count(1 + shown)
    save_screenshot(page, "metrics.png")

    # the health page lists findings; a rollout finding opens the step browser at its step, filtered
    _nav(page, runs, "Health")
    expect(main.get_by_role("heading", name=re.compile(r"^Warning · \d+"))).to_be_visible()
    link = main.get_by_role("button", name=re.compile(r"Open step \d+"))
    expect(link.first).to_be_visible()
    save_screenshot(page, "health.png")
    step = int(re.search(r"\d+", link.first.inner_text()).group())
    with runs.expect_rerun():
        link.first.click()
    page.wait_for_url(re.compile(r"/steps\?"))
    params = {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}
    assert params["run"] == "ppo_math" and int(params["step"]) == step and params["length"].endswith(":")
    expect(main.get_by_text(re.compile(r"samples in step \d+ match the filters"))).to_be_visible()
