"""One warm pool of ingest workers per process, reused by every open and refresh.

Workers are plain subprocesses (``python -m rl_board.rollouts.read.worker``) fed
one JSON job per stdin line and answering one JSON line each on stdout, so
nothing of the parent (its threads, its ``__main__``) is inherited or re-run.
The pool is started the first time a load is big enough to pay for it and is
kept: the next open or refresh finds its workers already imported. One load
uses it at a time; a second load meanwhile parses in its own thread.

Never leaked: the pool is shut down at interpreter exit; a worker exits when its
stdin closes (the parent closed the pool or died), when its parent process is
gone (checked every second, even mid-job), and after ``IDLE_SECONDS`` without a
job (the pool starts new ones on the next big load). A worker that dies is not
waited for: its jobs are parsed in this process and the pool is replaced.

While workers start (importing pyarrow and friends takes ~0.3 s each), this
process parses jobs itself, from the end of the queue, so start-up is not idle
time; results are handed back in job order whatever did them.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import selectors
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO, Any

from rl_board import config

IDLE_SECONDS = 600  # a worker without a job this long exits (memory back); the pool restarts on demand
AHEAD = 2  # jobs queued per worker
READY = "ready"  # a worker's first line, once its imports are done

Local = Callable[[int], Any]  # job index -> its result, computed in this process


def _stdin(proc: subprocess.Popen[bytes]) -> IO[bytes]:
    if proc.stdin is None:  # every worker is started with stdin=PIPE
        raise RuntimeError(f"worker {proc.pid} has no stdin pipe")
    return proc.stdin


def _stdout(proc: subprocess.Popen[bytes]) -> IO[bytes]:
    if proc.stdout is None:  # every worker is started with stdout=PIPE
        raise RuntimeError(f"worker {proc.pid} has no stdout pipe")
    return proc.stdout


class WorkerPool:
    """``n`` worker processes; ``run`` hands out jobs as workers free up and yields results in job order."""

    def __init__(self, n: int, idle_seconds: float = IDLE_SECONDS) -> None:
        self.owner = os.getpid()
        self.broken = False
        self.procs: list[subprocess.Popen[bytes]] = []
        cmd = [sys.executable, "-m", "rl_board.rollouts.read.worker", str(os.getpid()), str(idle_seconds)]
        env = config.worker_env()
        try:
            for _ in range(n):
                self.procs.append(
                    subprocess.Popen(
                        cmd,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        bufsize=0,
                        close_fds=True,
                        env=env,
                    )
                )
        except OSError:
            self.close()  # do not leave the ones that did start behind
            raise
        self.ready = [False] * n

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def wait_ready(self, timeout: float = 60.0) -> bool:
        """Block until every worker has done its imports (benchmarks and tests; loads never wait)."""
        deadline = time.monotonic() + timeout
        for w, proc in enumerate(self.procs):
            while not self.ready[w]:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([_stdout(proc)], [], [], left)[0]:
                    return False
                line = _stdout(proc).readline()  # the first line: nothing after it was asked for yet
                if not line:
                    return False
                self.ready[w] = line.strip().decode() == READY
        return True

    def healthy(self) -> bool:
        """Every worker still running, in the process that started them."""
        return not self.broken and self.owner == os.getpid() and all(p.poll() is None for p in self.procs)

    def close(self) -> None:
        """Close the workers' stdin (they exit), wait a little, then kill what is left."""
        for proc in self.procs:
            with contextlib.suppress(OSError):
                _stdin(proc).close()
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            with contextlib.suppress(OSError):
                _stdout(proc).close()

    def run(self, requests: list[str], local: Local, decode: Callable[[str], Any]) -> Iterator[Any]:
        """Results of every job (``requests[i]`` is job i's line), in order.

        ``local(i)`` does job i here: while no worker is ready yet, and for the jobs of a worker that died.
        Leaving the iteration early (an exception in the consumer) marks the pool broken: answers may
        still be on their way, so it must not be reused.
        """
        n_jobs = len(requests)
        queue = deque(range(n_jobs))
        results: dict[int, Any] = {}
        live = [w for w, p in enumerate(self.procs) if p.poll() is None]
        inflight: dict[int, deque[int]] = {w: deque() for w in live}
        buffers: dict[int, bytes] = {w: b"" for w in live}
        selector = selectors.DefaultSelector()
        for w in live:
            selector.register(_stdout(self.procs[w]), selectors.EVENT_READ, w)
        done = 0
        try:
            while done < n_jobs:
                if done in results:
                    yield results.pop(done)
                    done += 1
                    continue
                for w in [w for w in live if self.ready[w]]:
                    while queue and len(inflight[w]) < AHEAD:
                        i = queue.popleft()
                        if not self._send(w, requests[i]):
                            queue.appendleft(i)
                            self._lost(w, live, inflight, selector, results, local)
                            break
                        inflight[w].append(i)
                if not live:  # no worker left: the rest here, in order
                    while queue:
                        i = queue.popleft()
                        results[i] = local(i)
                    continue
                starting = bool(queue) and not any(self.ready[w] for w in live)
                for key, _ in selector.select(timeout=0 if starting else None):
                    w = key.data
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        self._lost(w, live, inflight, selector, results, local)
                        continue
                    *lines, buffers[w] = (buffers[w] + chunk).split(b"\n")
                    for line in lines:
                        if not self.ready[w]:
                            self.ready[w] = line.decode() == READY
                        elif inflight[w]:
                            results[inflight[w].popleft()] = decode(line.decode())
                if queue and live and not any(self.ready[w] for w in live):
                    i = queue.pop()  # workers still starting: take one from the end meanwhile
                    results[i] = local(i)
        finally:
            selector.close()
            if any(inflight.get(w) for w in live) or buffers and any(buffers.values()):
                self.broken = True

    def _send(self, w: int, line: str) -> bool:
        try:
            _stdin(self.procs[w]).write(line.encode() + b"\n")
            return True
        except OSError:  # BrokenPipeError: the worker is gone
            return False

    def _lost(
        self,
        w: int,
        live: list[int],
        inflight: dict[int, deque[int]],
        selector: selectors.BaseSelector,
        results: dict[int, Any],
        local: Local,
    ) -> None:
        """A worker died: its jobs are done here, and the pool is not used again."""
        self.broken = True
        if w in live:
            live.remove(w)
            with contextlib.suppress(KeyError, ValueError):
                selector.unregister(_stdout(self.procs[w]))
        while inflight.get(w):
            i = inflight[w].popleft()
            results[i] = local(i)


