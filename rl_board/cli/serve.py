"""`rl-board serve`: become the Streamlit server for one or more log roots."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path
from typing import Any

from rl_board.config import LOOPBACK_HOSTS, ServerConfig, default_cache_dir
from rl_board.errors import RLBoardError
from rl_board.rollouts.tokens import TokenText

APP = Path(__file__).resolve().parent.parent / "ui" / "app.py"
PROJECT = Path(__file__).resolve().parent.parent.parent
ALL_INTERFACES = {"0.0.0.0", "::", ""}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the dashboard on one or more log roots")
    p.add_argument("roots", nargs="*", default=["rollout_samples"], metavar="ROOT",
                   help="folders that may be browsed (default: rollout_samples)")
    p.add_argument("--allow-root", action="append", default=[], metavar="DIR",
                   help="another folder that may be browsed (repeatable)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a host name browsers may reach the server by besides localhost / 127.0.0.1 / ::1, "
                        "e.g. a reverse proxy's name (repeatable); other names are refused (DNS rebinding)")
    p.add_argument("--port", type=int, default=8901)
    p.add_argument("--tokenizer", default=None, metavar="PATH",
                   help="a tokenizer.json or a local model folder: shows token ids (NeMo-RL, prime-rl) as text")
    p.add_argument("--cache-dir", default=None, help="cache folder (default $RL_BOARD_CACHE_DIR or ~/.cache/rl-board)")
    p.set_defaults(func=run)


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
    """Check the roots, then exec Streamlit with the configuration in its environment."""
    roots = [Path(r).expanduser() for r in [*ns.roots, *ns.allow_root]]
    missing = [str(r) for r in roots if not r.is_dir()]
    if missing:
        raise RLBoardError(f"not a folder: {', '.join(missing)}")
    if not is_loopback(ns.host):
        print(f"warning: binding {ns.host or 'all interfaces'} exposes the dashboard to your network; "
              "put it behind a reverse proxy with authentication (see README) and name the host browsers "
              "use with --allow-host.", file=sys.stderr)
    cache_dir = Path(ns.cache_dir).expanduser().resolve() if ns.cache_dir else default_cache_dir()
    tokenizer = Path(ns.tokenizer).expanduser().resolve() if ns.tokenizer else None
    if tokenizer is not None:
        TokenText(tokenizer)  # fail now, with one line, rather than on the first sample page
    config = ServerConfig(roots=tuple(r.resolve() for r in roots), cache_dir=cache_dir, tokenizer=tokenizer,
                          allowed_hosts=allowed_hosts(ns.host, ns.allow_host))
    env = {**os.environ, **config.to_env()}
    cmd = [sys.executable, "-m", "rl_board.server", "run", str(APP),
           "--server.address", ns.host, "--server.port", str(ns.port),
           "--server.headless", "true", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none", "--client.toolbarMode", "minimal",
           "--client.showErrorDetails", "none"]
    if (PROJECT / ".streamlit" / "config.toml").is_file():
        os.chdir(PROJECT)  # Streamlit reads the theme from ./.streamlit/config.toml
    print(f"rl-board: serving {', '.join(str(r) for r in roots)} at http://{ns.host}:{ns.port}", flush=True)
    # Become the server (exec): a signal to this process reaches Streamlit itself.
    os.execve(sys.executable, cmd, env)
    return 0  # not reached
