"""Five browser sessions open the same large run at once: one parse, five views, bounded memory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from rl_board.rollouts.demo import DemoSpec, write_run
from tests.helpers.streamlit_browser import start_streamlit, stop_streamlit, wait_for_app_idle

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "rl_board" / "ui" / "app.py"
SESSIONS = 5
SPEC = DemoSpec(
    steps=20, samples=96, ranks=4, tokens=400, seed=5
)  # ~55 MB: parsed once, in the server (below the pool threshold)


@pytest.fixture(scope="module")
def big_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("big") / "logs"
    write_run(root / "big", SPEC)
    logs = tmp_path_factory.mktemp("big-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=REPO,
        env_extra={
            "RL_BOARD_ROOTS": str(root),
            "RL_BOARD_CACHE_DIR": str(logs / "cache"),
        },
    )
    srv.run_bytes = sum(p.stat().st_size for p in (root / "big").glob("*.jsonl"))
    yield srv
    stop_streamlit(srv.proc)


def peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024


def test_five_sessions_share_one_load(chromium_browser, big_server):
    contexts = [
        chromium_browser.new_context(viewport={"width": 1280, "height": 900}) for _ in range(SESSIONS)
    ]
    pages = [c.new_page() for c in contexts]
    try:
        for page in pages:  # all five ask for the run before any has it
            page.goto(f"{big_server.url}/?run=big", wait_until="commit")
        total = SPEC.steps * SPEC.samples
        for page in pages:
            expect(page.get_by_text(f"{total} samples").first).to_be_visible(timeout=120_000)
            wait_for_app_idle(page, 120_000)
            assert page.get_by_test_id("stException").count() == 0
    finally:
        for context in contexts:
            context.close()
    log = big_server.log_path.read_text()
    parses = re.findall(r"parsed (\d+) bytes of .*big", log)
    assert len(parses) == 1, log[-3000:]  # one parse, shared by all five sessions
    assert int(parses[0]) == big_server.run_bytes
    rss = peak_rss_mb(big_server.pid)
    print(
        f"\nserver peak RSS with {SESSIONS} sessions on a {big_server.run_bytes / 2**20:.0f} MB run: "
        f"{rss:.0f} MB"
    )
    assert rss < 1024  # the naive way holds ~1.6x the logs per session
