"""`rl-board serve` refuses requests whose Host header names another site (DNS rebinding), and warns
when it listens on anything but loopback. A real server on 127.0.0.1, spoken to with raw sockets."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rl_board.cli.serve import allowed_hosts, is_loopback
from rl_board.server import cookie_name, cookie_value, host_name

TOKEN = "hosts-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port: int, host: str, path: str = "/_stcore/health", upgrade: bool = False) -> int:
    """The status code of one HTTP/1.1 request (or WebSocket upgrade) sent with this Host header (and the
    cookie of a browser that opened the server with its token)."""
    cookie = f"Cookie: {cookie_name(TOKEN, port)}={cookie_value(TOKEN, port)}"
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", cookie, "Connection: close"]
    if upgrade:
        key = base64.b64encode(os.urandom(16)).decode()
        lines[-1] = "Connection: Upgrade"
        lines += [
            "Upgrade: websocket",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            f"Origin: http://{host}",
        ]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status = s.recv(200).split(b"\r\n", 1)[0]
    return int(status.split()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    port = free_port()
    env = {**os.environ, "RL_BOARD_CACHE_DIR": str(tmp_path_factory.mktemp("cache")), "RL_BOARD_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rl_board",
            "serve",
            str(root),
            "--port",
            str(port),
            "--allow-host",
            "dash.example.org",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if request(port, f"127.0.0.1:{port}") == 200:
                break
        except OSError:
            time.sleep(0.3)
    yield port
    proc.terminate()
    proc.wait(timeout=30)


def test_loopback_names_and_allowed_hosts_are_served(server: int) -> None:
    for host in (
        f"127.0.0.1:{server}",
        f"localhost:{server}",
        "dash.example.org",
        f"DASH.example.org:{server}",
    ):
        assert request(server, host) == 200, host


def test_other_host_names_are_refused(server: int) -> None:
    assert request(server, f"attacker.example:{server}") == 403
    assert request(server, f"attacker.example:{server}", path="/") == 403
    assert request(server, f"attacker.example:{server}", path="/_stcore/stream", upgrade=True) == 403
    assert request(server, f"127.0.0.1:{server}", path="/_stcore/stream", upgrade=True) == 101


def test_host_names_and_bind_addresses() -> None:
    assert host_name("LocalHost:8901") == "localhost" and host_name("[::1]:80") == "::1"
    assert host_name("example.org") == "example.org"
    assert [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "0", "0.0.0.0", "192.168.1.5", "")] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    assert allowed_hosts("192.168.1.5", ["Proxy.Lan"]) == (
        "localhost",
        "127.0.0.1",
        "::1",
        "proxy.lan",
        "192.168.1.5",
    )


@pytest.mark.parametrize("bind", ["0", "192.168.1.5"])
def test_serve_warns_for_every_address_that_is_not_loopback(bind: str, tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rl_board",
            "serve",
            str(tmp_path / "root"),
            "--host",
            bind,
            "--port",
            str(free_port()),
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "RL_BOARD_CACHE_DIR": str(tmp_path / "c")},
    )
    try:
        first = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert first.startswith(f"warning: binding {bind}") and "--allow-host" in first
