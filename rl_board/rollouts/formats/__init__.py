"""Trainer dump formats rl-board recognises, most specific first.

A new format is a ``Format`` (see ``base.py``) in ``light.py`` (one flat sample
per record) or ``heavy.py`` (nested or column-list records) and one entry in
``FORMATS``. The catalogue asks ``detect`` which format a file's first
record has; the reader asks ``by_name`` for its adapter.
"""

from __future__ import annotations

from rl_board.rollouts.formats.base import Format, Record, step_from_name
from rl_board.rollouts.formats.heavy import NEMO_RL, PRIME_RL, PRIME_RL_TOKENS, ROLL
from rl_board.rollouts.formats.light import AREAL, RL_BOARD, RL_BOARD_PARQUET, SKYRL, TRL, VERL

FORMATS: tuple[Format, ...] = (RL_BOARD_PARQUET, PRIME_RL, PRIME_RL_TOKENS, NEMO_RL, ROLL, VERL, AREAL, SKYRL, TRL,
                               RL_BOARD)
_BY_NAME = {f.name: f for f in FORMATS}
NATIVE = RL_BOARD.name


def detect(record: Record) -> Format | None:
    """The first format whose shape this record has, or None."""
    return next((f for f in FORMATS if _safe_identify(f, record)), None)


def by_name(name: str) -> Format:
    return _BY_NAME.get(name, RL_BOARD)


def _safe_identify(fmt: Format, record: Record) -> bool:
    try:
        return bool(fmt.identify(record))
    except (TypeError, ValueError, KeyError, AttributeError):
        return False


__all__ = ["FORMATS", "NATIVE", "Format", "Record", "by_name", "detect", "step_from_name"]
