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
import select
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
    """Complete lines from ``fd``, until it closes or nothing arrives for ``idle`` seconds."""
    buffer = b""
    while True:
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line
        ready, _, _ = select.select([fd], [], [], idle)
        if not ready:
            return
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        buffer += chunk


def main(argv: list[str]) -> int:
    parent = int(argv[0]) if argv else None
    idle = float(argv[1]) if len(argv) > 1 else None
    if parent is not None:
        if os.getppid() != parent:
            return 0
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()

    from rl_board.formats import Reading
    from rl_board.rollouts.read.ingest import BATCH, ingest_batch, ingest_block, result_to_json

    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    for line in _lines(sys.stdin.fileno(), idle):
        job = json.loads(line)
        if job[0] == BATCH:  # several small blocks: a JSON list of their results
            _, blocks, directory, reading, max_line = job
            results = ingest_batch(
                [tuple(b) for b in blocks], directory, Reading.from_json(reading), max_line
            )
            answer = "[" + ",".join(result_to_json(r) for r in results) + "]"
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
