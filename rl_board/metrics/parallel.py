"""Reading many metric runs on every core, in order, with progress.

A sweep root holds thousands of small runs; decoding event files is
CPU-bound Python, so threads would share one core. Batches of runs go to
worker processes (``spawn``: nothing of a server's threads is inherited),
and results come back in the order the runs were given, whatever finished
first. A few runs, or one core, are read here: starting workers (~1 s of
imports) would cost more than it saves.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

MIN_PARALLEL = 64
"""Fewer items than this are read in this process."""
BATCH = 32
"""Items per job: enough to pay a job's round trip, few enough to spread the tail and report progress."""

Progress = Callable[[int, int], None]
"""Called with (done, total) as items finish."""


def workers_wanted(items: int, workers: int | None = None) -> int:
    """How many processes to read `items` with: 1 (this one) when few, else one per core."""
    cores = workers if workers is not None else (os.cpu_count() or 1)
    return 1 if items < MIN_PARALLEL or cores < 2 else cores


def map_batches(
    fn: Callable[[list[T]], list[R]],
    items: Sequence[T],
    *,
    workers: int | None = None,
    progress: Progress | None = None,
    niceness: int = 0,
) -> list[R]:
    """``fn`` applied to batches of ``items`` (fn must be a module-level function), results flattened in
    order.

    ``niceness`` lowers the workers' priority: a build behind a page leaves the
    CPU to the page's own work first.
    """
    items = list(items)
    batches = [items[i : i + BATCH] for i in range(0, len(items), BATCH)]
    count = workers_wanted(len(items), workers)
    done = 0
    if progress is not None:
        progress(0, len(items))
    if count == 1:
        out: list[R] = []
        for batch in batches:
            out.extend(fn(batch))
            done += len(batch)
            if progress is not None:
                progress(done, len(items))
        return out
    import multiprocessing  # a pool only for work worth it: a cached index reads in this process
    from concurrent.futures import Future, ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    results: dict[int, list[R]] = {}
    context = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(
            max_workers=count, mp_context=context, initializer=_renice, initargs=(niceness,)
        ) as pool:
            futures: dict[Future[list[R]], int] = {
                pool.submit(fn, batch): k for k, batch in enumerate(batches)
            }
            for future in as_completed(futures):
                k = futures[future]
                results[k] = future.result()
                done += len(batches[k])
                if progress is not None:
                    progress(done, len(items))
    except BrokenProcessPool:  # a worker died (killed, out of memory): what it had left is read here
        for k, batch in enumerate(batches):
            if k not in results:
                results[k] = fn(batch)
                done += len(batch)
                if progress is not None:
                    progress(done, len(items))
    return [r for k in range(len(batches)) for r in results[k]]


def _renice(niceness: int) -> None:
    """Runs first in each worker. Where Linux offers it, a niced worker runs only on otherwise idle CPU
    (SCHED_IDLE): even nice 19 takes a share from a page being drawn and the browser drawing it."""
    if not niceness:
        return
    os.nice(niceness)
    idle = getattr(os, "SCHED_IDLE", None)
    if idle is not None:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, idle, os.sched_param(0))
