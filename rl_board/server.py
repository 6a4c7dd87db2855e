"""The server process: Streamlit with a check of the ``Host`` header and of a token in front of every request.

A page on another site can make its own host name resolve to 127.0.0.1 (DNS
rebinding) and then drive a dashboard that only listens on loopback. Browsers
still send that site's name in ``Host``, so requests (and WebSocket upgrades)
whose ``Host`` is not a name this server was started for are refused with 403
before Streamlit sees them. ``rl-board serve`` execs ``python -m rl_board.server``.

Loopback keeps other machines out, not the other users of this one: every
server has a token (``TokenCheck``). A browser that opens any page with
``?token=TOKEN`` gets a cookie and is sent to the same address without the
token; after that the cookie lets it in. Without the cookie, the WebSocket
that carries every run's data is refused at its handshake, every other path
but ``/_stcore/health`` answers a plain page saying how to get in (the
static JavaScript bundle too: nothing of Streamlit is served before the
token). docs/security.md has the threat model.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import shlex
import stat
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

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


TOKEN_PARAM = "token"
OPEN_PATHS = ("/_stcore/health",)  # answered without the token (under the base URL path too): no data
COOKIE_MAX_AGE = 7 * 24 * 3600  # seconds a browser stays let in (a new token lets nobody in with an old one)
REFUSED_PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<title>rl-board: open the address with the token</title></head>
<body style="font-family: sans-serif; max-width: 44em; margin: 3em auto; line-height: 1.5">
<h1>This rl-board server needs its token</h1>
<p>It lets in a browser that has opened it once with its token. Open the address the server printed
when it started: the line <code>rl-board: serving ... at http://.../?token=...</code> in the terminal
where <code>rl-board serve</code> or <code>bash start.sh</code> runs. A server started with
<code>--token</code> or <code>RL_BOARD_TOKEN</code>: ask whoever started it for the token and add
<code>?token=...</code> to the address.</p>
<p>After that, this browser gets in without the token, shared links included.
Already did? <a href="">Open this page again</a>.</p>
<script>
/* A link followed from another site does not carry the cookie (SameSite=Strict): ask once more from here. */
try {
  var key = "rl-board-retry:" + location.pathname + location.search;
  var last = Number(sessionStorage.getItem(key) || 0);
  if (Date.now() - last > 10000) {
    sessionStorage.setItem(key, String(Date.now()));
    location.replace(location.href);
  }
} catch (e) {}
</script>
</body></html>
"""


def _digest(token: str, what: str) -> str:
    return hmac.new(token.encode("utf-8"), what.encode("utf-8"), hashlib.sha256).hexdigest()


def cookie_name(token: str, port: int) -> str:
    """The cookie of the server on ``port`` with ``token``: browsers send every cookie of a host to all its
    ports, so the name is this server's own (its port and a digest of its token), never another's."""
    return f"rl-board-{port}-{_digest(token, f'rl-board cookie name {port}')[:16]}"


def cookie_value(token: str, port: int) -> str:
    """What the cookie holds: an HMAC of the port keyed by the token, not the token itself. Another server
    (another token or port) expects another value; the same token on the same port (a restart) the same."""
    return _digest(token, f"rl-board session {port}")


def split_token(query: bytes) -> tuple[list[str], bytes]:
    """The values of every ``token`` parameter of a query string, and the query string without them (the
    other parameters kept byte for byte, in their order)."""
    given: list[str] = []
    kept: list[bytes] = []
    for part in query.split(b"&"):
        if not part:
            continue
        key, _, value = part.partition(b"=")
        if unquote_plus(key.decode("latin-1")) == TOKEN_PARAM:
            given.append(unquote_plus(value.decode("latin-1"), encoding="utf-8", errors="replace"))
        else:
            kept.append(part)
    return given, b"&".join(kept)


def _cookies(scope: Scope) -> list[tuple[str, str]]:
    out = []
    for key, value in scope.get("headers") or []:
        if key == b"cookie":
            for part in value.decode("latin-1").split(";"):
                name, sep, val = part.strip().partition("=")
                if sep:
                    out.append((name.strip(), val.strip().strip('"')))
    return out


