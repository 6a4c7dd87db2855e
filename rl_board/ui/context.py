"""What the sidebar decided, handed to every page: the run and the display settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rl_board.api import RolloutStore
from rl_board.formats import fields as F
from rl_board.ui.charts import CurveOptions
from rl_board.ui.text import TextDisplay


@dataclass(frozen=True)
class DisplaySettings:
    """Sidebar display choices: text hiding, curve bands and shift, and the KL estimator every view shows."""

    text: TextDisplay = TextDisplay()
    curves: CurveOptions = CurveOptions()
    # the chosen estimator: which column is "KL" in tables, filters, curves, cards and token colours (looked
    # up once from the link's ``kl_estimator`` name, then handed down as the object it is)
    kl: F.KLEstimator = F.kl_estimator()


@dataclass
class Context:
    """The served roots, the chosen logs root and run (``store`` is None until a run is chosen)."""

    roots: list[Path]
    settings: DisplaySettings = field(default_factory=DisplaySettings)
    root: Path | None = None
    run: str | None = None
    run_path: Path | None = None
    store: RolloutStore | None = None
    runs: pd.DataFrame | None = None  # RolloutStore.list_runs of the root (for the start page)

    @property
    def logs_root(self) -> Path:
        """``root`` on a page that found one (``current_run``, ``logs_root_context``); a loud error on any
        other."""
        if self.root is None:
            raise RuntimeError("no logs root is chosen: a page is drawn only once one was found")
        return self.root

    @property
    def run_store(self) -> RolloutStore:
        """``store`` on a page ``current_run`` let through (a run is chosen); a loud error on any other."""
        if self.store is None:
            raise RuntimeError("no run is chosen: a run's page is drawn only once current_run() found one")
        return self.store
