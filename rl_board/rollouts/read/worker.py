"""An ingest worker: one JSON job per stdin line, one JSON result per stdout line.

Started by ingest._Workers as ``python -m rl_board.rollouts.read.worker``.
"""

from __future__ import annotations

import json
import sys

from rl_board.rollouts.read.ingest import ingest_block, result_to_json


def main() -> int:
    while line := sys.stdin.readline():
        path, start, end, directory, (fmt, fmap), max_line = json.loads(line)  # max_line None: the default
        result = ingest_block(path, start, end, directory, max_line=max_line, reading=(fmt, fmap))
        sys.stdout.write(result_to_json(result) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
