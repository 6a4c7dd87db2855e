"""Untrusted text in every view, in a real browser: nothing runs, nothing leaves, all is text.

The root holds a rollout run whose folder name, file name, prompts, responses,
tokens, ground truth and user fields are attacks, plus a ROLL-style metrics
log whose tag names are attacks. Every page is visited; a dialog handler, a
request log and DOM checks must all stay clean.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest
from playwright.sync_api import expect

from tests.helpers.screens import save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns, start_streamlit, stop_streamlit

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "rl_board" / "ui" / "app.py"

PAYLOADS = [
    "<script>window.__xss=1;alert(1)</script>",
    '<img src=x onerror="window.__xss=2;alert(2)">',
    '<a href="javascript:window.__xss=3">click me</a>',
    "[link](javascript:window.__xss=4) ![img](http://evil.example/pixel.png)",
    '# Heading $x^2$ **bold** <svg onload="window.__xss=5">',
    "\x1b[31mred\x1b[0m bell\x07 \u202eevil\u202c zero\u200bwidth",
    '<iframe src="http://evil.example/frame"></iframe>',
    '" onmouseover="window.__xss=6" x="',
]
RUN_NAME = "run <img src=x onerror=window.__xss=7>"
TAG = "actor/<img src=x onerror=window.__xss=8>"


def hostile_record(step: int, i: int) -> dict:
    tokens = [PAYLOADS[(i + k) % len(PAYLOADS)] for k in range(6)]
    return {
        "step": step,
        "prompt": PAYLOADS[i % len(PAYLOADS)],
        "response": "".join(tokens),
        "reward": 0.1 * i,
        "ref_response": PAYLOADS[(i + 1) % len(PAYLOADS)],
        "ref_reward": 0.05,
        "ground_truth": PAYLOADS[(i + 2) % len(PAYLOADS)],
        "response_tokens": tokens,
        "logprobs": [-0.5, -1.0, math.nan if i == 0 else -0.7, -0.2, -0.9, -0.3],
        "ref_logprobs": [-0.6, -0.8, -0.7, -0.4, -0.9, -0.1],
        "judge <b>note</b>": PAYLOADS[(i + 3) % len(PAYLOADS)],
    }


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "logs"
    run = root / RUN_NAME
    run.mkdir(parents=True)
    lines = [json.dumps(hostile_record(step, i)) for step in range(3) for i in range(6)]
    (run / "rank <svg onload=window.__xss=10>.jsonl").write_text(
        "\n".join(lines) + "\nnot json <script>x</script>\n"
    )
    metrics = root / "metrics <svg onload=window.__xss=9>"
    metrics.mkdir()
    with (metrics / "train.log").open("w") as f:
        for step in range(5):
            payload = {"step": step, "metrics": {TAG: 0.1 * step, "critic/loss": 1.0 / (step + 1)}}
            f.write(f"2026-11-22 INFO tracker metrics_tag: {json.dumps(payload)}\n")
    return root


@pytest.fixture(scope="module")
def hostile_server(hostile_root, tmp_path_factory):
    logs = tmp_path_factory.mktemp("hostile-server")
    srv = start_streamlit(
        logs / "streamlit.log",
        APP,
        cwd=REPO,
        env_extra={
            "RL_BOARD_ROOTS": str(hostile_root),
            "RL_BOARD_CACHE_DIR": str(logs / "cache"),
        },
    )
    yield srv
    stop_streamlit(srv.proc)


@pytest.fixture
def watched(chromium_browser, hostile_server):
    """A tab that records dialogs and every request's host."""
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.dialogs, page.hosts = [], set()
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: page.hosts.add(urlparse(r.url).hostname or urlparse(r.url).scheme))
    yield page
    context.close()


