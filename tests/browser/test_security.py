"""Untrusted text in every view, in a real browser: nothing runs, nothing leaves, all is text.

The root holds a rollout run whose folder name, file name, prompts, responses,
tokens, ground truth and user fields are attacks, plus a ROLL-style metrics
log whose tag names are attacks. Every page is visited; a dialog handler, a
request log and DOM checks must all stay clean.

The server runs behind rl-board's token check, and the last tests attack it: a token in a Referer, a wrong
token, the cookie of another rl-board server on the same machine, and the server's own output.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest
from playwright.sync_api import expect

from tests.helpers.markdown_payloads import BASIC as PAYLOADS
from tests.helpers.screens import save_screenshot
from tests.helpers.served import admit, login_cookie, raw_request, start_app_with_token, start_serve
from tests.helpers.streamlit_browser import StreamlitRuns, stop_streamlit

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "rl_board" / "ui" / "app.py"

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
    srv = start_app_with_token(
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
    """A tab (let in with the token) that records dialogs and every request's host."""
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    admit(context, hostile_server)
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
        page.get_by_test_id("stSidebar").get_by_text("Interactive charts (zoom, pan)").click()
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


# -- the token, attacked (docs/security.md) ---------------------------------------------------------------


def test_a_token_in_a_referer_header_does_not_let_in(hostile_server):
    """A page that leaked the address with the token as its Referer: the header is no way in."""
    srv = hostile_server
    referer = {"Referer": srv.login_url}
    for path in ("/", "/steps?run=x", "/_stcore/host-config"):
        reply = raw_request(srv.port, path, referer)
        assert reply.status == 403 and reply.header("set-cookie") is None, (path, reply.status)
    assert raw_request(srv.port, "/_stcore/stream", referer, upgrade=True).status == 403
    assert raw_request(srv.port, "/").header("referrer-policy") == "no-referrer"  # and none leaves from here


def test_a_wrong_token_is_refused_exactly_like_a_missing_one(hostile_server):
    srv = hostile_server
    missing = raw_request(srv.port, "/steps?run=x")
    assert missing.status == 403 and RUN_NAME.encode() not in missing.body
    wrong = [srv.token[:-1], srv.token + "x", srv.token.upper(), "", " " + srv.token, "%00"]
    for token in wrong:
        reply = raw_request(srv.port, f"/steps?run=x&token={quote(token)}")
        assert (reply.status, reply.body) == (missing.status, missing.body), token
        assert reply.header("set-cookie") is None and reply.header("location") is None, token
    name = login_cookie(srv.port, srv.token).split("=", 1)[0]
    for value in (srv.token, "0" * 64, ""):  # the right name with a made-up value, the token itself included
        cookie = {"Cookie": f"{name}={value}"}
        assert raw_request(srv.port, "/", cookie).status == 403, value
        assert raw_request(srv.port, "/_stcore/stream", cookie, upgrade=True).status == 403, value


def test_the_cookie_of_another_rl_board_server_does_not_open_this_one(hostile_server, browser_root, tmp_path):
    """Browsers send every cookie of 127.0.0.1 to every port: a cookie of the server next door (another
    port, another token) must open nothing here, and ours nothing there."""
    srv = hostile_server
    other = start_app_with_token(
        tmp_path / "other.log",
        APP,
        cwd=REPO,
        env_extra={"RL_BOARD_ROOTS": str(browser_root), "RL_BOARD_CACHE_DIR": str(tmp_path / "cache")},
    )
    try:
        theirs, ours = login_cookie(other.port, other.token), login_cookie(srv.port, srv.token)
        assert srv.token not in ours and other.token not in theirs  # the cookie is not the token
        assert theirs.split("=")[0] != ours.split("=")[0]
        for cookie in (theirs, f"{ours.split('=')[0]}={theirs.split('=', 1)[1]}"):
            assert raw_request(srv.port, "/", {"Cookie": cookie}).status == 403, cookie
            assert raw_request(srv.port, "/_stcore/stream", {"Cookie": cookie}, upgrade=True).status == 403
        assert raw_request(other.port, "/", {"Cookie": ours}).status == 403
        both = {"Cookie": f"{theirs}; {ours}"}  # what a browser that visited both sends: each opens its own
        assert raw_request(srv.port, "/", both).status == 200
        assert raw_request(srv.port, "/_stcore/stream", both, upgrade=True).status == 101
        assert raw_request(other.port, "/", both).status == 200
    finally:
        stop_streamlit(other.proc)


def test_the_token_is_written_only_in_the_first_line(chromium_browser, browser_root, tmp_path):
    """`rl-board serve` with no token makes one and prints it once; a browser that opens the address, a page
    and a deep link leaves no trace of it in the server's output (stdout and stderr together)."""
    srv = start_serve(
        tmp_path / "serve.log",
        str(browser_root),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--labels",
        str(tmp_path / "labels.sqlite"),
    )
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    try:
        page = context.new_page()
        runs = StreamlitRuns(page)
        runs.goto(f"{srv.url}/steps?run=ppo_math&step=3&token={srv.token}")
        assert "token" not in page.url and "run=ppo_math" in page.url and "step=3" in page.url
        expect(page.get_by_text("of 24 samples").first).to_be_visible()
        # a wrong token in a browser that is already in: it leaves the address bar, and the page opens
        runs.goto(f"{srv.url}/sample?run=ppo_math&step=3&sample=2&token={srv.token}x")
        assert "token" not in page.url and "sample=2" in page.url
        expect(page.locator(".rlb-chip").first).to_be_visible()
    finally:
        context.close()
        stop_streamlit(srv.proc)
    lines = srv.log_path.read_text().splitlines()
    assert len(srv.token) >= 32 and srv.token in lines[0], lines[:3]
    assert [n for n, line in enumerate(lines) if srv.token in line] == [0], lines
