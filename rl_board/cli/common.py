"""What the CLI commands share: the PATH / --json / --cache-dir arguments and plain-text helpers."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable
from typing import Any

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
_UNSAFE = {cp: f"\\x{cp:02x}" for cp in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_UNSAFE.update({cp: f"\\u{cp:04x}" for cp in _BIDI})


def json_value(value: Any) -> Any:
    """A table cell as plain JSON: numpy scalars unwrapped, NaN / infinity / pandas' NA as null."""
    if hasattr(value, "item"):
        value = value.item()
    if value is None or (isinstance(value, float) and not math.isfinite(value)) or str(value) == "<NA>":
        return None
    return value


def terminal_safe(text: object) -> str:
    """Text for a terminal: every C0/C1 control (ESC, CR, newline, ...) and bidi control written as an escape.

    File names, tags and log lines are data: an ANSI or OSC sequence in them
    must not recolour the terminal, rewrite its title or hide what was printed.
    """
    return str(text).translate(_UNSAFE)


def terminal_lines(lines: Iterable[str]) -> str:
    """Lines made terminal-safe one by one, then joined by newlines (the only newlines printed)."""
    return "\n".join(terminal_safe(line) for line in lines)


def field_arguments(parser: argparse.ArgumentParser) -> None:
    """--field FIELD=KEY (repeatable): which key of the logs holds an rl-board field."""
    parser.add_argument(
        "--field",
        dest="fields",
        action="append",
        default=[],
        metavar="FIELD=KEY",
        help="read rl-board's FIELD from the logs' KEY, e.g. --field reward=score (repeatable; "
        "adds to [fields] in rl-board.toml)",
    )


def fields_of(ns: argparse.Namespace) -> dict[str, str]:
    """The --field options as a field map (checked: unknown fields are a usage error)."""
    from rl_board.api import parse_field_option

    return dict(parse_field_option(text) for text in getattr(ns, "fields", []) or [])


def run_arguments(
    parser: argparse.ArgumentParser, *, json_help: str | None = "print one JSON object"
) -> None:
    """RUN (a folder, one file or a URL), --cache-dir, --field and (unless ``json_help`` is None) --json.

    Called first, so RUN is the first positional argument.
    """
    parser.add_argument(
        "run_dir", metavar="RUN", help="a run folder, a single rollout file, or a URL (s3://...)"
    )
    if json_help is not None:
        parser.add_argument("--json", action="store_true", help=json_help)
    parser.add_argument("--cache-dir", default=None, help="keep parsed tables here between calls")
    field_arguments(parser)


def path_arguments(parser: argparse.ArgumentParser) -> None:
    """PATH, --json and --cache-dir."""
    parser.add_argument("path", help="a logs folder or a single log / event file")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--cache-dir", default=None, help="keep parsed tables here between calls")


def local_path(text: str, cache_dir: str | None) -> str:
    """A path as given; for a URL (``s3://...``), its copy in the cache, brought up to date now (new bytes
    only)."""
    from rl_board.public import local_copy

    return str(local_copy(text, cache_dir))


def problem_text(problem: dict[str, Any]) -> str:
    """`file:line: reason`."""
    where = problem["file"] + (f":{problem['line']}" if problem.get("line") else "")
    return f"{where}: {problem['reason']}"


def json_default(value: Any) -> Any:
    """Make numpy scalars and paths JSON-friendly."""
    if hasattr(value, "item"):
        return value.item()
    return str(value)
