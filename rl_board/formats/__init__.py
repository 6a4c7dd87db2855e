"""Trainers' dump formats: how to recognise each and how to read it (pure: no file is opened here).

This package sits below both ``sources`` (which asks "what is this file?")
and ``rollouts`` (which reads it), so neither imports the other to know a
format. A new format is a ``Format`` (see ``base.py`` for the contract) in
``flat.py`` (one sample per record), ``nested.py`` (nested or column-list
records) or a module of its own (``trl.py``, ``prime.py``, ``roll_agentic.py``,
``open_instruct.py``), and one entry in ``FORMATS``, most specific first.
Agent trajectories are handed to the reader as ``messages`` (a list of message
dicts, see ``trajectory.py``) and ``finish_reason`` (the logged word); whether a
rollout counted in training as ``kept`` and ``dropped_reason`` (``kept.py``).
"""

from __future__ import annotations

import importlib
from typing import Any

# What ``from rl_board.formats import X`` finds, imported on first use: the command line's parser imports
# ``formats.fieldmap`` and must not pay for pyarrow.
_LAZY = {
    "FORMATS": "registry",
    "NATIVE": "registry",
    "by_name": "registry",
    "detect": "registry",
    "Adapted": "base",
    "Format": "base",
    "Options": "base",
    "Reading": "base",
    "Record": "base",
    "step_from_name": "base",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rl_board.formats' has no attribute {name!r}")
    return getattr(importlib.import_module(f"rl_board.formats.{module}"), name)


__all__ = sorted(_LAZY)
