"""The formats rl-board recognises, most specific first, and how to find one."""

from __future__ import annotations

from rl_board.formats.base import Format, Record
from rl_board.formats.flat import AREAL, RL_BOARD, RL_BOARD_PARQUET, SKYRL, VERL
from rl_board.formats.nested import NEMO_RL, PRIME_RL_TOKENS, ROLL
from rl_board.formats.open_instruct import OPEN_INSTRUCT
from rl_board.formats.prime import PRIME_RL, PRIME_RL_V0
from rl_board.formats.roll_agentic import ROLL_AGENTIC
from rl_board.formats.trl import TRL

FORMATS: tuple[Format, ...] = (
    RL_BOARD_PARQUET,
    PRIME_RL,
    PRIME_RL_TOKENS,
    NEMO_RL,
    ROLL_AGENTIC,
    ROLL,
    OPEN_INSTRUCT,
    VERL,
    AREAL,
    SKYRL,
    PRIME_RL_V0,
    TRL,
    RL_BOARD,
)
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
