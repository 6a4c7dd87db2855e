"""The command starts fast: building the parser imports nothing heavy, and each command imports what it
uses."""

from __future__ import annotations

import gc
import json
import os
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


def _command(args: list[str], watched: tuple[str, ...]) -> tuple[str, list[str]]:
    """One `rl-board` command in a fresh interpreter: its output and which of ``watched`` it imported."""
    code = (
        "import sys, json; from rl_board.cli import main; main(sys.argv[1:]); "
        f"print(json.dumps(sorted(m for m in {watched} if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO, check=True
    )
    lines = out.stdout.strip().splitlines()
    return "\n".join(lines[:-1]), json.loads(lines[-1])


def _second_call(args: list[str], watched: tuple[str, ...]) -> tuple[str, list[str]]:
    """``_command`` the second time it runs (the first fills the caches)."""
    _command(args, watched)
    return _command(args, watched)


def test_building_the_parser_imports_nothing_heavy() -> None:
    assert _imported("summary", "some/run") == []


def test_the_query_defaults_are_sql_s() -> None:
    from rl_board.cli import query
    from rl_board.rollouts import sql

    assert (query.DEFAULT_TIMEOUT, query.MAX_ROWS) == (sql.DEFAULT_TIMEOUT, sql.MAX_ROWS)


