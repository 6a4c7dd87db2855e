"""`rl-board query RUN "SQL"`: one read-only SQL statement over the run's ``samples`` and ``steps`` views."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import TYPE_CHECKING, Any

from rl_board.cli.common import fields_of, run_arguments, terminal_lines, terminal_safe

if TYPE_CHECKING:
    import pyarrow as pa

CELL_CHARS = 60
# rollouts/sql.py's defaults, spelled here so that building the parser does not import DuckDB and pandas
# (tests/unit/test_cli_startup.py checks they are the same).
DEFAULT_TIMEOUT = 10.0
MAX_ROWS = 10_000


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "query",
        help="run one read-only SQL statement (DuckDB) over a run's samples and steps",
        description="Views: samples (one row per sample: step, sample, file, line and every "
        "logged and derived column) and steps (per-step statistics). Reading "
        "statements only; no file, network or extension access.",
    )
    run_arguments(p, json_help=None)  # --json is one of the output choices below
    p.add_argument(
        "sql",
        metavar="SQL",
        help='one statement, e.g. "SELECT step, avg(reward) FROM samples GROUP BY step ORDER BY step"',
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print a JSON list of row objects")
    out.add_argument("--csv", action="store_true", help="print CSV (formula-like cells defused)")
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"stop the query after S seconds (default {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--max-rows",
        type=int,
        default=MAX_ROWS,
        metavar="N",
        help=f"print at most N rows (default {MAX_ROWS})",
    )
    p.set_defaults(func=run)


def run(ns: argparse.Namespace) -> int:
    from rl_board.api import run_query, start_query_database, to_csv_bytes
    from rl_board.public import open as open_run

    start_query_database()  # made while the run opens
    run = open_run(ns.run_dir, cache_dir=ns.cache_dir, fields=fields_of(ns))
    result = run_query(run.store, ns.sql, timeout=ns.timeout, max_rows=ns.max_rows)
    if result.capped:  # on stderr: the output stays whole and parseable
        print(
            f"rl-board: note: only the first {result.max_rows} rows are printed; the result has more "
            "(add LIMIT, or --max-rows)",
            file=sys.stderr,
        )
    if ns.json:
        print(json_rows(result.table))
    elif ns.csv:  # the exports' CSV (a frame's, formula-like cells defused)
        sys.stdout.flush()
        sys.stdout.buffer.write(to_csv_bytes(result.frame))
        sys.stdout.buffer.flush()
    else:
        print(table_text(result.table))
    return 0


def json_rows(table: pa.Table) -> str:
    """The rows as a JSON list of objects (NaN and missing values as null, non-ASCII escaped)."""
    from rl_board.api import arrow_records

    return json.dumps(arrow_records(table), allow_nan=False, default=str)


def table_text(table: pa.Table) -> str:
    """A plain aligned table: every cell on one line, clipped, control characters escaped."""
    import pyarrow as pa

    if table.num_columns == 0:
        return "(no columns)"
    heads = [_clip(terminal_safe(name)) for name in table.column_names]
    numeric = [
        pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        for t in table.schema.types
    ]
    columns = [_plain(column).to_pylist() for column in table.columns]
    rows = [[_cell(value) for value in row] for row in zip(*columns, strict=True)]
    widths = [max([len(h), *(len(r[k]) for r in rows)]) for k, h in enumerate(heads)]

    def line(cells: list[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    lines = [line(heads), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
    lines.append(f"({len(rows)} row{'' if len(rows) == 1 else 's'})")
    return terminal_lines(lines)


def _plain(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A decimal column as the floats a frame holds (and no `decimal` module imported for the rest)."""
    import pyarrow as pa

    return column.cast(pa.float64()) if pa.types.is_decimal(column.type) else column


def _cell(value: Any) -> str:
    """NULL for a missing value (a NaN is a value: NaN)."""
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else f"{value:.6g}"
    if isinstance(value, list | tuple | dict):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return _clip(terminal_safe(value))


def _clip(text: str) -> str:
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"
