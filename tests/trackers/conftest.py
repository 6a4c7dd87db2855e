"""The `trackers` tier: each tracker's own library logs a run offline, and rl-board reads what it wrote.

The library runs in a subprocess of this venv's python with a temporary HOME, its offline switches on
and no key, so nothing leaves the machine and nothing of the user's is touched. A library that fails
(an import error included) fails its tests with the end of its output: nothing here skips.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of this folder is in the `trackers` tier (``-m trackers`` / ``-m "not trackers"``)."""
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.trackers)
