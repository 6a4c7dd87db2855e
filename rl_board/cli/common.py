"""What the CLI commands share: the PATH / --json / --cache-dir arguments and plain-text helpers."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

from rl_board.metrics.table import Problem
from rl_board.sources import fieldmap

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def field_arguments(parser: argparse.ArgumentParser) -> None:
    """--field FIELD=KEY (repeatable): which key of the logs holds an rl-board field."""
    parser.add_argument("--field", dest="fields", action="append", default=[], metavar="FIELD=KEY",
                        help="read rl-board's FIELD from the logs' KEY, e.g. --field reward=score (repeatable; "
                             "adds to [fields] in rl-board.toml)")


def fields_of(ns: argparse.Namespace) -> dict[str, str]:
    """The --field options as a field map (checked: unknown fields are a usage error)."""
    return dict(fieldmap.parse_option(text) for text in getattr(ns, "fields", []) or [])


def path_arguments(parser: argparse.ArgumentParser) -> None:
    """PATH, --json and --cache-dir."""
    parser.add_argument("path", help="a logs folder or a single log / event file")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--cache-dir", default=None, help="keep parsed tables here between calls")


def problem_dict(problem: Problem, root: Path) -> dict[str, Any]:
    """A problem with its file shown relative to the root when it lies inside it."""
    out = problem.to_dict()
    with contextlib.suppress(ValueError):  # outside the root: keep the absolute path
        out["file"] = Path(problem.file).resolve().relative_to(root).as_posix()
    return out


def problem_text(problem: dict[str, Any]) -> str:
    """`file:line: reason`."""
    where = problem["file"] + (f":{problem['line']}" if problem.get("line") else "")
    return f"{where}: {problem['reason']}"


def json_default(value: Any) -> Any:
    """Make numpy scalars and paths JSON-friendly."""
    if hasattr(value, "item"):
        return value.item()
    return str(value)
