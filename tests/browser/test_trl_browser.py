"""A TRL run as TRL means it, walked in a real browser: a conversational sample shown as a conversation,
the Health page naming the reward weights TRL used, and those weights typed in the Fields panel making
rl-board's reward equal TRL's."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
from playwright.sync_api import expect

from tests.helpers import trainer_dumps as T
from tests.helpers.apptest import APP
from tests.helpers.screens import REPO, save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns, start_streamlit, stop_streamlit

pytestmark = pytest.mark.browser
WEIGHTS = {"accuracy_reward": 1.0, "think_format_reward": 0.5}


def _logged_with_weights(out) -> dict[int, float]:
    """What TRL would have logged with reward_weights=[1.0, 0.5]: per step, the mean weighted reward."""
    history, means = [], {}
    for path in sorted((out / "completions").glob("*.parquet")):
        table = pq.read_table(path).to_pydict()
        parts = np.column_stack([np.array(table[n], dtype=float) * w for n, w in WEIGHTS.items()])
        reward = np.where(np.isnan(parts).all(axis=1), np.nan, np.nansum(parts, axis=1))
        step = table["step"][0]
        means[step] = float(np.nanmean(reward))
        history.append(
            {
                "step": step,
                "reward": means[step],
                **{f"rewards/{n}/mean": float(np.nanmean(table[n])) for n in WEIGHTS},
            }
        )
    state = out / f"checkpoint-{max(means)}" / "trainer_state.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"log_history": history}))
    return means


@pytest.fixture(scope="module")
def trl_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("trl") / "logs"
    T.write_trl(root / "chat", conversational=True)
    means = _logged_with_weights(root / "chat")
    logs = tmp_path_factory.mktemp("trl-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=REPO,
        env_extra={"RL_BOARD_ROOTS": str(root), "RL_BOARD_CACHE_DIR": str(logs / "cache")},
    )
    yield srv, means
    stop_streamlit(srv.proc)


def test_a_trl_run_walked_in_the_browser(chromium_browser, trl_server):
    srv, means = trl_server
    step = sorted(means)[1]
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1100})
    page = context.new_page()
    runs = StreamlitRuns(page)
    main, sidebar = page.get_by_test_id("stMain"), page.get_by_test_id("stSidebar")
    try:
        runs.goto(f"{srv.url}/sample?run=chat/completions&step={step}&sample=0")
        expect(main.get_by_text(re.compile(r"Conversation"))).to_be_visible()
        # the answers think first: shown turn by turn, each thought folded under its turn
        expect(main.get_by_text(re.compile(r"^user · turn \d+ · \d+ characters"))).to_be_visible()
        expect(main.get_by_text(re.compile(r"^assistant · turn \d+ · \d+ characters")).first).to_be_visible()
        expect(main.get_by_text(re.compile(r"^Reasoning · \d+ characters")).first).to_be_visible()
        save_screenshot(page, "trl-conversation.png")

        runs.goto(f"{srv.url}/health?run=chat/completions")
        save_screenshot(page, "trl-health.png")
        finding = main.get_by_text(re.compile(r"the logged rewards fit reward_weights"))
        expect(finding.first).to_be_visible()
        expect(finding.first).to_contain_text("0.5*think_format_reward")
        save_screenshot(page, "trl-health.png")

        runs.goto(f"{srv.url}/steps?run=chat/completions&step={step}")
        box = sidebar.get_by_label("Reward = weighted sum of", exact=True)
        if not box.is_visible():
            sidebar.get_by_text("Fields: how this run is read").click()
        expect(box).to_have_value("accuracy_reward + think_format_reward")
        with runs.expect_rerun():
            box.fill("accuracy_reward + 0.5*think_format_reward")
            box.press("Enter")
        page.wait_for_url(re.compile(r"fields="))
        card = main.get_by_test_id("stMetric").filter(has_text=re.compile(r"^Reward|mean reward", re.I)).first
        expect(card).to_contain_text(f"{means[step]:.3g}"[:4])
        save_screenshot(page, "trl-weights.png")
        assert not math.isnan(means[step])
    finally:
        context.close()
