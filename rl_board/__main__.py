"""``python -m rl_board`` = the ``rl-board`` command."""

import sys

from rl_board.cli import main

sys.exit(main())
