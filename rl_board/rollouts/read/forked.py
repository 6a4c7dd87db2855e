"""A load of a few dozen MB on every core at once: helper processes forked from this one.

A worker of the warm pool (pool.py) is a fresh interpreter: it imports pyarrow, numpy and pandas before
its first job (~0.5 s), longer than parsing 60 MB takes on one core, so a load below
``Sizes.pool_min_bytes`` never started it and left the other cores idle. A forked child has everything
imported already and starts in milliseconds. So when this process may fork (``usable``: Linux, and no
other Python thread running, as in a command, a benchmark or a script: a child gets only the forking
thread, and a lock another thread held would stay locked in it), a load of at least
``Sizes.fork_min_bytes`` is shared with ``cores - 1`` forked children. A server (many threads) keeps
using the pool.

Jobs are claimed through a pipe filled with their numbers before the fork (the biggest first: one read
of 4 bytes claims one, by whichever process is free), so every process stays busy until the last job;
each child writes ``number<TAB>answer`` lines to its own pipe and exits with ``os._exit`` (nothing of
the parent's ``atexit``, buffers or pool runs in it). Results are handed back in job order. A job a
child did not answer (it failed, or was killed) is done again here, where a bug raises as it would
without children; a child's segment file for a lost answer is garbage the next sync removes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Generator, Iterator
from typing import TypeVar

from rl_board import config

T = TypeVar("T")
_CLAIM = 4  # bytes per job number in the claim pipe
_MAX_JOBS = 16_000  # job numbers that fit in a pipe's 64 KiB: more jobs are not shared out
_in_child = False


def usable() -> bool:
    """Whether this process may fork helpers now: Linux, not a helper itself, no other Python thread."""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "fork")
        and not _in_child
        and threading.active_count() == 1
    )


def run(
    n_jobs: int,
    helpers: int,
    local: Callable[[int], T],
    encode: Callable[[T], str],
    decode: Callable[[str], T],
    order: list[int] | None = None,
    settle: Callable[[T], None] | None = None,
) -> Iterator[T]:
    """``local(i)`` of every job, in job order, done by this process and ``helpers`` forked children.

    ``order``: the order jobs are claimed in (default 0, 1, ...). ``encode`` / ``decode`` carry a child's
    result to this process as one line (no newline in it). ``settle(result)`` waits for what a job left
    running (its segment's writing): each process hands a result on, to its caller or over its pipe,
    only once it has made the next one and settled this one (``_lagged``).
    """
    order = list(range(n_jobs)) if order is None else order
    if helpers < 1 or n_jobs < 2 or n_jobs > _MAX_JOBS or not usable():
        with contextlib.closing(_lagged(((i, local(i)) for i in range(n_jobs)), settle)) as done:
            for _, result in done:
                yield result
        return
    claims_r, claims_w = os.pipe()
    os.write(claims_w, b"".join(i.to_bytes(_CLAIM, "little") for i in order))
    os.close(claims_w)  # claims past the last read b"": no more jobs
    children: dict[int, int] = {}  # pid -> read end of its answers
    try:
        for _ in range(min(helpers, n_jobs - 1)):
            answers_r, answers_w = os.pipe()
            with contextlib.suppress(OSError, AttributeError):  # F_SETPIPE_SZ: Linux 2.6.35+, Python 3.10+
                fcntl.fcntl(answers_w, fcntl.F_SETPIPE_SZ, config.sizes().helper_pipe_bytes)
            pid = _fork()
            if pid == 0:  # the child: never returns
                os.close(answers_r)
                _child(claims_r, answers_w, local, encode, settle)
            os.close(answers_w)
            children[pid] = answers_r
        yield from _collect(n_jobs, claims_r, children, local, decode, settle)
    finally:
        os.close(claims_r)
        for pid, fd in children.items():
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                if os.waitpid(pid, os.WNOHANG) == (0, 0):  # still running: the load was left early
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)


def _fork() -> int:
    with warnings.catch_warnings():  # 3.12+ warns whenever C threads (Arrow's, BLAS's) exist; see usable()
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _child(
    claims: int,
    answers: int,
    local: Callable[[int], T],
    encode: Callable[[T], str],
    settle: Callable[[T], None] | None,
) -> None:
    global _in_child
    _in_child = True
    code = 0
    try:
        for i, result in _lagged(_claimed(claims, local), settle):
            _write_all(answers, f"{i}\t{encode(result)}\n".encode())
    except BaseException:  # the jobs it claimed are done again by the parent, where an error raises as alone
        code = 1
    finally:
        os._exit(code)


def _claimed(claims: int, local: Callable[[int], T]) -> Iterator[tuple[int, T]]:
    """Each job this process claims, with its result."""
    while claim := os.read(claims, _CLAIM):
        i = int.from_bytes(claim, "little")
        yield i, local(i)


def _lagged(
    made: Iterator[tuple[int, T]], settle: Callable[[T], None] | None
) -> Generator[tuple[int, T], None, None]:
    """``made``, each one settled and handed on once the next is made (or the last is), so what a job left
    running overlaps the next job.

    A job that raises while the one before is held: the held one is settled first, so its own error (a
    full disk under its segment) is the one raised, as it was when segments were written in place. Left
    early, what is held is still waited for: no thread of a load outlives it."""
    if settle is None:
        yield from made
        return
    held: tuple[int, T] | None = None
    try:
        for item in made:
            done, held = held, item
            if done is not None:
                settle(done[1])
                yield done
        if held is not None:
            done, held = held, None
            settle(done[1])
            yield done
    except Exception as exc:
        if held is not None and not isinstance(exc, OSError):
            done, held = held, None
            settle(done[1])
        raise
    finally:
        if held is not None:
            with contextlib.suppress(Exception):  # left early: nobody asks for its answer any more
                settle(held[1])


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _collect(
    n_jobs: int,
    claims: int,
    children: dict[int, int],
    local: Callable[[int], T],
    decode: Callable[[str], T],
    settle: Callable[[T], None] | None,
) -> Iterator[T]:
    """Do jobs here while there are any, take in the children's answers, and yield all in order."""
    results: dict[int, T] = {}
    buffers = {fd: b"" for fd in children.values()}
    selector = selectors.DefaultSelector()
    for fd in buffers:
        selector.register(fd, selectors.EVENT_READ)
    next_out = 0

    def take(block: bool) -> None:
        """Read what the children have answered (``block``: wait for at least one read)."""
        while selector.get_map():
            ready = selector.select(None if block else 0)
            if not ready:
                return
            for key, _ in ready:
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                *lines, buffers[key.fd] = (buffers[key.fd] + chunk).split(b"\n")
                for line in lines:
                    number, _, answer = line.decode().partition("\t")
                    results[int(number)] = decode(answer)
            if block:
                return

    try:
        with contextlib.closing(_lagged(_claimed(claims, local), settle)) as mine:
            for i, result in mine:
                results[i] = result
                take(block=False)
                while next_out in results:
                    yield results.pop(next_out)
                    next_out += 1
        while selector.get_map():
            take(block=True)
            while next_out in results:
                yield results.pop(next_out)
                next_out += 1
    finally:
        selector.close()
    for i in range(next_out, n_jobs):  # what no child answered (it failed, or was killed): done here
        yield results.pop(i) if i in results else _settled(local(i), settle)


def _settled(result: T, settle: Callable[[T], None] | None) -> T:
    """A job done again here, settled before it is handed on, as every other is."""
    if settle is not None:
        settle(result)
    return result
