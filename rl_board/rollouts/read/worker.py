"""An ingest worker: one JSON job per stdin line, one JSON result per stdout line.

Started by pool.WorkerPool as ``python -m rl_board.rollouts.read.worker PARENT_PID IDLE_SECONDS``.
It says ``ready`` once its imports are done, then answers jobs in order. It exits when
stdin closes, when PARENT_PID is no longer its parent (checked every second, even
mid-job: a parent killed with SIGKILL leaves no worker behind), and after
IDLE_SECONDS without a job.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator


def _watch_parent(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(1.0)


def _lines(fd: int, idle: float | None) -> Iterator[bytes]:
    """Complete lines from ``fd``, until it closes or nothing arrives for ``idle`` seconds.

    A thread reads them as they come, whatever this process is doing: the parent may be writing a long
    request while this process writes a long answer, and if neither read, both would wait forever.
    """
    lines: queue.Queue[bytes | None] = queue.Queue()

    def read() -> None:
        buffer = b""
        try:
            while chunk := os.read(fd, 1 << 16):
                *complete, buffer = (buffer + chunk).split(b"\n")
                for line in complete:
                    lines.put(line)
        except OSError:
            pass
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    while True:
        try:
            line = lines.get(timeout=idle)
        except queue.Empty:
            return
        if line is None:
            return
        yield line


def main(argv: list[str]) -> int:
    parent = int(argv[0]) if argv else None
    idle = float(argv[1]) if len(argv) > 1 else None
    if parent is not None:
        if os.getppid() != parent:
            return 0
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()

    from rl_board.formats import Reading
    from rl_board.rollouts.read import collector
    from rl_board.rollouts.read.ingest import (
        BATCH,
        import_parsers,
        ingest_batch,
        ingest_block,
        result_to_json,
        results_line,
    )

    import_parsers()  # ready means ready to parse

    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    with collector.rare():  # a worker only ever loads
        for line in _lines(sys.stdin.fileno(), idle):
            job = json.loads(line)
            if job[0] == BATCH:  # several small blocks: a JSON list of their results
                _, blocks, directory, reading, max_line = job
                results = ingest_batch(
                    [tuple(b) for b in blocks], directory, Reading.from_json(reading), max_line
                )
                answer = results_line(results)
            else:
                path, start, end, directory, reading, max_line = job  # max_line None: the default
                answer = result_to_json(
                    ingest_block(path, start, end, directory, Reading.from_json(reading), max_line=max_line)
                )
            out.write(answer.encode() + b"\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
