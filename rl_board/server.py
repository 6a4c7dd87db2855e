"""The server process: Streamlit with a check of the ``Host`` header in front of every request.

A page on another site can make its own host name resolve to 127.0.0.1 (DNS
rebinding) and then drive a dashboard that only listens on loopback. Browsers
still send that site's name in ``Host``, so requests (and WebSocket upgrades)
whose ``Host`` is not a name this server was started for are refused with 403
before Streamlit sees them. ``rl-board serve`` execs ``python -m rl_board.server``.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def host_name(header: str) -> str:
    """The name part of a Host header (no port; IPv6 brackets removed), lower-cased."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    if header.count(":") == 1:
        return header.rsplit(":", 1)[0]
    return header


class HostCheck:
    """ASGI middleware: only requests whose Host names one of ``allowed`` reach the app."""

    def __init__(self, app: Callable[..., Awaitable[None]], allowed: Iterable[str]) -> None:
        self.app = app
        self.allowed = frozenset(name.lower() for name in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not self._ok(scope):
            await self._refuse(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _ok(self, scope: Scope) -> bool:
        headers = dict(scope.get("headers") or [])
        raw = headers.get(b"host", b"").decode("latin-1")
        return bool(raw) and host_name(raw) in self.allowed

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await receive()  # the connect event; closing before accepting answers the upgrade with 403
            await send({"type": "websocket.close", "code": 1008})
            return
        body = b"rl-board: this host name is not served here (start the server with --allow-host NAME)\n"
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def main(argv: list[str] | None = None) -> int:
    """Install the Host check into Streamlit's middleware, then run Streamlit's own command line."""
    from starlette.middleware import Middleware
    from streamlit.web import cli
    from streamlit.web.server.starlette import starlette_app

    from rl_board.config import server_config

    allowed = server_config().allowed_hosts
    original = starlette_app.create_streamlit_middleware

    def with_host_check() -> list[Middleware]:
        return [Middleware(HostCheck, allowed=allowed), *original()]

    starlette_app.create_streamlit_middleware = with_host_check
    config = server_config()
    if config.remotes:  # remote roots: list them again now and then, so new and grown files appear
        from rl_board.sources import remote

        remote.follow([url for _, url in config.remotes], config.cache_dir)
    sys.argv = ["streamlit", *(sys.argv[1:] if argv is None else argv)]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
