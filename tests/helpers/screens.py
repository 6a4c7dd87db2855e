"""Screenshots of the real app: into tests/browser/screenshots/, and docs/screenshots/ on request."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.helpers.streamlit_browser import full_app_screenshot

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "tests" / "browser" / "screenshots"
DOC_SHOTS = REPO / "docs" / "screenshots"
UPDATE_DOCS_ENV = "RL_BOARD_UPDATE_SCREENSHOTS"


def save_screenshot(page, name: str) -> Path:
    """Full-app screenshot; copied for the README when $RL_BOARD_UPDATE_SCREENSHOTS is set."""
    SHOTS.mkdir(exist_ok=True)
    path = SHOTS / name
    full_app_screenshot(page, path, max_height=4000)
    if os.environ.get(UPDATE_DOCS_ENV):
        DOC_SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOC_SHOTS / name)
    return path
