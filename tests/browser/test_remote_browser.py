"""`rl-board serve s3://bucket/prefix` in a real browser, against a real S3-compatible server (moto).

The server is started by the CLI exactly as a user would, with only the AWS
environment pointing at 127.0.0.1. The bucket's run is chosen in the sidebar,
its Overview drawn; then a grown log is re-uploaded and its new step shows
without a restart.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest
from playwright.sync_api import expect

from rl_board import config
from rl_board.rollouts.demo_grpo import GrpoSpec, write_grpo_run
from tests.helpers import s3
from tests.helpers.screens import REPO, save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns, free_port, stop_streamlit

pytestmark = pytest.mark.browser
URL = "s3://team-logs/experiments"
TOKEN = "remote-browser-token"  # the server's token (RL_BOARD_TOKEN): the first visit brings it


@pytest.fixture(scope="module")
def bucket_server(tmp_path_factory):
    local = tmp_path_factory.mktemp("bucket") / "experiments"
    # one 12,000-token answer per step: a log over config.sizes().remote_head_bytes, so serve first copies
    # only its head
    write_grpo_run(
        local / "grpo", GrpoSpec(steps=4, prompts=3, group_size=4, tokens=20, long_tokens=12_000, seed=2)
    )
    assert (local / "grpo" / "rollout_data_rank_0.jsonl").stat().st_size > config.sizes().remote_head_bytes
    with s3.s3_server() as endpoint:
        s3.upload(endpoint, local, URL)
        port = free_port()
        logs = tmp_path_factory.mktemp("remote-serve")
        env = {**os.environ, **s3.s3_env(endpoint), "RL_BOARD_TOKEN": TOKEN}
        with open(logs / "serve.log", "w") as log:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rl_board",
                    "serve",
                    URL,
                    "--port",
                    str(port),
                    "--cache-dir",
                    str(logs / "cache"),
                    "--remote-every",
                    "1",
                ],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        base = f"http://127.0.0.1:{port}"
        try:
            s3.wait_until_up(base + "/_stcore/health", proc, 60, "rl-board serve did not start")
        except RuntimeError:
            stop_streamlit(proc)
            raise AssertionError((logs / "serve.log").read_text()) from None
        yield base, endpoint, local, logs
        stop_streamlit(proc)


def test_a_bucket_root_is_browsed_and_followed(chromium_browser, bucket_server):
    base, endpoint, local, logs = bucket_server
    served = (logs / "serve.log").read_text()
    fetched = float(re.search(r"objects, ([\d.]+) MB fetched", served)[1])
    size = (local / "grpo" / "rollout_data_rank_0.jsonl").stat().st_size / 1e6
    assert fetched < size, (
        f"serve fetched {fetched} MB up front: only heads of rollout logs until a run is opened"
    )
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    runs = StreamlitRuns(page)
    try:
        runs.goto(f"{base}/?token={TOKEN}")  # the address serve prints
        sidebar = page.get_by_test_id("stSidebar")
        expect(sidebar.get_by_text(f"A copy of {URL}")).to_be_visible()
        sidebar.get_by_test_id("stSelectbox").filter(has_text="Run").click()
        with runs.expect_rerun():
            page.get_by_role("option", name=re.compile(r"^grpo")).first.click()
        expect(page.get_by_text("Reward per step")).to_be_visible()
        expect(
            sidebar.get_by_text(re.compile(r"48 samples · 4 steps"))
        ).to_be_visible()  # completed on choosing
        page.mouse.move(900, 20)  # no tooltip over the sidebar in the picture
        page.wait_for_timeout(300)
        save_screenshot(page, "remote-overview.png")

        # the trainer re-uploads its log with one more step: the served copy picks it up by itself
        log_file = local / "grpo" / "rollout_data_rank_0.jsonl"
        data = log_file.read_bytes()
        more = b"".join(
            line.replace(b'"step": 3,', b'"step": 4,')
            for line in data.splitlines(keepends=True)
            if b'"step": 3,' in line
        )
        assert more
        s3.put_bytes(endpoint, f"{URL}/grpo/{log_file.name}", data + more)
        main = page.get_by_test_id("stMain")
        deadline = time.monotonic() + 30
        while True:
            runs.goto(f"{base}/steps?run=grpo&step=4")
            if main.get_by_text(re.compile(r"samples in step 4")).count():
                break
            assert time.monotonic() < deadline, "the grown log never showed step 4"
            time.sleep(1)
        expect(main.get_by_text(re.compile(r"samples in step 4"))).to_be_visible()
    finally:
        context.close()
