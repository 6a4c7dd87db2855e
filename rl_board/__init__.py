"""rl-board: inspect RLHF rollouts and training metrics in the browser, the terminal or a notebook.

The Python API (``rl_board.public``), loaded on first use so that ``import rl_board`` stays light::

    run = rl_board.open("rollout_samples/ppo_math")
    run.samples(step=3); run.tokens(3, 0); run.sql("SELECT ...")
    rl_board.scalars("runs/"); rl_board.check("runs/")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["CheckReport", "Run", "check", "metrics_index", "open", "scalars"]

if TYPE_CHECKING:
    from rl_board.public import CheckReport, Run, check, metrics_index, open, scalars


def __getattr__(name: str) -> Any:
    if name in __all__:
        from rl_board import public

        return getattr(public, name)
    raise AttributeError(f"module 'rl_board' has no attribute {name!r}")
