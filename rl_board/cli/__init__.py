"""The ``rl-board`` command: one module per sub-command, one error boundary here.

User mistakes (a missing path, a bad flag, a refused value) raise ``RLBoardError``
and end here as one line on stderr with exit code 2; only bugs produce tracebacks.

Adding a command: write ``rl_board/cli/NAME.py`` with ``add_parser(sub)`` (which
registers its arguments and ``set_defaults(func=run)``) and ``run(ns) -> int``,
and map each name it registers to it in ``MODULE_OF``. Every command module is imported to build
the parser, so keep its top level light (the standard library, ``cli.common``,
``errors``, ``config``): import pandas, pyarrow, the store, DuckDB... inside
``run``. ``rl-board summary`` on a cached run then starts in well under half a
second; tests/unit/test_cli_startup.py checks that building the parser imports
none of them.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import os
import sys

from rl_board import config
from rl_board.cli import check, demo, export, groups, labels, patterns, query, runs, scalars, serve, summary
from rl_board.cli.common import EXIT_USAGE, terminal_safe
from rl_board.cli.summary import summary_dict
from rl_board.errors import RLBoardError

# The module that registers each command name (tests/unit/test_cli_startup.py holds it to the parser's).
MODULE_OF = {
    "serve": serve,
    "runs": runs,
    "summary": summary,
    "groups": groups,
    "patterns": patterns,
    "label": labels,
    "labels": labels,
    "query": query,
    "export": export,
    "demo": demo,
    "scalars": scalars,
    "check": check,
}
COMMANDS = tuple(dict.fromkeys(MODULE_OF.values()))  # each module once, in the help's order


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``command``, only that command's module registered (what parsing its
    arguments needs: a few ms less to start every command)."""
    parser = argparse.ArgumentParser(prog="rl-board", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (MODULE_OF[command],) if command in MODULE_OF else COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    ns = build_parser(args[0] if args else None).parse_args(args)
    try:
        return int(ns.func(ns) or 0)
    except RLBoardError as exc:
        print(f"rl-board: error: {terminal_safe(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0


def entry() -> None:
    """The ``rl-board`` command as a process: ``main``, the exit handlers, the output flushed, then out
    without tearing the interpreter down. That teardown (DuckDB, Arrow, numpy) took ~35 ms of a 0.3 s
    ``query`` (0.305 -> 0.270 s, median of 15; benchmarks/load.py times the commands). Only a command that
    returned ends this way: an exception leaves as Python leaves on one."""
    # its imports (numpy, pyarrow, DuckDB...) make tens of thousands of objects that live as long as it does:
    # at CPython's 700, a cached `query` spent ~15 ms in ~80 collections that found nothing
    gc.set_threshold(config.RARE_GC_EVERY, *gc.get_threshold()[1:])
    config.numpy_env()  # before numpy is imported (and inherited by the server it starts)
    code = main()
    atexit._run_exitfuncs()  # the pool's shutdown, logging's flush (CPython's own hook; tested through -m)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError):  # a reader that stopped early (``| head``) had its fill
            stream.flush()
    os._exit(code)


__all__ = ["build_parser", "entry", "main", "summary_dict"]
