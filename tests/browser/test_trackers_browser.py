"""A W&B run folder in a real browser: the real wandb library logs a TRL-shaped GRPO run offline (metrics
with a declared step metric, profiling timers, the completions table); the Metrics page draws its curves
at the trainer's step with its config as text, and its completions open in the step browser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.helpers import wandb_writer
from tests.helpers.apptest import APP
from tests.helpers.screens import save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns, start_streamlit, stop_streamlit
from tests.helpers.tracker_writers import run_writer

pytestmark = [pytest.mark.browser, pytest.mark.trackers]
REPO = Path(__file__).resolve().parents[2]


def _write_wandb_run(root: Path, home: Path) -> Path:
    printed = run_writer(
        [wandb_writer.__file__, str(root), "--variant", "trl"],
        env=wandb_writer.environment(home),
        cwd=REPO,
        what="wandb writer",
    )
    return Path(json.loads(printed.strip().splitlines()[-1])["folder"])


@pytest.fixture(scope="module")
def wandb_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("trackers-root")
    run = _write_wandb_run(root, tmp_path_factory.mktemp("home"))
    logs = tmp_path_factory.mktemp("trackers-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=APP.parents[2],
        env_extra={"RL_BOARD_ROOTS": str(root), "RL_BOARD_CACHE_DIR": str(logs / "cache")},
    )
    yield srv, run.relative_to(root).as_posix()
    stop_streamlit(srv.proc)


@pytest.fixture
def page(chromium_browser, wandb_server, request):
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    pg = context.new_page()
    yield pg
    context.close()
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        print(wandb_server[0].log_path.read_text()[-5000:])


def test_a_wandb_run_on_the_metrics_page(page, wandb_server):
    srv, run = wandb_server
    runs = StreamlitRuns(page)
    runs.goto(f"{srv.url}/metrics?interactive_charts=1")  # Plotly charts: their x ticks are in the page
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text(f"{run} · W&B").first).to_be_visible()
    search = main.get_by_label("Filter tags")
    search.fill("train/")
    with runs.expect_rerun():
        search.press("Enter")
    expect(main.get_by_text("train/reward").first).to_be_visible()
    expect(main.get_by_test_id("stPlotlyChart").first).to_be_visible()
    # the trainer's step: the x axis ends at step 50, not at W&B's own counter (past 150 after the timers)
    ticks = [t or "" for t in page.locator(".js-plotly-plot .xtick text").all_text_contents()]
    assert ticks and max(int(t.replace(",", "")) for t in ticks if t.replace(",", "").isdigit()) <= 50, ticks
    config = main.get_by_text("config and hyperparameters").first
    config.scroll_into_view_if_needed()
    config.click()
    expect(main.get_by_text('"algorithm": "grpo"').first).to_be_visible()
    expect(main.get_by_text("Hyperparameters, one per line.").first).to_be_visible()  # text, not a grid
    assert main.get_by_test_id("stDataFrame").count() == 0
    expect(
        main.get_by_text("points at train/global_step (the run's declared step metric)").first
    ).to_be_visible()
    save_screenshot(page, "metrics-wandb.png")


def test_its_completions_open_in_the_step_browser(page, wandb_server):
    srv, run = wandb_server
    runs = StreamlitRuns(page)
    runs.goto(f"{srv.url}/steps?run={run}&step=50")
    main = page.get_by_test_id("stMain")
    # the batch table is a canvas grid: its cells are in the page for screen readers, not drawn as text
    expect(main.get_by_text("completion 3", exact=True).first).to_be_attached()
    expect(main.get_by_text("prompt 1 at step 50", exact=True).first).to_be_attached()
    save_screenshot(page, "wandb-completions.png")


@pytest.fixture(scope="module")
def trackio_server(tmp_path_factory):
    """Trackio's own library logs a run with one trace at steps 10 and 20 into a project database."""
    from tests.helpers import trackio_writer

    root = tmp_path_factory.mktemp("trackio-root")
    home = tmp_path_factory.mktemp("trackio-home")
    run_writer(
        ["-m", "tests.helpers.trackio_writer", str(root), "truth"],
        env=trackio_writer.environment(root, home),
        cwd=REPO,
        what="trackio writer",
    )
    logs = tmp_path_factory.mktemp("trackio-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=APP.parents[2],
        env_extra={"RL_BOARD_ROOTS": str(root), "RL_BOARD_CACHE_DIR": str(logs / "cache")},
    )
    yield srv, f"{trackio_writer.PROJECT}.db/{trackio_writer.RUN}"
    stop_streamlit(srv.proc)


def test_a_trackio_runs_traces_open_as_a_rollout_run(chromium_browser, trackio_server):
    """The run inside the project database is listed under the root and opens in the step browser and on
    the Sample page: each trace one sample, its messages the prompt and the answer, its score the reward."""
    srv, run = trackio_server
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    try:
        runs = StreamlitRuns(page)
        runs.goto(f"{srv.url}/steps?run={run}&step=20")
        main = page.get_by_test_id("stMain")
        expect(main.get_by_text("1 of 1 samples in step 20").first).to_be_visible()
        runs.goto(f"{srv.url}/sample?run={run}&step=20&sample=0")
        expect(main.get_by_text("a20", exact=True).first).to_be_visible()
        expect(main.get_by_text("q20", exact=True).first).to_be_visible()
        save_screenshot(page, "trackio-traces.png")
    finally:
        context.close()
