"""The command starts fast: building the parser imports nothing heavy, and each command imports what it
uses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = (
    "pandas",
    "pyarrow",
    "numpy",
    "duckdb",
    "tensorboard",
    "streamlit",
    "fsspec",
    "s3fs",
    "tokenizers",
    "plotly",
    "rl_board.rollouts.store",
    "rl_board.metrics.reader",
    "rl_board.health.checks",
)

_PROBE = """
import json, sys
from rl_board.cli import build_parser
build_parser().parse_args(sys.argv[1:])
print(json.dumps(sorted(m for m in {heavy} if m in sys.modules)))
"""


def _imported(*argv: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(heavy=HEAVY), *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    return json.loads(out.stdout)


def test_building_the_parser_imports_nothing_heavy() -> None:
    assert _imported("summary", "some/run") == []


def test_the_query_defaults_are_sql_s() -> None:
    from rl_board.cli import query
    from rl_board.rollouts import sql

    assert (query.DEFAULT_TIMEOUT, query.MAX_ROWS) == (sql.DEFAULT_TIMEOUT, sql.MAX_ROWS)


def test_summary_of_a_cached_run_does_not_import_the_metric_readers(tmp_path: Path) -> None:
    from rl_board.rollouts.demo import DemoSpec, write_run

    write_run(tmp_path / "run", DemoSpec(steps=3, samples=4, ranks=1, tokens=20))
    code = (
        "import sys, json; from rl_board.cli import main; main(sys.argv[1:]); "
        f"print(json.dumps(sorted(m for m in {HEAVY} if m in sys.modules)))"
    )
    args = ["summary", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache")]
    subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO, check=True)
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO, check=True
    )
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert not {"tensorboard", "streamlit", "duckdb", "rl_board.metrics.reader", "plotly"} & set(loaded), (
        loaded
    )
