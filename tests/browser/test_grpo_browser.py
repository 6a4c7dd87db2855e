"""A GRPO run in a real browser: a step's groups with best against worst, a prompt's history from a sample,
two steps compared on the same prompts."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from rl_board.rollouts.demo_grpo import GrpoSpec, write_grpo_run
from rl_board.rollouts.store import RolloutStore
from tests.helpers.apptest import APP
from tests.helpers.screens import REPO, save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns, start_streamlit, stop_streamlit

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def grpo(tmp_path_factory):
    root = tmp_path_factory.mktemp("grpo") / "logs"
    write_grpo_run(
        root / "grpo_math", GrpoSpec(steps=10, prompts=4, group_size=8, tokens=60, long_tokens=400)
    )
    logs = tmp_path_factory.mktemp("grpo-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=REPO,
        env_extra={"RL_BOARD_ROOTS": str(root), "RL_BOARD_CACHE_DIR": str(logs / "cache")},
    )
    yield srv, RolloutStore.open(root / "grpo_math", cache_dir=logs / "expected")
    stop_streamlit(srv.proc)


@pytest.fixture
def page(chromium_browser):
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    yield context.new_page()
    context.close()


def test_groups_then_prompt_history_then_same_prompts(page, grpo):
    srv, store = grpo
    runs = StreamlitRuns(page)
    main = page.get_by_test_id("stMain")
    step = store.steps[-1]
    group = store.groups(step=step).iloc[0]

    runs.goto(f"{srv.url}/groups?run=grpo_math&step={step}&group={group['group']}")
    expect(main.get_by_text("Zero-variance groups")).to_be_visible()
    expect(main.get_by_text(f"Best · sample {int(group['best_sample'])}")).to_be_visible()
    expect(main.get_by_text(f"Worst · sample {int(group['worst_sample'])}")).to_be_visible()
    save_screenshot(page, "groups.png")

    runs.goto(f"{srv.url}/sample?run=grpo_math&step={step}&sample=0")
    with runs.expect_rerun():
        main.get_by_role("button", name="This prompt across training").click()
    expect(main.get_by_text("This prompt over training")).to_be_visible(timeout=20_000)
    prompt = store.samples(step=step, columns=["prompt"])["prompt"].iloc[0]
    expect(main.get_by_test_id("stCode").first).to_contain_text(prompt[:30])
    save_screenshot(page, "prompt-history.png")

    runs.goto(f"{srv.url}/matchup?run=grpo_math&versus=grpo_math&step_a=0&step_b=3&matchup_row=0")
    expect(main.get_by_text("Word diff")).to_be_visible()
    expect(main.locator(".rlb-diff")).to_be_visible()
    save_screenshot(page, "same-prompts.png")

    # a point of a training metric logged beside the samples opens that step's samples
    runs.goto(f"{srv.url}/metrics?metric_filter=train/reward&interactive_charts=1")  # Plotly: points to click
    points = main.get_by_test_id("stPlotlyChart").first.locator(".scatterlayer .trace .points path")
    expect(points.first).to_be_attached()
    with runs.expect_rerun():
        points.nth(3).click(force=True)
    page.wait_for_url(re.compile(r"/steps\?"))
    assert "step=3" in page.url and "run=grpo_math" in page.url


def test_a_6000_token_answer_in_the_browser(chromium_browser, tmp_path_factory):
    root = tmp_path_factory.mktemp("long") / "logs"
    write_grpo_run(
        root / "long", GrpoSpec(steps=2, prompts=2, group_size=2, tokens=30, long_tokens=6000, seed=5)
    )
    store = RolloutStore.open(root / "long", cache_dir=root.parent / "expected")
    lengths = store.samples(step=1, columns=["n_tokens"])["n_tokens"]
    index = int(lengths.idxmax())
    logs = tmp_path_factory.mktemp("long-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=REPO,
        env_extra={"RL_BOARD_ROOTS": str(root), "RL_BOARD_CACHE_DIR": str(logs / "cache")},
    )
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    try:
        runs = StreamlitRuns(page)
        runs.goto(f"{srv.url}/sample?run=long&step=1&sample={index}")
        main = page.get_by_test_id("stMain")
        expect(main.get_by_text(f"of all {int(lengths.max())} tokens, 100 per row")).to_be_visible(
            timeout=30_000
        )
        assert main.locator(".rlb-chip").count() == 500  # one page of chips
        save_screenshot(page, "long-answer.png")
    finally:
        context.close()
        stop_streamlit(srv.proc)
