"""A module that is imported when first used, not when the importing module loads.

pandas takes 0.15 s to import. A command that only maps the cache and asks
DuckDB (``rl-board query``) never builds a frame, so the modules on its path
name pandas through this and pay for it only when a frame is made.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any


class LazyModule:
    """Stands for a module; the first attribute read imports it."""

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


# The modules named lazily across rl-board: ``from rl_board.lazy import pc, pd``.
if TYPE_CHECKING:
    import pandas as pd
    import pyarrow.compute as pc
else:
    pd = LazyModule("pandas")  # 0.15 s to import: when a frame is first made
    pc = LazyModule("pyarrow.compute")  # 0.05 s of wrapping its functions: when one is first called

__all__ = ["LazyModule", "pc", "pd"]
