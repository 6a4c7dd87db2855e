"""Server configuration: read once per process into one object.

``rl-board serve`` writes the roots and the cache folder into the server's
environment (``RL_BOARD_ROOTS``, ``RL_BOARD_CACHE_DIR``); this is the only
module that reads them. Commands pass their ``--cache-dir`` explicitly.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOTS_ENV = "RL_BOARD_ROOTS"
CACHE_ENV = "RL_BOARD_CACHE_DIR"
TOKENIZER_ENV = "RL_BOARD_TOKENIZER"
HOSTS_ENV = "RL_BOARD_ALLOWED_HOSTS"
REMOTES_ENV = "RL_BOARD_REMOTES"  # JSON [[local mirror folder, URL], ...] for roots served from object storage
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
DEFAULT_ROOT = "rollout_samples"


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """$RL_BOARD_CACHE_DIR, else $XDG_CACHE_HOME/rl-board, else ~/.cache/rl-board."""
    env = os.environ if env is None else env
    explicit = env.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = env.get("XDG_CACHE_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "rl-board"


MAX_LINE_ENV = "RL_BOARD_MAX_LINE_BYTES"
MAX_LINE_DEFAULT = 256 * 1024 * 1024


def max_line_bytes(env: Mapping[str, str] | None = None) -> int:
    """The longest log line read: $RL_BOARD_MAX_LINE_BYTES (a positive number of bytes), else 256 MB.

    Read from the environment so worker processes, which inherit it, use the same cap.
    """
    env = os.environ if env is None else env
    try:
        value = int(env.get(MAX_LINE_ENV, ""))
    except ValueError:
        return MAX_LINE_DEFAULT
    return value if value > 0 else MAX_LINE_DEFAULT


@dataclass(frozen=True)
class ServerConfig:
    """What the server was started with: the folders it may read and where its cache lives."""

    roots: tuple[Path, ...]
    cache_dir: Path
    tokenizer: Path | None = None  # a tokenizer.json (or a folder with one) for runs that log token ids
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS  # names a browser may reach the server by (Host header)
    remotes: tuple[tuple[Path, str], ...] = ()  # (mirror folder, URL): roots that live on object storage

    def label(self, root: Path) -> str:
        """A root as the user named it: its URL when it is the mirror of a remote root."""
        return next((url for local, url in self.remotes if local == root), str(root))

    @property
    def metrics_cache_dir(self) -> Path:
        """Parsed metric tables live beside the rollout cache, in their own folder."""
        return self.cache_dir / "metrics"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ServerConfig:
        env = os.environ if env is None else env
        raw = env.get(ROOTS_ENV, "")
        parts = [p for p in raw.split(os.pathsep) if p.strip()] or [DEFAULT_ROOT]
        roots = tuple(Path(p).expanduser().resolve() for p in parts)
        tokenizer = env.get(TOKENIZER_ENV)
        hosts = tuple(h for h in env.get(HOSTS_ENV, "").split(",") if h.strip()) or LOOPBACK_HOSTS
        try:
            remotes = tuple((Path(local), str(url)) for local, url in json.loads(env.get(REMOTES_ENV) or "[]"))
        except (ValueError, TypeError):
            remotes = ()
        return cls(roots=roots, cache_dir=default_cache_dir(env),
                   tokenizer=Path(tokenizer).expanduser() if tokenizer else None, allowed_hosts=hosts,
                   remotes=remotes)

    def to_env(self) -> dict[str, str]:
        """The environment a server process reads this configuration from."""
        env = {ROOTS_ENV: os.pathsep.join(str(r) for r in self.roots), CACHE_ENV: str(self.cache_dir)}
        if self.tokenizer is not None:
            env[TOKENIZER_ENV] = str(self.tokenizer)
        env[HOSTS_ENV] = ",".join(self.allowed_hosts)
        if self.remotes:
            env[REMOTES_ENV] = json.dumps([[str(local), url] for local, url in self.remotes])
        return env


@functools.cache
def server_config() -> ServerConfig:
    """This process's configuration (read from the environment the first time it is asked)."""
    return ServerConfig.from_env()


def reset() -> None:
    """Forget the configuration read so far (tests that start several apps in one process)."""
    server_config.cache_clear()
