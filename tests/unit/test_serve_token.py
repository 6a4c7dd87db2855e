"""`rl-board serve` admits only holders of its token: a real server on 127.0.0.1, spoken to with raw
sockets (HTTP requests and WebSocket handshakes), plus the pieces of the check on their own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rl_board.config import served_url
from rl_board.server import cookie_name, cookie_value, split_token
from tests.helpers.served import free_port, raw_request, start_serve
from tests.helpers.streamlit_browser import stop_streamlit

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "rollout_samples"
RUN_NAMES = [p.name for p in SAMPLES.iterdir() if p.is_dir()]
# Every way into the data but the WebSocket: media, uploads, components, the app's own static files,
# Streamlit's bundle and its other endpoints.
CLOSED = [
    "/",
    "/steps?run=ppo_math&step=1",
    "/sample",
    "/media/0123456789abcdef.png",
    "/component/x.y/index.html",
    "/app/static/x.png",
    "/static/js/index.js",
    "/favicon.png",
    "/_stcore/host-config",
    "/_stcore/metrics",
    "/_stcore/script-health-check",
    "/_stcore/agent/openapi.json",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`rl-board serve rollout_samples` with no token given (none in the environment either)."""
    logs = tmp_path_factory.mktemp("token-serve")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "RL_BOARD_TOKEN"}
    env["RL_BOARD_CACHE_DIR"] = str(logs / "cache")
    with open(logs / "stdout", "w") as out, open(logs / "stderr", "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rl_board", "serve", str(SAMPLES), "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=err,
        )
    try:
        for _ in range(600):
            try:
                if raw_request(port, "/_stcore/health").status == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None, (logs / "stderr").read_text()
            time.sleep(0.1)
        yield port, logs
    finally:
        stop_streamlit(proc)


def test_the_first_line_out_is_the_address_with_a_new_token(served) -> None:
    port, logs = served
    first = (logs / "stdout").read_text().splitlines()[0]
    found = re.search(r"at (http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_\-]+))$", first)
    assert found and int(found[2]) == port, first
    assert len(found[3]) >= 40  # secrets.token_urlsafe(32)
    assert raw_request(port, f"/?token={found[3]}").status == 303


def test_without_the_token_only_health_answers(served) -> None:
    port, logs = served
    assert raw_request(port, "/_stcore/health").body == b"ok"
    page = raw_request(port, "/")
    text = page.body.decode()
    assert page.status == 403 and (page.header("content-type") or "").startswith("text/html")
    assert "?token=" in text and "rl-board serve" in text  # how to get in
    assert not [name for name in RUN_NAMES if name in text]  # nothing of the runs
    for path in CLOSED:
        reply = raw_request(port, path)
        assert reply.status == 403 and reply.body == page.body, (path, reply.status)
        assert reply.header("referrer-policy") == "no-referrer", path
    assert raw_request(port, "/_stcore/upload_file/s/f", method="PUT").status == 403
    assert raw_request(port, "/_stcore/stream", upgrade=True).status == 403


def test_the_token_gives_a_cookie_and_leaves_the_address(served) -> None:
    port, logs = served
    token = re.search(r"\?token=([A-Za-z0-9_\-]+)", (logs / "stdout").read_text())[1]
    reply = raw_request(port, f"/steps?run=ppo_math&token={token}&step=2&search=a%26b")
    assert reply.status == 303
    assert reply.header("location") == "/steps?run=ppo_math&step=2&search=a%26b"  # the rest kept as it was
    assert reply.header("referrer-policy") == "no-referrer" and reply.header("cache-control") == "no-store"
    cookie = reply.header("set-cookie")
    attributes = {a.strip().split("=")[0].lower() for a in cookie.split(";")[1:]}
    assert {"httponly", "path", "samesite"} <= attributes
    assert "Path=/" in cookie and "SameSite=Strict" in cookie
    name, value = cookie.split(";")[0].split("=", 1)
    assert name.startswith(f"rl-board-{port}-") and token not in cookie and value == cookie_value(token, port)
    pair = {"Cookie": f"{name}={value}"}
    page = raw_request(port, "/steps?run=ppo_math", pair)
    assert page.status == 200 and b"<script" in page.body
    assert raw_request(port, "/_stcore/host-config", pair).status == 200
    assert raw_request(port, "/_stcore/stream", upgrade=True).status == 403  # the handshake, refused
    assert raw_request(port, "/_stcore/stream", pair, upgrade=True).status == 101
    assert raw_request(port, "/?token=", pair).header("location") == "/"  # in already: a token is dropped
    assert raw_request(port, f"//evil.example/?token={token}").header("location") == "/evil.example/"


