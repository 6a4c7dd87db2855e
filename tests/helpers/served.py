"""Servers with a token, started and spoken to as a user would: `rl-board serve` (or the app run through
``python -m rl_board.server``, the process `serve` becomes), raw HTTP and WebSocket handshakes, and a
browser context let in by opening ``/?token=...`` once."""

from __future__ import annotations

import base64
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.streamlit_browser import Server, free_port, wait_healthy

REPO = Path(__file__).resolve().parents[2]


@dataclass
class TokenServer(Server):
    token: str = ""

    @property
    def login_url(self) -> str:
        return f"{self.url}/?token={self.token}"


def start_app_with_token(
    log_path: Path,
    app_file: Path,
    env_extra: dict[str, str] | None = None,
    token: str | None = None,
    cwd: Path = REPO,
    timeout_s: float = 60.0,
) -> TokenServer:
    """The app behind rl-board's Host and token checks (``python -m rl_board.server run APP``, what
    `rl-board serve` execs), with the flags ``start_streamlit`` gives plain Streamlit; a known token."""
    token = token or secrets.token_urlsafe(16)
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "rl_board.server",
        "run",
        str(app_file),
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.fileWatcherType",
        "none",
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
    ]
    env = {**os.environ, **(env_extra or {}), "RL_BOARD_TOKEN": token, "RL_BOARD_NO_TOKEN": ""}
    t0 = time.perf_counter()
    with open(log_path, "w") as log:  # a file: an unread PIPE can fill up and block the server
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url, log_path, timeout_s, t0)
    return TokenServer(proc, port, url, log_path, time.perf_counter() - t0, token)


def start_serve(
    log_path: Path,
    *args: str,
    env_extra: dict[str, str] | None = None,
    token: str | None = None,
    cwd: Path = REPO,
    timeout_s: float = 60.0,
) -> TokenServer:
    """`rl-board serve ARGS` on a free port. ``token=None``: none given (RL_BOARD_TOKEN unset), the server
    makes its own, read back from the address it prints first."""
    port = free_port()
    env = {**os.environ, **(env_extra or {})}
    env.pop("RL_BOARD_TOKEN", None)
    cmd = [sys.executable, "-m", "rl_board", "serve", *args, "--port", str(port)]
    if token is not None:
        env["RL_BOARD_TOKEN"] = token
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url, log_path, timeout_s, t0)
    if token is None:
        found = re.search(r"\?token=([A-Za-z0-9_\-]+)", log_path.read_text())
        token = found[1] if found else ""
    return TokenServer(proc, port, url, log_path, time.perf_counter() - t0, token)


@dataclass
class Reply:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


def raw_request(
    port: int,
    path: str = "/",
    headers: dict[str, str] | None = None,
    upgrade: bool = False,
    method: str = "GET",
) -> Reply:
    """One HTTP/1.1 request (or a WebSocket upgrade) on a raw socket; its status, headers and body."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    if upgrade:
        key = base64.b64encode(os.urandom(16)).decode()
        lines[-1] = "Connection: Upgrade"
        lines += [
            "Upgrade: websocket",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            f"Origin: http://127.0.0.1:{port}",
        ]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        parsed = [(k.strip(), v.strip()) for k, _, v in (h.partition(":") for h in header_lines)]
        status = int(status_line.split()[1])
        if status != 101 and method != "HEAD":
            length = next((int(v) for k, v in parsed if k.lower() == "content-length"), None)
            while length is None or len(body) < length:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
    return Reply(status, parsed, body)


def login_cookie(port: int, token: str) -> str:
    """``name=value`` of the cookie the server sets for a visit with its token."""
    reply = raw_request(port, f"/?token={token}")
    assert reply.status == 303, reply
    cookie = reply.header("set-cookie")
    assert cookie, reply.headers
    return cookie.split(";", 1)[0]


def admit(context, server: TokenServer) -> None:
    """Let a browser context in as a user is let in: it opens ``/?token=...`` (an HTTP request of the
    context, whose cookies it shares), is sent on to ``/`` and keeps the cookie."""
    reply = context.request.get(server.login_url)
    assert reply.ok, (reply.status, reply.url)
    assert "?token=" not in reply.url, reply.url
    assert any(c["name"].startswith(f"rl-board-{server.port}-") for c in context.cookies()), context.cookies()