_lock = threading.Lock()
_pool: WorkerPool | None = None
_busy = False


@contextlib.contextmanager
def borrowed(n: int, *, start: bool) -> Iterator[WorkerPool | None]:
    """The process's pool of ``n`` workers for one load, or None (parse here).

    None when another load is using it, when it is not running and ``start`` is false (a small load
    does not pay for start-up), or when no process can be started. A broken pool is closed after use.
    """
    global _pool, _busy
    with _lock:
        pool = None
        if not _busy:
            if _pool is not None and not (_pool.healthy() and len(_pool.procs) >= n):
                _discard()
            if _pool is None and start:
                with contextlib.suppress(OSError):
                    _pool = WorkerPool(n)
            pool = _pool
            _busy = pool is not None
    if pool is None:
        yield None
        return
    try:
        yield pool
    finally:
        with _lock:
            _busy = False
            if pool.broken and _pool is pool:
                _discard()


def running() -> WorkerPool | None:
    """The warm pool, if one is running in this process."""
    with _lock:
        return _pool if _pool is not None and _pool.healthy() else None


def shutdown() -> None:
    """Stop the pool's workers (also done at exit)."""
    with _lock:
        _discard()


def _discard() -> None:
    global _pool
    pool, _pool = _pool, None
    if pool is not None and pool.owner == os.getpid():  # a forked child leaves its parent's pool alone
        pool.close()


atexit.register(shutdown)


def request_line(job: list[Any]) -> str:
    return json.dumps(job)