def _with_referrer_policy(send: Send) -> Send:
    """Every response says ``Referrer-Policy: no-referrer``: an address with the token never leaves in a
    Referer header."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", []), (b"referrer-policy", b"no-referrer")]
            message = {**message, "headers": headers}
        await send(message)

    return sending


class TokenCheck:
    """ASGI middleware: only a browser that brought the token once (it then has this server's cookie)
    reaches the app; ``token=None`` (``serve --no-token``) lets everyone in. See the module docstring."""

    def __init__(self, app: Callable[..., Awaitable[None]], token: str | None, base_path: str = "") -> None:
        self.app = app
        self.token = token
        base = "/" + base_path.strip("/") if base_path.strip("/") else ""
        self.open_paths = frozenset(base + p for p in OPEN_PATHS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            send = _with_referrer_policy(send)
        if self.token is None:
            await self.app(scope, receive, send)
            return
        port = (scope.get("server") or ("", 0))[1] or 0
        admitted = self._has_cookie(scope, port)
        if scope["type"] == "websocket":
            if admitted:
                await self.app(scope, receive, send)
            else:
                await receive()  # the connect event; closing before accepting answers the upgrade with 403
                await send({"type": "websocket.close", "code": 1008})
            return
        given, kept = split_token(scope.get("query_string") or b"")
        if given and scope.get("method") in ("GET", "HEAD"):
            right = any(hmac.compare_digest(g.encode("utf-8"), self.token.encode("utf-8")) for g in given)
            if right or admitted:  # the token leaves the address bar (a wrong one sets nothing)
                await self._redirect(scope, send, kept, port if right else None)
                return
        if admitted or scope.get("path") in self.open_paths:
            await self.app(scope, receive, send)
            return
        await self._refuse(send)

    def _has_cookie(self, scope: Scope, port: int) -> bool:
        assert self.token is not None
        name, value = cookie_name(self.token, port), cookie_value(self.token, port).encode()
        return any(n == name and hmac.compare_digest(v.encode("latin-1"), value) for n, v in _cookies(scope))

    async def _redirect(self, scope: Scope, send: Send, query: bytes, port: int | None) -> None:
        """303 to the same path and the other parameters; with ``port``, this server's cookie is set."""
        path = scope.get("raw_path") or scope["path"].encode("utf-8")
        path = b"/" + path.lstrip(b"/\\")  # never ``//other.site``: a redirect stays on this server
        headers = [
            (b"location", path + (b"?" + query if query else b"")),
            (b"cache-control", b"no-store"),
            (b"content-length", b"0"),
        ]
        if port is not None:
            assert self.token is not None
            secure = "; Secure" if scope.get("scheme") in ("https", "wss") else ""
            cookie = (
                f"{cookie_name(self.token, port)}={cookie_value(self.token, port)}; Path=/; "
                f"Max-Age={COOKIE_MAX_AGE}; HttpOnly; SameSite=Strict{secure}"
            )
            headers.append((b"set-cookie", cookie.encode("latin-1")))
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def _refuse(self, send: Send) -> None:
        """The same plain page for a missing and a wrong token: how to get in, nothing of the runs."""
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", str(len(REFUSED_PAGE)).encode()),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": REFUSED_PAGE})


def _option(args: list[str], name: str, default: str) -> str:
    """A ``--name value`` / ``--name=value`` option of Streamlit's command line."""
    for k, arg in enumerate(args):
        if arg == name and k + 1 < len(args):
            return args[k + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def _warn_if_cache_is_open(cache_dir: Path) -> None:
    """Make the cache folder (0700) when there is none; say so when other users can open the one there is."""
    from rl_board import private

    try:
        private.make_dir(cache_dir)
        mode = stat.S_IMODE(cache_dir.stat().st_mode)
    except OSError:
        return  # a cache that cannot be made is reported when a run is opened
    if private.open_to_others(cache_dir):
        print(
            f"rl-board: warning: other users of this machine can open the cache folder {cache_dir} (mode "
            f"{mode:o}), which holds copies of the runs; make it yours alone: "
            f"chmod -R go-rwx {shlex.quote(str(cache_dir))}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    """Install the Host and token checks into Streamlit's middleware, then run Streamlit's own command
    line."""
    from starlette.middleware import Middleware
    from streamlit import config as streamlit_config
    from streamlit.web import cli
    from streamlit.web.server.starlette import starlette_app

    from rl_board.config import served_url, server_config

    args = sys.argv[1:] if argv is None else argv
    config = server_config()
    allowed = config.allowed_hosts
    token: str | None = None if config.no_token else config.token
    if token == "":  # started without ``rl-board serve``: a token of its own, said once
        token = secrets.token_urlsafe(32)
        host, port = _option(args, "--server.address", "127.0.0.1"), _option(args, "--server.port", "8501")
        print(f"rl-board: open {served_url(host, int(port), token)}", flush=True)
    _warn_if_cache_is_open(config.cache_dir)
    original = starlette_app.create_streamlit_middleware

    def with_host_check() -> list[Middleware]:
        base = str(streamlit_config.get_option("server.baseUrlPath") or "")
        return [
            Middleware(HostCheck, allowed=allowed),
            Middleware(TokenCheck, token=token, base_path=base),
            *original(),
        ]

    starlette_app.create_streamlit_middleware = with_host_check
    if config.remotes:  # remote roots: list them again now and then, so new and grown files appear
        from rl_board.sources import remote

        remote.follow([url for _, url in config.remotes], config.cache_dir)
    sys.argv = ["streamlit", *args]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
