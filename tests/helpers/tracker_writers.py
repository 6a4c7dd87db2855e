"""Running a tracker's own library in a child process, as the trackers tier and its browser test do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT = 300  # seconds for one writer; a run of the test log takes a few


def run_writer(args: list[str], *, env: dict[str, str], cwd: Path | None = None, what: str) -> str:
    """``python ARGS`` with ``env`` (a temporary HOME, the tracker offline) and no standard input; its
    standard output, or a failed test (never a skip) with the end of what it printed."""
    done = subprocess.run(
        [sys.executable, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        pytest.fail(
            f"{what} exited with {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}",
            pytrace=False,
        )
    return done.stdout
