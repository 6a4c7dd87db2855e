"""Configuration: every setting rl-board reads from its environment, read once per process, in one object.

``settings()`` holds what the server was started with (``ServerConfig``:
``rl-board serve`` writes the roots and the cache folder into the server's
environment, ``RL_BOARD_ROOTS``, ``RL_BOARD_CACHE_DIR``...), every byte size
the readers work with (``Sizes``, each settable as ``RL_BOARD_<NAME>``), and
how often a served bucket is looked at. This is the only module that reads
the environment; nothing is read at import time, and worker processes, which
inherit the environment, see the same values. Commands pass their
``--cache-dir`` explicitly.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field, fields
from pathlib import Path

ROOTS_ENV = "RL_BOARD_ROOTS"
CACHE_ENV = "RL_BOARD_CACHE_DIR"
TOKENIZER_ENV = "RL_BOARD_TOKENIZER"
HOSTS_ENV = "RL_BOARD_ALLOWED_HOSTS"
REMOTES_ENV = (
    "RL_BOARD_REMOTES"  # JSON [[local mirror folder, URL], ...] for roots served from object storage
)
TOKEN_ENV = "RL_BOARD_TOKEN"  # the token a browser must bring once (``/?token=...``); empty = not given
NO_TOKEN_ENV = "RL_BOARD_NO_TOKEN"  # "1": every browser is let in (``serve --no-token``, behind a proxy)
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"  # read by numpy's OpenBLAS when numpy is imported
# The names OpenBLAS takes its thread count from (its own first): a user who set any of them chose a number
BLAS_CHOSEN_ENV = (BLAS_THREADS_ENV, "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
HUGE_PAGES_ENV = "NUMPY_MADVISE_HUGEPAGE"  # read by numpy when it is imported: "0", no huge pages asked for
# New objects between two collections of Python's first generation where a process collects rarely: a
# command's process (its imports make tens of thousands of objects that live as long as it does) and a
# load (``rollouts/read/collector.py``: its records hold no cycles). CPython's own is 700.
RARE_GC_EVERY = 100_000
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
DEFAULT_ROOT = "rollout_samples"


def served_url(host: str, port: int, token: str = "") -> str:
    """The address a server is opened at, with its token (``?token=...``) when it has one. A bind address
    for every interface is shown as 127.0.0.1."""
    from urllib.parse import quote

    host = host.strip().strip("[]")
    if host in ("", "0", "0.0.0.0", "::"):
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={quote(token, safe='')}" if token else "")


def numpy_env(env: MutableMapping[str, str] | None = None) -> None:
    """Sets numpy up for the processes rl-board starts (its commands, the server, a load's workers), in
    ``env`` (this process's by default), before they import numpy. Each setting is left alone when the user
    chose one.

    - **One BLAS thread** (``OPENBLAS_NUM_THREADS``, or OpenBLAS's older ``GOTO_NUM_THREADS`` and
      ``OMP_NUM_THREADS``). rl-board does no linear algebra worth a thread, yet at import OpenBLAS starts one
      thread per extra core, and each spins ~0.1 s of CPU before it sleeps: on two cores that was a third of
      ``rl-board query``'s CPU (0.41-0.45 -> 0.23-0.34 s user), taken from its DuckDB thread and from the
      user's other work.
    - **No transparent huge pages for arrays** (``NUMPY_MADVISE_HUGEPAGE=0``). numpy asks the kernel for
      2 MB pages for every array of 4 MB or more. A load makes and drops such arrays by the hundred, and
      the kernel zeroes each one afresh, 2 MB at a time: 8.7% of a 1 GB load's CPU went to zeroing pages,
      2-5% without them, and the load's CPU fell by ~5% (docs/speed.md, the tenth sitting).
    """
    env = os.environ if env is None else env
    if not any(env.get(name) for name in BLAS_CHOSEN_ENV):
        env[BLAS_THREADS_ENV] = "1"
    if not env.get(HUGE_PAGES_ENV):
        env[HUGE_PAGES_ENV] = "0"


def worker_env() -> dict[str, str]:
    """The environment of a worker process rl-board starts: this one's, with numpy set up (``numpy_env``)."""
    env = dict(os.environ)
    numpy_env(env)
    return env


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """$RL_BOARD_CACHE_DIR, else $XDG_CACHE_HOME/rl-board, else ~/.cache/rl-board."""
    env = os.environ if env is None else env
    explicit = env.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = env.get("XDG_CACHE_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "rl-board"


def metrics_cache_dir(cache_dir: str | Path | None = None) -> Path:
    """Parsed metric tables live beside the rollout cache (``--cache-dir`` or the default), in their own
    folder: the server and the CLI share them."""
    return (Path(cache_dir).expanduser() if cache_dir else default_cache_dir()) / "metrics"


KB, MB = 1024, 1024 * 1024


@dataclass(frozen=True)
class Sizes:
    """Every byte size rl-board works with. Each can be set with ``$RL_BOARD_<NAME>`` (the field's name in
    capitals, a positive number of bytes); a value that is not one is ignored."""

    max_line_bytes: int = 256 * MB  # the longest log line read; a longer one is reported, never read
    block_bytes: int = 16 * MB  # a rollout file is parsed in blocks of about this much
    segment_bytes: int = (
        128 * MB
    )  # a big load's jobs (each one cache segment) grow up to this much of a file (``ingest.job_bytes``)
    pool_min_bytes: int = (
        160 * MB
    )  # a load this big starts the worker pool (``ingest.cost_per_byte`` weighs it)
    warm_pool_min_bytes: int = 8 * MB  # a warm pool is used from two blocks of this much
    fork_min_bytes: int = (
        4 * MB
    )  # a load this big is shared with forked helpers where this process may fork (``read.forked``)
    helper_pipe_bytes: int = MB  # the pipe a forked helper answers through (asked of Linux: it rarely waits)
    json_block_bytes: int = 4 * MB  # pyarrow.json's parse task size (one per core at a time)
    batch_block_bytes: int = 256 * KB  # blocks this small (one per small file) are parsed several at once
    batch_bytes: int = 4 * MB  # up to this much of them together
    scan_bytes: int = MB  # reads that look for newlines or skip an over-long line
    structure_scan_bytes: int = (
        256 * KB
    )  # a line's brackets are counted in passes of this much (bounds memory)
    bracket_count_bytes: int = MB  # a block's "[" are counted in passes of this much (``bulk._squares``)
    path_choice_bytes: int = MB  # bytes of a block looked at to choose its parse path
    sniff_bytes: int = 64 * KB  # the first bytes of a JSON-lines file that say what it is
    sniff_line_bytes: int = 16 * MB  # up to this much of a first line that is longer (ROLL writes one line)
    text_sniff_bytes: int = 4 * MB  # how far into a text file its first metric line is looked for
    probe_head_bytes: int = 64 * KB  # the start of a file checked before only its new bytes are read
    probe_tail_bytes: int = 4 * KB  # each window checked at its end and in between
    direct_write_min_bytes: int = 256 * KB  # segment buffers this big skip the page cache
    write_buffer_bytes: int = 64 * MB  # the segment buffer a process keeps (a bigger segment gets its own)
    load_heap_piece_bytes: int = 32 * MB  # while loading, freed pieces up to this much stay in the heap
    # (``rollouts.read.heap``; 32 MB is the most glibc takes)
    compact_small_bytes: int = 4 * MB  # cache segments smaller than this are merged
    dataset_cache_bytes: int = 512 * MB  # text and tokens of recently shown steps of a dataset read in place
    remote_head_bytes: int = MB  # what a served bucket's big rollout log is copied of until its run is opened
    remote_chunk_bytes: int = 8 * MB  # the size of one ranged read from a bucket
    growth_check_bytes: int = (
        4 * KB
    )  # a grown object's old start and end, read back before only its new bytes
    growth_window_bytes: int = 512  # each window read back between them
    tracker_batch_bytes: int = 32 * MB  # a tracker's log (W&B's .wandb) is decoded this much at a time

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Sizes:
        given = {}
        for f in fields(cls):
            try:
                value = int(env.get(f"RL_BOARD_{f.name.upper()}", ""))
            except ValueError:
                continue
            if value > 0:
                given[f.name] = value
        return cls(**given)


@dataclass(frozen=True)
class Served:
    """What a door may read and where it keeps what it derives: the served roots (None: anywhere, as the CLI
    and a notebook read) and the cache folder. The two always travel together, as this one value."""

    cache_dir: Path
    roots: tuple[Path, ...] | None = None

    @property
    def allowed(self) -> list[Path] | None:
        """The roots as the data layer takes them (None: no confinement)."""
        return None if self.roots is None else list(self.roots)

    @property
    def metrics_cache_dir(self) -> Path:
        """Parsed metric tables live beside the rollout cache, in their own folder."""
        return metrics_cache_dir(self.cache_dir)


@dataclass(frozen=True)
class ServerConfig:
    """What the server was started with: the folders it may read and where its cache lives."""

    roots: tuple[Path, ...]
    cache_dir: Path
    tokenizer: Path | None = None  # a tokenizer.json (or a folder with one) for runs that log token ids
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS  # names a browser may reach the server by (Host header)
    remotes: tuple[tuple[Path, str], ...] = ()  # (mirror folder, URL): roots that live on object storage
    token: str = field(default="", repr=False)  # browsers bring it once (server.py); "": none given yet
    no_token: bool = False  # every browser is let in: ``serve --no-token``, behind a proxy with its own login

    def label(self, root: Path) -> str:
        """A root as the user named it: its URL when it is the mirror of a remote root."""
        return next((url for local, url in self.remotes if local == root), str(root))

    @property
    def metrics_cache_dir(self) -> Path:
        """Parsed metric tables live beside the rollout cache, in their own folder."""
        return metrics_cache_dir(self.cache_dir)

    @property
    def served(self) -> Served:
        """The roots this server may read and its cache, as the one value the data layer's doors take."""
        return Served(self.cache_dir, self.roots)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ServerConfig:
        env = os.environ if env is None else env
        raw = env.get(ROOTS_ENV, "")
        parts = [p for p in raw.split(os.pathsep) if p.strip()] or [DEFAULT_ROOT]
        roots = tuple(Path(p).expanduser().resolve() for p in parts)
        tokenizer = env.get(TOKENIZER_ENV)
        hosts = tuple(h for h in env.get(HOSTS_ENV, "").split(",") if h.strip()) or LOOPBACK_HOSTS
        try:
            remotes = tuple(
                (Path(local), str(url)) for local, url in json.loads(env.get(REMOTES_ENV) or "[]")
            )
        except (ValueError, TypeError):
            remotes = ()
        return cls(
            roots=roots,
            cache_dir=default_cache_dir(env),
            tokenizer=Path(tokenizer).expanduser() if tokenizer else None,
            allowed_hosts=hosts,
            remotes=remotes,
            token=env.get(TOKEN_ENV, ""),
            no_token=env.get(NO_TOKEN_ENV, "") == "1",
        )

    def to_env(self) -> dict[str, str]:
        """The environment a server process reads this configuration from."""
        env = {ROOTS_ENV: os.pathsep.join(str(r) for r in self.roots), CACHE_ENV: str(self.cache_dir)}
        if self.tokenizer is not None:
            env[TOKENIZER_ENV] = str(self.tokenizer)
        env[HOSTS_ENV] = ",".join(self.allowed_hosts)
        if self.remotes:
            env[REMOTES_ENV] = json.dumps([[str(local), url] for local, url in self.remotes])
        env[TOKEN_ENV] = "" if self.no_token else self.token  # the environment: only this user can read it
        env[NO_TOKEN_ENV] = "1" if self.no_token else ""
        return env


REMOTE_EVERY_ENV = "RL_BOARD_REMOTE_EVERY"  # seconds between looks at a served bucket
REMOTE_EVERY_DEFAULT = 15.0


@dataclass(frozen=True)
class Settings:
    """Everything this process reads from its environment (see the module docstring)."""

    server: ServerConfig
    sizes: Sizes
    remote_every: float = REMOTE_EVERY_DEFAULT
    labels: Path = Path("labels.sqlite")  # where labels on samples are kept (rollouts/labels.py)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        try:
            every = max(1.0, float(env.get(REMOTE_EVERY_ENV, REMOTE_EVERY_DEFAULT)))
        except ValueError:
            every = REMOTE_EVERY_DEFAULT
        return cls(ServerConfig.from_env(env), Sizes.from_env(env), every, labels_path(env))


LABELS_ENV = "RL_BOARD_LABELS"


def labels_path(env: Mapping[str, str]) -> Path:
    """$RL_BOARD_LABELS (a file a team shares), else $XDG_DATA_HOME/rl-board/labels.sqlite, else
    ~/.local/share/rl-board/labels.sqlite: the user's data folder, never the cache (clearing it keeps
    them)."""
    explicit = env.get(LABELS_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = env.get("XDG_DATA_HOME")
    return (
        (Path(base).expanduser() if base else Path.home() / ".local" / "share") / "rl-board" / "labels.sqlite"
    )


@functools.cache
def settings() -> Settings:
    """This process's settings (read from the environment the first time they are asked for)."""
    return Settings.from_env()


def server_config() -> ServerConfig:
    """What the server was started with."""
    return settings().server


def sizes() -> Sizes:
    """The byte sizes the readers work with."""
    return settings().sizes


def reset() -> None:
    """Forget the settings read so far (tests that change the environment or start several apps)."""
    settings.cache_clear()
