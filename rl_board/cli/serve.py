"""`rl-board serve`: become the Streamlit server for one or more log roots."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from rl_board.config import ServerConfig, default_cache_dir
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
    p.add_argument("--port", type=int, default=8901)
    p.add_argument("--tokenizer", default=None, metavar="PATH",
                   help="a tokenizer.json or a local model folder: shows token ids (NeMo-RL, prime-rl) as text")
    p.add_argument("--cache-dir", default=None, help="cache folder (default $RL_BOARD_CACHE_DIR or ~/.cache/rl-board)")
    p.set_defaults(func=run)


def run(ns: argparse.Namespace) -> int:
    """Check the roots, then exec Streamlit with the configuration in its environment."""
    roots = [Path(r).expanduser() for r in [*ns.roots, *ns.allow_root]]
    missing = [str(r) for r in roots if not r.is_dir()]
    if missing:
        raise RLBoardError(f"not a folder: {', '.join(missing)}")
    if ns.host in ALL_INTERFACES:
        print(f"warning: binding {ns.host or 'all interfaces'} exposes the dashboard to your network; "
              "put it behind a reverse proxy with authentication (see README).", file=sys.stderr)
    cache_dir = Path(ns.cache_dir).expanduser().resolve() if ns.cache_dir else default_cache_dir()
    tokenizer = Path(ns.tokenizer).expanduser().resolve() if ns.tokenizer else None
    if tokenizer is not None:
        TokenText(tokenizer)  # fail now, with one line, rather than on the first sample page
    config = ServerConfig(roots=tuple(r.resolve() for r in roots), cache_dir=cache_dir, tokenizer=tokenizer)
    env = {**os.environ, **config.to_env()}
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP),
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
