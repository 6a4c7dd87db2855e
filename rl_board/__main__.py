"""``python -m rl_board`` = the ``rl-board`` command."""

from rl_board.cli import entry

entry()
