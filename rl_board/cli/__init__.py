"""The ``rl-board`` command: one module per sub-command, one error boundary here.

User mistakes (a missing path, a bad flag, a refused value) raise ``RLBoardError``
and end here as one line on stderr with exit code 2; only bugs produce tracebacks.

Adding a command: write ``rl_board/cli/NAME.py`` with ``add_parser(sub)`` (which
registers its arguments and ``set_defaults(func=run)``) and ``run(ns) -> int``,
and add the module to ``COMMANDS``. Every command module is imported to build
the parser, so keep its top level light (the standard library, ``cli.common``,
``errors``, ``config``): import pandas, pyarrow, the store, DuckDB... inside
``run``. ``rl-board summary`` on a cached run then starts in well under half a
second; tests/unit/test_cli_startup.py checks that building the parser imports
none of them.
"""

from __future__ import annotations

import argparse
import sys

from rl_board.cli import check, demo, export, groups, labels, patterns, query, runs, scalars, serve, summary
from rl_board.cli.common import EXIT_USAGE, terminal_safe
from rl_board.cli.summary import summary_dict
from rl_board.errors import RLBoardError

COMMANDS = (serve, runs, summary, groups, patterns, labels, query, export, demo, scalars, check)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rl-board", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    try:
        return int(ns.func(ns) or 0)
    except RLBoardError as exc:
        print(f"rl-board: error: {terminal_safe(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0


__all__ = ["build_parser", "main", "summary_dict"]
