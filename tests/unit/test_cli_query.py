"""`rl-board query RUN SQL` from a subprocess: the table, --json and --csv agree with the store; errors
exit 2."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from rl_board.rollouts.store import RolloutStore
from tests.unit.test_cli import rl_board

BY_STEP = "select step, avg(reward) from samples group by step order by step"


@pytest.fixture
def run_and_summary(train_run: Path, cache_dir: Path) -> tuple[Path, dict[int, float]]:
    summary = RolloutStore.open(train_run, cache_dir=cache_dir).step_summary()
    return train_run, dict(zip(summary["step"].tolist(), summary["reward_mean"].tolist(), strict=True))


def test_json_equals_the_step_summary(run_and_summary, cache_dir: Path) -> None:
    run, means = run_and_summary
    out = rl_board("query", str(run), BY_STEP, "--json", cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["step"] for r in rows] == list(means)
    for r in rows:
        assert math.isclose(r["avg(reward)"], means[r["step"]], rel_tol=1e-12)


def test_csv_equals_the_step_summary(run_and_summary, cache_dir: Path) -> None:
    run, means = run_and_summary
    out = rl_board("query", str(run), BY_STEP, "--csv", cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [int(r["step"]) for r in rows] == list(means)
    for r in rows:
        assert math.isclose(float(r["avg(reward)"]), means[int(r["step"])], rel_tol=1e-12)


def test_text_table(run_and_summary, cache_dir: Path) -> None:
    run, means = run_and_summary
    out = rl_board("query", str(run), BY_STEP, cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["step", "avg(reward)"] and set(lines[1]) <= {"-", " "}
    body = [line.split() for line in lines[2:-1]]
    assert [int(step) for step, _ in body] == list(means)
    assert all(math.isclose(float(v), means[int(s)], rel_tol=1e-5) for s, v in body)
    assert lines[-1] == f"({len(means)} rows)"


def test_csv_defuses_formulas_and_json_keeps_text(train_run: Path, cache_dir: Path) -> None:
    text = (
        "select '=HYPERLINK(\"http://evil\")' as \"=x\", 'naïve' as t, [1, 2] as l, NULL as n, "
        "'nan'::double as f"
    )
    out = rl_board("query", str(train_run), text, "--csv", cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    header, row = list(csv.reader(io.StringIO(out.stdout)))
    assert header[0] == "'=x" and row[0].startswith("'=HYPERLINK")
    out = rl_board("query", str(train_run), text, "--json", cache_dir=cache_dir)
    assert json.loads(out.stdout) == [
        {"=x": '=HYPERLINK("http://evil")', "t": "naïve", "l": [1, 2], "n": None, "f": None}
    ]


def test_text_output_is_terminal_safe(train_run: Path, cache_dir: Path) -> None:
    out = rl_board(
        "query",
        str(train_run),
        "select chr(27) || '[31mred' || chr(10) || 'x' as \"a\u202eb\"",
        cache_dir=cache_dir,
    )
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "\u202e" not in out.stdout
    assert "\\x1b[31mred\\x0ax" in out.stdout and "a\\u202eb" in out.stdout


def test_row_cap_is_said_on_stderr(train_run: Path, cache_dir: Path) -> None:
    out = rl_board(
        "query", str(train_run), "select * from samples", "--json", "--max-rows", "5", cache_dir=cache_dir
    )
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)) == 5 and "only the first 5 rows" in out.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("select rewrd from samples", 'Referenced column "rewrd" not found'),
        ("selec 1", "syntax error"),
        ("select * from read_csv('/etc/passwd')", "disabled by configuration"),
        ("copy samples to 'out.csv'", "only reading statements"),
        ("select 1; select 2", "one statement at a time"),
    ],
)
def test_bad_sql_exits_2_with_one_line(
    train_run: Path, cache_dir: Path, tmp_path: Path, text: str, message: str
) -> None:
    out = rl_board("query", str(train_run), text, cache_dir=cache_dir, cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("rl-board: error: ") and message in out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert not (tmp_path / "out.csv").exists()


def test_missing_run_exits_2(tmp_path: Path, cache_dir: Path) -> None:
    out = rl_board("query", str(tmp_path / "nowhere"), "select 1", cache_dir=cache_dir)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "no run folder" in out.stderr


def test_timeout_flag(train_run: Path, cache_dir: Path) -> None:
    slow = "select count(*) from samples a, range(1000000000) b where a.reward * b.range = -1"
    out = rl_board("query", str(train_run), slow, "--timeout", "0.3", cache_dir=cache_dir)
    assert out.returncode == 2 and "0.3 s limit" in out.stderr


def test_field_map_is_applied(tmp_path: Path, cache_dir: Path) -> None:
    run = tmp_path / "mapped"
    run.mkdir()
    rows = [{"step": s, "prompt": "p", "response": "r", "score": s / 10} for s in range(3)]
    (run / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = rl_board(
        "query",
        str(run),
        "select step, reward from samples order by step",
        "--json",
        "--field",
        "reward=score",
        cache_dir=cache_dir,
    )
    assert out.returncode == 0, out.stderr
    assert [r["reward"] for r in json.loads(out.stdout)] == [0.0, 0.1, 0.2]


def test_json_and_table_give_the_values_a_frame_holds(train_run: Path, cache_dir: Path) -> None:
    """The rows are printed from Arrow: a sum (HUGEINT) and a decimal are the floats the SQL page's frame
    holds, a NULL integer is null, a NaN prints as NaN in the table and null in JSON, a struct an object."""
    text = (
        "select sum(step)::HUGEINT as h, 2.50::DECIMAL(5, 2) as d, NULL::INTEGER as i, "
        "'nan'::double as f, {'x': 1, 'y': [1.5]} as s, true as b from samples"
    )
    out = rl_board("query", str(train_run), text, "--json", cache_dir=cache_dir)
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)
    assert row == {"h": row["h"], "d": 2.5, "i": None, "f": None, "s": {"x": 1, "y": [1.5]}, "b": True}
    assert isinstance(row["h"], float) and row["h"] == int(row["h"]) >= 0
    out = rl_board("query", str(train_run), text, cache_dir=cache_dir)
    head, _, cells, _ = out.stdout.splitlines()
    assert head.split() == ["h", "d", "i", "f", "s", "b"]
    assert cells.split()[1:4] == ["2.5", "NULL", "NaN"] and cells.split()[-1] == "True"


def test_the_frame_of_a_result_is_duckdbs(train_run: Path, cache_dir: Path) -> None:
    import duckdb

    from rl_board.rollouts import sql

    store = RolloutStore.open(train_run, cache_dir=cache_dir)
    text = "select step, sample, reward, NULL::INTEGER as i, [1, 2] as l from samples order by step, sample"
    result = sql.run_query(store, text, max_rows=7)
    assert result.capped and result.table.num_rows == 7
    con = duckdb.connect()
    con.register("samples", store.arrow_samples())
    expected = con.execute(text + " limit 7").df()
    assert result.frame.dtypes.to_dict() == expected.dtypes.to_dict()
    assert result.frame.drop(columns="l").equals(expected.drop(columns="l"))
    assert [list(v) for v in result.frame["l"]] == [[1, 2]] * 7
