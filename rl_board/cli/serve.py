"""`rl-board serve`: become the Streamlit server for one or more log roots."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path
from typing import Any

from rl_board.config import (
    LABELS_ENV,
    LOOPBACK_HOSTS,
    REMOTE_EVERY_ENV,
    TOKEN_ENV,
    ServerConfig,
    default_cache_dir,
    served_url,
)
from rl_board.errors import RLBoardError

APP = Path(__file__).resolve().parent.parent / "ui" / "app.py"
PROJECT = Path(__file__).resolve().parent.parent.parent
ALL_INTERFACES = {"0.0.0.0", "::", ""}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the dashboard on one or more log roots")
    p.add_argument(
        "roots",
        nargs="*",
        default=["rollout_samples"],
        metavar="ROOT",
        help="folders that may be browsed, or object-storage prefixes (s3://bucket/runs, gs://..., "
        "hf://datasets/org/repo/...) mirrored into the cache (default: rollout_samples)",
    )
    p.add_argument(
        "--allow-root",
        action="append",
        default=[],
        metavar="DIR",
        help="another folder that may be browsed (repeatable)",
    )
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name browsers may reach the server by besides localhost / 127.0.0.1 / ::1, "
        "e.g. a reverse proxy's name (repeatable); other names are refused (DNS rebinding)",
    )
    p.add_argument("--port", type=int, default=8901)
    p.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help="the token a browser must open the dashboard with once (?token=TOKEN), e.g. one a team shares "
        f"(default ${TOKEN_ENV}, else a new one each start, printed in the address). Other users of the "
        f"machine see a command line in `ps`: prefer ${TOKEN_ENV}",
    )
    p.add_argument(
        "--no-token",
        action="store_true",
        help="let every browser in without a token: only behind a reverse proxy that has its own login "
        "(with --allow-host NAME)",
    )
    p.add_argument(
        "--tokenizer",
        default=None,
        metavar="PATH",
        help="a tokenizer.json or a local model folder: shows token ids (NeMo-RL, prime-rl) as text",
    )
    p.add_argument(
        "--cache-dir", default=None, help="cache folder (default $RL_BOARD_CACHE_DIR or ~/.cache/rl-board)"
    )
    p.add_argument(
        "--remote-every",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="how often remote roots are listed again for new and grown files (default 15)",
    )
    p.add_argument(
        "--labels",
        default=None,
        metavar="FILE",
        help="the SQLite file labels on samples are kept in, e.g. one a team shares (default "
        "$RL_BOARD_LABELS, else $XDG_DATA_HOME/rl-board/labels.sqlite)",
    )
    p.set_defaults(func=run)


def _mirrored(url: str, cache_dir: Path) -> Path:
    """A remote root brought into the cache before the server starts, with its progress on stderr."""

    def show(done: int, total: int) -> None:
        print(
            f"\rrl-board: fetching {url}: {done / 1e6:.1f} of {total / 1e6:.1f} MB", end="", file=sys.stderr
        )

    from rl_board.api import remote

    result = remote.mirror(url, cache_dir, progress=show, whole=False)  # a run's logs: when it is opened
    print(
        f"\rrl-board: {url}: {result.objects} objects, {result.fetched_bytes / 1e6:.1f} MB fetched"
        f" ({result.unchanged_files} unchanged)",
        file=sys.stderr,
    )
    for key, why in result.skipped:
        print(f"rl-board: not mirrored: {key}: {why}", file=sys.stderr)
    if not result.local.is_dir():
        raise RLBoardError(f"{url} is one object, not a prefix; serve the prefix that holds it")
    return result.local


def is_loopback(host: str) -> bool:
    """Whether a bind address only listens on this machine (names and 0 / :: are not)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(bind: str, extra: list[str]) -> tuple[str, ...]:
    """Loopback names, the bind address when it is a specific one, and the names given with --allow-host."""
    names = [*LOOPBACK_HOSTS, *(n.strip().lower() for n in extra if n.strip())]
    if bind.strip() and bind not in ALL_INTERFACES:
        names.append(bind.strip().strip("[]").lower())
    return tuple(dict.fromkeys(names))


def run(ns: argparse.Namespace) -> int:
    """Check the roots (bring remote ones into the cache), then exec Streamlit with the configuration."""
    from rl_board.api import TokenText, remote

    cache_dir = Path(ns.cache_dir).expanduser().resolve() if ns.cache_dir else default_cache_dir()
    named = [*ns.roots, *ns.allow_root]
    remotes = tuple((_mirrored(url, cache_dir), url) for url in named if remote.is_url(url))
    roots = [Path(r).expanduser() for r in named if not remote.is_url(r)] + [local for local, _ in remotes]
    missing = [str(r) for r in roots if not r.is_dir()]
    if missing:
        raise RLBoardError(f"not a folder: {', '.join(missing)}")
    if not is_loopback(ns.host):
        print(
            f"warning: binding {ns.host or 'all interfaces'} exposes the dashboard to your network; "
            "put it behind a reverse proxy with authentication (see README) and name the host browsers "
            "use with --allow-host.",
            file=sys.stderr,
        )
    if ns.token is not None and not ns.token.strip():
        raise RLBoardError("--token is empty: give a token, or serve without one with --no-token")
    if ns.token is not None and ns.no_token:
        raise RLBoardError("--token and --no-token: choose one")
    import secrets  # here, not at the top: every command's parser is built from this module

    token = "" if ns.no_token else (ns.token or os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(32))
    if ns.no_token:
        print(
            "warning: --no-token: every browser that reaches this address sees the runs; keep it behind a "
            "reverse proxy with its own login.",
            file=sys.stderr,
        )
    tokenizer = Path(ns.tokenizer).expanduser().resolve() if ns.tokenizer else None
    if tokenizer is not None:
        TokenText(tokenizer)  # fail now, with one line, rather than on the first sample page
    config = ServerConfig(
        roots=tuple(r.resolve() for r in roots),
        cache_dir=cache_dir,
        tokenizer=tokenizer,
        allowed_hosts=allowed_hosts(ns.host, ns.allow_host),
        remotes=tuple((local.resolve(), url) for local, url in remotes),
        token=token,
        no_token=ns.no_token,
    )
    env = {**os.environ, **config.to_env(), REMOTE_EVERY_ENV: str(ns.remote_every)}
    if ns.labels:
        env[LABELS_ENV] = str(Path(ns.labels).expanduser().resolve())
    cmd = [
        sys.executable,
        "-m",
        "rl_board.server",
        "run",
        str(APP),
        "--server.address",
        ns.host,
        "--server.port",
        str(ns.port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
        "--client.toolbarMode",
        "minimal",
        "--client.showErrorDetails",
        "none",
        "--logger.hideWelcomeMessage",
        "true",  # Streamlit's own address has no token: the one printed below is the way in
    ]
    if (PROJECT / ".streamlit" / "config.toml").is_file():
        os.chdir(PROJECT)  # Streamlit reads the theme from ./.streamlit/config.toml
    # The first line out, before Streamlit starts: the address with the token (the only place it is written).
    print(
        f"rl-board: serving {', '.join(config.label(r) for r in config.roots)} at "
        f"{served_url(ns.host, ns.port, token)}",
        flush=True,
    )
    # Become the server (exec): a signal to this process reaches Streamlit itself.
    os.execve(sys.executable, cmd, env)
    return 0  # not reached
