"""The SQL page in AppTest: a query shows its table, errors are messages, examples run, rows can open
samples."""

from __future__ import annotations

import pandas as pd
import pytest

from rl_board.ui.components import query as Q
from tests.helpers.apptest import assert_clean, open_page

PAGE = "views/query.py"


SCHEMA_COLUMNS = (["column", "type", "help"], ["macro", "computes"])  # the tables of the schema expander


def result_table(at) -> pd.DataFrame:
    """The result table (the schema expander's tables have fixed columns)."""
    frames = [f.value for f in at.main.dataframe if list(f.value.columns) not in SCHEMA_COLUMNS]
    assert len(frames) == 1, [list(f.columns) for f in frames]
    return frames[0]


def run_sql(at, text: str):
    at.text_area(key="w.sql").input(text)
    at.button(key="sql_run").click().run()
    assert_clean(at)
    return at


def test_default_query_runs_on_opening(app_env, store_of):
    at = open_page(PAGE, run="ppo")
    assert_clean(at)
    table = result_table(at)
    want = store_of("ppo").samples(limit=100)
    assert (
        table["step"].tolist() == want["step"].tolist()
        and table["sample"].tolist() == want["sample"].tolist()
    )
    assert "sql" not in at.query_params  # the default query is not spelled in the link


def test_run_a_query_and_see_its_table(app_env, store_of):
    at = run_sql(
        open_page(PAGE, run="ppo"), "SELECT step, avg(reward) AS r FROM samples GROUP BY step ORDER BY step"
    )
    table = result_table(at)
    summary = store_of("ppo").step_summary()
    assert table["step"].tolist() == summary["step"].tolist()
    assert table["r"].round(12).tolist() == summary["reward_mean"].round(12).tolist()
    assert at.query_params["sql"].startswith("SELECT step, avg(reward)")  # the query is in the link
    assert any("6** rows" in str(m.value) for m in at.markdown)


def test_a_bad_query_is_an_error_message_not_an_exception(app_env):
    at = run_sql(open_page(PAGE, run="ppo"), "SELECT rewrd FROM samples")
    errors = [str(e.value) for e in at.error]
    assert len(errors) == 1 and "rewrd" in errors[0] and "not found" in errors[0]
    assert any("^" in str(c.value) for c in at.code)  # DuckDB's caret under the query
    assert not [f for f in at.main.dataframe if list(f.value.columns) not in SCHEMA_COLUMNS]


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "COPY samples TO 'x.csv'",
        "SELECT 1; SELECT 2",
        "ATTACH ':memory:' AS m",
    ],
)
def test_refused_queries_are_messages(app_env, text):
    at = run_sql(open_page(PAGE, run="ppo"), text)
    assert len(at.error) == 1


@pytest.mark.parametrize("k", range(len(Q.api.QUERY_EXAMPLES)))
def test_clicking_an_example_puts_it_in_the_box_and_runs_it(grpo_root, k):
    at = open_page(PAGE, run="grpo")
    at.button(key=f"sql_example_{k}").click().run()
    assert_clean(at)
    example = Q.api.QUERY_EXAMPLES[k]
    assert at.text_area(key="w.sql").value == example.sql
    assert not at.error
    assert len(result_table(at).columns) > 1


def test_a_link_runs_its_query(app_env):
    at = open_page(PAGE, run="ppo", sql="SELECT count(*) AS n FROM samples")
    assert_clean(at)
    assert result_table(at)["n"].tolist() == [48]


def test_schema_expander_lists_both_views_their_meaning_and_the_kl_macros(app_env):
    at = open_page(PAGE, run="ppo")
    schemas = [f.value for f in at.main.dataframe if list(f.value.columns) == SCHEMA_COLUMNS[0]]
    assert len(schemas) == 2
    samples, steps = (frame.set_index("column")["help"] for frame in schemas)
    assert {"step", "sample", "file", "line", "reward", "logprobs", "token_log_ratio", "kl_k2_sum"} <= set(
        samples.index
    )
    assert {"step", "samples", "reward_mean", "kl_mean", "kl_k2_mean", "log_ratio_mean"} <= set(steps.index)
    assert "k3" in samples["kl_mean"] and "k2" in samples["kl_k2_mean"] and "k1" in samples["log_ratio_mean"]
    assert "k2" in steps["kl_k2_mean"] and "standard deviation" in steps["kl_k2_std"]
    macros = next(f.value for f in at.main.dataframe if list(f.value.columns) == SCHEMA_COLUMNS[1])
    assert [m.split("(")[0] for m in macros["macro"]] == ["kl_k3", "kl_k2", "kl_k1"]


def test_row_cap_is_said(app_env):
    at = run_sql(open_page(PAGE, run="ppo"), "SELECT * FROM range(20000)")
    assert len(result_table(at)) == Q.api.QUERY_MAX_ROWS
    assert any("Only the first" in str(w.value) for w in at.warning)


def test_rows_with_step_and_sample_open_that_sample(app_env):
    """AppTest cannot click a row: check the rows the click would open, then what the click does."""
    at = run_sql(
        open_page(PAGE, run="ppo"), "SELECT step, sample, reward FROM samples ORDER BY reward DESC LIMIT 5"
    )
    table = result_table(at)
    assert at.session_state[Q._ROWS_KEY] == list(zip(table["step"], table["sample"], strict=True))
    at = run_sql(at, "SELECT step, avg(reward) FROM samples GROUP BY step")
    assert any("Add `step` and `sample`" in str(c.value) for c in at.caption)


def test_display_frame_makes_names_unique_and_shows_text():
    frame = pd.DataFrame([[1, "a\u202eb", [1, 2], "x" * 2000]], columns=["c", "c", "l", "t"])
    out = Q.display_frame(frame)
    assert list(out.columns) == ["c", "c'", "l", "t"]
    assert (
        out["c'"].iloc[0] == "a⟨U+202E⟩b" and out["l"].iloc[0] == "[1, 2]" and len(out["t"].iloc[0]) == 1001
    )


def test_hostile_text_stays_text(app_env):
    at = run_sql(
        open_page(PAGE, run="hostile"), 'SELECT prompt, response AS "<img src=x>\u202e" FROM samples'
    )
    table = result_table(at)
    assert table.iloc[0, 1].startswith("<script>") and "<img src=x>⟨U+202E⟩" in table.columns