def test_no_token_lets_everyone_in_and_says_so(tmp_path: Path) -> None:
    """--no-token (behind a proxy with its own login) also warns; an open cache folder is named at start."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    cache.chmod(0o755)
    args = (str(SAMPLES), "--no-token", "--cache-dir", str(cache))
    srv = start_serve(tmp_path / "log", *args, token="env-token-6f1c")
    try:
        assert raw_request(srv.port, "/").status == 200
        assert raw_request(srv.port, "/_stcore/stream", upgrade=True).status == 101
        assert raw_request(srv.port, "/").header("referrer-policy") == "no-referrer"
    finally:
        stop_streamlit(srv.proc)
    log = srv.log_path.read_text()
    assert "?token=" not in log and "env-token-6f1c" not in log
    assert "--no-token: every browser" in log
    assert f"cache folder {cache} (mode 755)" in log and f"chmod -R go-rwx {cache}" in log


def test_the_server_process_started_alone_makes_a_token_too(tmp_path: Path) -> None:
    """``python -m rl_board.server`` (what serve execs) with no token in its environment is not open: it makes
    one and prints its address first."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("RL_BOARD_TOKEN", "RL_BOARD_NO_TOKEN")}
    env["RL_BOARD_CACHE_DIR"] = str(tmp_path / "cache")
    app = REPO / "rl_board" / "ui" / "app.py"
    args = ["run", str(app), "--server.port", str(port), "--server.address", "127.0.0.1"]
    with open(tmp_path / "out", "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rl_board.server", *args, "--server.headless", "true"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
    try:
        for _ in range(600):
            try:
                if raw_request(port, "/_stcore/health").status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        first = (tmp_path / "out").read_text().splitlines()[0]
        token = re.fullmatch(rf"rl-board: open http://127\.0\.0\.1:{port}/\?token=([A-Za-z0-9_\-]+)", first)
        assert token, first
        assert raw_request(port, "/").status == 403
        assert raw_request(port, f"/?token={token[1]}").status == 303
    finally:
        stop_streamlit(proc)


def test_token_options_that_make_no_sense_are_one_line_errors(tmp_path: Path) -> None:
    cases = ((["--token", ""], "--token is empty"), (["--token", "a", "--no-token"], "choose one"))
    for args, words in cases:
        out = subprocess.run(
            [sys.executable, "-m", "rl_board", "serve", str(SAMPLES), "--port", "1", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "RL_BOARD_CACHE_DIR": str(tmp_path)},
        )
        assert out.returncode == 2 and words in out.stderr and out.stderr.count("\n") == 1, out.stderr


def test_the_query_without_the_token_keeps_the_rest_byte_for_byte() -> None:
    assert split_token(b"run=a%20b&token=T&step=1") == (["T"], b"run=a%20b&step=1")
    assert split_token(b"token=a%2Bb+c&tok%65n=x") == (["a+b c", "x"], b"")
    assert split_token(b"tokens=1&x=token") == ([], b"tokens=1&x=token")
    assert split_token(b"") == ([], b"")


def test_each_server_has_its_own_cookie() -> None:
    """The name and value depend on the token and the port; the value is not the token."""
    token = "a-team-token"
    assert cookie_value(token, 8901) != cookie_value(token, 8902) != cookie_value("other", 8902)
    assert cookie_name(token, 8901) != cookie_name("other", 8901)
    assert token not in cookie_value(token, 8901) + cookie_name(token, 8901)
    assert cookie_value(token, 8901) == cookie_value(token, 8901)  # a restart with the same token keeps it


def test_the_printed_address() -> None:
    assert served_url("127.0.0.1", 8901, "a/b") == "http://127.0.0.1:8901/?token=a%2Fb"
    assert served_url("0.0.0.0", 80) == "http://127.0.0.1:80/"
    assert served_url("::1", 9, "t") == "http://[::1]:9/?token=t"