def assert_nothing_ran(page) -> None:
    page.wait_for_timeout(300)
    assert page.dialogs == []
    assert page.evaluate("window.__xss") is None
    assert page.hosts <= {"127.0.0.1", "data", "blob"}, page.hosts
    injected = page.evaluate("""() => [
        ...document.querySelectorAll('img[src="x"], iframe, svg[onload], [onerror], [onmouseover], [onload]'),
        ...[...document.querySelectorAll('a[href]')].filter(a => a.href.startsWith('javascript:')),
        ...[...document.querySelectorAll('script')].filter(s => s.textContent.includes('__xss')),
    ].map(e => e.outerHTML.slice(0, 120))""")
    assert injected == []
    assert page.get_by_test_id("stException").count() == 0


def test_no_view_runs_or_renders_model_text(watched, hostile_server):
    page = watched
    runs = StreamlitRuns(page)
    run = quote(RUN_NAME)
    url = hostile_server.url

    runs.goto(f"{url}/?run={run}")
    expect(page.get_by_text("18 samples").first).to_be_visible()
    assert_nothing_ran(page)

    runs.goto(f"{url}/steps?run={run}&step=0")
    expect(page.get_by_text("6 of 6 samples").first).to_be_visible()
    assert_nothing_ran(page)
    save_screenshot(page, "security-steps.png")

    runs.goto(f"{url}/steps?run={run}&step=0&search={quote('<script>')}&all_steps=1")
    expect(page.get_by_text("of 18 samples").first).to_be_visible()
    assert_nothing_ran(page)

    runs.goto(f"{url}/sample?run={run}&step=1&sample=1")
    chips = page.locator(".rlb-chip")
    expect(chips.first).to_be_visible()
    for k in range(min(chips.count(), 6)):
        chips.nth(k).hover()
    cells = page.locator('.rlb-heat [title^="#"]')  # the heatmap grid: numbers only, hover each kind of cell
    expect(cells.first).to_be_visible()
    for k in range(0, cells.count(), max(1, cells.count() // 6)):
        cells.nth(k).hover()
    with runs.expect_rerun():  # the Plotly heatmap, whose hover shows the token's text
        page.get_by_text("Interactive heatmap", exact=False).click()
    heatmap = page.locator('[data-testid="stPlotlyChart"]').last
    heatmap.scroll_into_view_if_needed()
    box = heatmap.bounding_box()
    for fx in (0.3, 0.5, 0.7):
        page.mouse.move(box["x"] + box["width"] * fx, box["y"] + box["height"] * 0.5)
        page.wait_for_timeout(150)
    # the attack is on screen as text
    expect(page.get_by_text(PAYLOADS[1], exact=False).first).to_be_visible()  # sample 1's prompt
    assert_nothing_ran(page)
    save_screenshot(page, "security-sample.png")

    runs.goto(f"{url}/metrics")
    expect(page.get_by_text("metrics", exact=False).first).to_be_visible()
    assert_nothing_ran(page)

    runs.goto(f"{url}/health")
    expect(page.get_by_text("Error ·", exact=False).first).to_be_visible()  # the NaN token finding
    assert_nothing_ran(page)
    save_screenshot(page, "security-health.png")


def test_paths_outside_the_served_root_are_refused(watched, hostile_server, hostile_root, tmp_path):
    page = watched
    runs = StreamlitRuns(page)
    secret = hostile_root.parent / "secret_run"
    secret.mkdir(exist_ok=True)
    (secret / "s.jsonl").write_text(
        json.dumps({"step": 0, "prompt": "TOP SECRET", "response": "r", "reward": 1}) + "\n"
    )
    (hostile_root / "escape").symlink_to(secret, target_is_directory=True)
    for bad in ("../secret_run", str(secret), "escape", "~", "/etc"):
        runs.goto(f"{hostile_server.url}/steps?run={quote(bad)}&step=0")
        expect(page.get_by_text("Refused run", exact=False).first).to_be_visible()
        assert page.get_by_text("TOP SECRET").count() == 0
        assert_nothing_ran(page)