def test_summary_of_a_cached_run_does_not_import_the_metric_readers(tmp_path: Path) -> None:
    from rl_board.rollouts.demo import DemoSpec, write_run

    write_run(tmp_path / "run", DemoSpec(steps=3, samples=4, ranks=1, tokens=20))
    args = ["summary", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache")]
    _, loaded = _second_call(args, HEAVY)
    assert not {"tensorboard", "streamlit", "duckdb", "rl_board.metrics.reader", "plotly"} & set(loaded), (
        loaded
    )


# What `summary` of a cached run has no use for: the parsers (nothing is parsed; simdjson may read the
# files' first lines, as sniffing does for every open), Parquet datasets read in place, and the questions
# other pages and commands ask (groups, prompts, lengths, tool calls ...).
NOT_FOR_A_CACHED_SUMMARY = (
    "pyarrow.json",
    "pyarrow.dataset",
    "duckdb",
    "datasketch",
    "rl_board.rollouts.read.ingest",
    "rl_board.rollouts.read.bulk",
    "rl_board.rollouts.read.jsonl",
    "rl_board.rollouts.read.tables",
    "rl_board.rollouts.read.adapted",
    "rl_board.rollouts.read.contract",
    "rl_board.rollouts.lazy",
    "rl_board.rollouts.dataset",
    "rl_board.rollouts.groups",
    "rl_board.rollouts.prompts",
    "rl_board.rollouts.matchup",
    "rl_board.rollouts.lengths",
    "rl_board.rollouts.mismatch",
    "rl_board.rollouts.calls",
    "rl_board.rollouts.labels",
    "rl_board.rollouts.sql",
)


def test_summary_of_a_cached_run_imports_no_parser_and_no_other_question(tmp_path: Path) -> None:
    from rl_board.rollouts.demo import DemoSpec, write_run

    write_run(tmp_path / "run", DemoSpec(steps=3, samples=4, ranks=1, tokens=20))
    args = ["summary", str(tmp_path / "run"), "--json", "--cache-dir", str(tmp_path / "cache")]
    _, first = _command(args, NOT_FOR_A_CACHED_SUMMARY)
    assert "rl_board.rollouts.read.bulk" in first  # the first call parses
    _, loaded = _command(args, NOT_FOR_A_CACHED_SUMMARY)
    assert loaded == []


def test_query_of_a_cached_run_imports_no_parser(tmp_path: Path) -> None:
    """A query opens the run (its files checked against the cache), then asks DuckDB: nothing to parse, so
    no parser is imported (the load's planning used to import them for files with nothing to read)."""
    from rl_board.rollouts.demo import DemoSpec, write_run

    write_run(tmp_path / "run", DemoSpec(steps=3, samples=4, ranks=2, tokens=20))
    sql = "SELECT count(*) AS n FROM samples"
    args = ["query", str(tmp_path / "run"), sql, "--json", "--cache-dir", str(tmp_path / "cache")]
    parsers = ("rl_board.rollouts.read.ingest", "rl_board.rollouts.read.bulk", "rl_board.rollouts.read.jsonl")
    _, first = _command(args, parsers)
    assert "rl_board.rollouts.read.ingest" in first  # the first call parses
    out, loaded = _command(args, parsers)
    assert json.loads(out) == [{"n": 12}]
    assert loaded == []


def test_scalars_opens_no_rollout_store(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    points = "".join(json.dumps({"step": step, "train/loss": 1 / step}) + "\n" for step in (1, 2))
    (tmp_path / "logs" / "metrics.jsonl").write_text(points)
    rollout_side = ("rl_board.rollouts.store", "rl_board.rollouts.opening", "rl_board.rollouts.runview")
    args = ["scalars", str(tmp_path / "logs"), "--json", "--cache-dir", str(tmp_path / "cache")]
    out, loaded = _command(args, rollout_side)
    assert "train/loss" in out.splitlines()[0]
    assert loaded == []


def test_summary_names_files_left_out_and_imports_no_metric_reader_when_none_are(tmp_path: Path) -> None:
    from rl_board.rollouts.demo import DemoSpec, write_run

    write_run(tmp_path / "run", DemoSpec(steps=2, samples=4, ranks=2, tokens=10))
    args = ["summary", str(tmp_path / "run"), "--json", "--cache-dir", str(tmp_path / "cache")]

    def summary() -> tuple[list[dict], bool]:
        out, loaded = _command(args, ("rl_board.metrics.kinds",))
        return json.loads(out.splitlines()[0])["skipped"], bool(loaded)

    assert summary() == ([], False)  # only the logs it read: nothing to name, no catalogue of metric kinds
    (tmp_path / "run" / "notes.txt").write_text("not a log\n")
    skipped, metric_kinds = summary()
    assert [s["path"] for s in skipped] == ["notes.txt"] and metric_kinds


# What a command on cached inputs must not import: frames (pandas), SQL (DuckDB), TensorBoard's and W&B's
# protobuf, the rollout store and its view (a cached summary is answered from the cache's summary.json),
# the parsers, and Parquet datasets. Speed itself is measured by benchmarks/load.py, never here.
FRAMES_AND_ENGINES = (
    "pandas",
    "duckdb",
    "google.protobuf",
    "tensorboard",
    "pyarrow.dataset",
    "pyarrow.parquet",
)
ROLLOUT_STORE = (
    "rl_board.rollouts.store",
    "rl_board.rollouts.runview",
    "rl_board.rollouts.derive",
    "rl_board.rollouts.read.ingest",
)
METRIC_READERS = ("rl_board.metrics.kinds", "rl_board.metrics.reader", "rl_board.metrics.tensorboard")


def _demo_root(tmp_path: Path) -> Path:
    from rl_board.rollouts.demo import DemoSpec, write_run

    write_run(tmp_path / "root" / "run", DemoSpec(steps=3, samples=4, ranks=1, tokens=20))
    (tmp_path / "root" / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": step, "train/loss": 1 / step}) + "\n" for step in (1, 2))
    )
    return tmp_path / "root"


def test_summary_of_a_cached_run_builds_no_frame_and_opens_no_store(tmp_path: Path) -> None:
    run = _demo_root(tmp_path) / "run"
    args = ["summary", str(run), "--json", "--cache-dir", str(tmp_path / "cache")]
    out, loaded = _second_call(args, FRAMES_AND_ENGINES + ROLLOUT_STORE + METRIC_READERS)
    assert loaded == []
    assert json.loads(out)["from_cache"] is True


def test_runs_of_a_cached_root_builds_no_frame_and_opens_no_store(tmp_path: Path) -> None:
    root = _demo_root(tmp_path)
    args = ["runs", str(root), "--json", "--cache-dir", str(tmp_path / "cache")]
    out, loaded = _second_call(args, FRAMES_AND_ENGINES + ROLLOUT_STORE)
    assert loaded == []
    assert json.loads(out)["runs"][0]["samples"] == 12


def test_scalars_of_a_cached_index_builds_no_frame(tmp_path: Path) -> None:
    root = _demo_root(tmp_path)
    args = ["scalars", str(root), "--json", "--cache-dir", str(tmp_path / "cache")]
    out, loaded = _second_call(args, FRAMES_AND_ENGINES + ROLLOUT_STORE)
    assert loaded == []
    assert "train/loss" in json.loads(out)["runs"][0]["tags"]


def test_query_of_a_cached_run_imports_no_metric_reader_and_no_dataset_reader(tmp_path: Path) -> None:
    run = _demo_root(tmp_path) / "run"
    args = [
        "query",
        str(run),
        "SELECT count(*) AS n FROM samples",
        "--json",
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    # nor pandas: the rows come back as Arrow and are printed from it
    watched = (
        *METRIC_READERS,
        "pandas",
        "google.protobuf",
        "tensorboard",
        "pyarrow.dataset",
        "rl_board.rollouts.lazy",
    )
    out, loaded = _second_call(args, watched)
    assert loaded == []
    assert json.loads(out) == [{"n": 12}]


def test_query_as_a_table_builds_no_frame(tmp_path: Path) -> None:
    run = _demo_root(tmp_path) / "run"
    sql = "SELECT step, sample, reward, response FROM samples ORDER BY step, sample LIMIT 2"
    out, loaded = _second_call(["query", str(run), sql, "--cache-dir", str(tmp_path / "c")], ("pandas",))
    assert loaded == []
    assert out.splitlines()[0].split() == ["step", "sample", "reward", "response"]
    assert out.splitlines()[-1] == "(2 rows)"


def test_each_command_name_is_registered_by_the_module_named_for_it() -> None:
    """``main`` builds only the named command's parser; MODULE_OF must say which module registers each."""
    import argparse

    from rl_board.cli import MODULE_OF, build_parser

    every = build_parser()
    choices = next(a for a in every._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert sorted(choices) == sorted(MODULE_OF)
    for name in MODULE_OF:
        alone = build_parser(name)
        names = next(a for a in alone._actions if isinstance(a, argparse._SubParsersAction)).choices
        assert name in names
    args = ["query", "RUN", "SELECT 1", "--json"]
    assert vars(build_parser("query").parse_args(args)) == vars(every.parse_args(args))


def test_the_command_ends_through_the_exit_handlers_with_its_output_and_code(tmp_path: Path) -> None:
    """``entry`` leaves with ``os._exit``: what ``atexit`` registered still runs, after the command's own
    output, and the command's exit code is the process's (0 here, 2 for a refused path)."""
    code = (
        "import atexit, sys; atexit.register(lambda: print('handler ran')); "
        "from rl_board.cli import entry; sys.argv[0] = 'rl-board'; entry()"
    )
    ok = subprocess.run(
        [sys.executable, "-c", code, "runs", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert ok.returncode == 0
    assert json.loads(ok.stdout.splitlines()[0])["runs"] == [] and ok.stdout.splitlines()[-1] == "handler ran"
    refused = subprocess.run(
        [sys.executable, "-c", code, "runs", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert refused.returncode == 2 and "path not found" in refused.stderr
    assert refused.stdout.strip() == "handler ran"


def test_a_command_process_collects_garbage_less_often(tmp_path: Path) -> None:
    """``entry`` (the process) raises the first generation's threshold; ``main`` (called in-process, as a
    notebook or a test would) leaves the caller's collector as it was."""
    from rl_board.cli import main
    from rl_board.config import RARE_GC_EVERY

    code = (
        "import atexit, gc, sys; atexit.register(lambda: print('threshold', gc.get_threshold()[0])); "
        "from rl_board.cli import entry; sys.argv[0] = 'rl-board'; entry()"
    )
    args = [sys.executable, "-c", code, "runs", str(tmp_path), "--json"]
    out = subprocess.run(args, capture_output=True, text=True, cwd=REPO)
    assert out.stdout.splitlines()[-1] == f"threshold {RARE_GC_EVERY}"
    before = gc.get_threshold()
    assert main(["runs", str(tmp_path), "--json"]) == 0
    assert gc.get_threshold() == before


def test_a_command_process_sets_numpy_up_before_importing_it() -> None:
    """``entry`` asks numpy for one BLAS thread (OpenBLAS's threads spun ~0.1 s of CPU each at import) and
    no transparent huge pages (the kernel zeroed each new big array 2 MB at a time) before numpy is
    imported, and keeps what the user chose: a thread count under any of OpenBLAS's names, huge pages."""
    code = (
        "import atexit, os, sys\n"
        "def threads():\n"
        "    return int(open('/proc/self/status').read().split('Threads:')[1].split()[0])\n"
        "def report():\n"
        "    before, imported = threads(), 'numpy' in sys.modules\n"
        "    import numpy  # after entry, as a command imports it ('--help' imports none)\n"
        "    core = getattr(numpy, '_core', None) or numpy.core\n"
        "    huge = core.multiarray._get_madvise_hugepage()\n"
        "    blas = os.environ.get('OPENBLAS_NUM_THREADS')\n"
        "    print('numpy before', imported, 'huge', huge, 'blas', blas, 'new threads', threads() - before)\n"
        "atexit.register(report)\n"
        "from rl_board.cli import entry; sys.argv[0] = 'rl-board'; entry()\n"
    )
    args = [sys.executable, "-c", code, "--help"]
    names = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS", "NUMPY_MADVISE_HUGEPAGE")
    env = {k: v for k, v in os.environ.items() if k not in names}
    out = subprocess.run(args, capture_output=True, text=True, cwd=REPO, env=env)
    assert out.stdout.splitlines()[-1] == "numpy before False huge False blas 1 new threads 0"
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        chosen = subprocess.run(args, capture_output=True, text=True, cwd=REPO, env={**env, name: "2"})
        expected = "2" if name == "OPENBLAS_NUM_THREADS" else "None"
        assert chosen.stdout.splitlines()[-1].startswith(f"numpy before False huge False blas {expected} new")
    chosen = subprocess.run(
        args, capture_output=True, text=True, cwd=REPO, env={**env, "NUMPY_MADVISE_HUGEPAGE": "1"}
    )
    assert chosen.stdout.splitlines()[-1] == "numpy before False huge True blas 1 new threads 0"
