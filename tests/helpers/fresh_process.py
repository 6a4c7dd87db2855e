"""A test's body run in a new interpreter of one thread, as a command runs.

A process forks helpers only while it has no other thread (``forked.usable``). The test process may hold
threads left by earlier tests: run there, a test of forked loads would pass without forking at all.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_in_a_fresh_process(module: str, name: str) -> None:
    """Call ``module.name()`` in a new interpreter from the repository's root; its failure fails here."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {module} as m; m.{name}()"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
