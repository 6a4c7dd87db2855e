"""SQL over a run: results equal pandas on the store's own tables; the connection cannot reach out; limits
hold."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rl_board.errors import InvalidArgumentError, RLBoardError
from rl_board.rollouts import sql
from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.demo_grpo import GrpoSpec, write_grpo_run
from rl_board.rollouts.store import RolloutStore
from tests.helpers import trainer_dumps as T

SLOW = (
    "SELECT count(*) FROM samples a, samples b, range(1000000000) c "
    "WHERE a.reward * b.reward * c.range = -1"
)  # a cross join of 48 x 48 x 10^9 rows


@pytest.fixture
def ppo(train_run: Path, cache_dir: Path) -> RolloutStore:
    return RolloutStore.open(train_run, cache_dir=cache_dir)


@pytest.fixture
def grpo(tmp_path: Path, cache_dir: Path) -> RolloutStore:
    run = tmp_path / "grpo"
    write_grpo_run(run, GrpoSpec(steps=6, prompts=3, group_size=4, tokens=20, long_tokens=60, seed=4))
    return RolloutStore.open(run, cache_dir=cache_dir)


def q(store: RolloutStore, text: str, **kw) -> pd.DataFrame:
    return sql.run_query(store, text, **kw).frame


# --------------------------------------------------------------------------- results equal pandas


def test_reward_by_step_equals_pandas(ppo: RolloutStore) -> None:
    got = q(
        ppo,
        "SELECT step, avg(reward) AS m, stddev_pop(reward) AS s, count(*) AS n, max(kl_mean) AS k "
        "FROM samples GROUP BY step ORDER BY step",
    )
    want = (
        ppo.samples(columns=["reward", "kl_mean"])
        .groupby("step")
        .agg(
            m=("reward", "mean"),
            s=("reward", lambda x: x.std(ddof=0)),
            n=("reward", "size"),
            k=("kl_mean", "max"),
        )
    )
    assert got["step"].tolist() == want.index.tolist() == ppo.steps
    for name in ("m", "s", "k"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12)
    assert got["n"].tolist() == want["n"].tolist()


def test_samples_view_holds_every_sample_with_its_step_sample_file_and_line(ppo: RolloutStore) -> None:
    got = q(
        ppo,
        "SELECT step, sample, file, line, prompt, response, reward, n_tokens FROM samples "
        "ORDER BY step, sample",
    )
    want = ppo.samples(columns=["prompt", "response", "reward", "n_tokens"])
    assert len(got) == ppo.num_samples == len(want)
    for name in ("step", "sample", "line", "prompt", "response", "n_tokens"):
        assert got[name].tolist() == want[name].tolist(), name
    assert got["file"].astype(str).tolist() == want["file"].astype(str).tolist()
    np.testing.assert_array_equal(got["reward"], want["reward"])


def test_token_arrays_are_lists(ppo: RolloutStore) -> None:
    got = q(
        ppo,
        "SELECT step, sample, len(logprobs) AS n, logprobs[1] AS first FROM samples "
        "WHERE step = 2 ORDER BY sample",
    )
    for row in got.itertuples():
        detail = ppo.sample(step=2, index=int(row.sample))
        assert row.n == detail.n_logprobs
        assert row.first == pytest.approx(detail.tokens["logp"].iloc[0], rel=1e-6)


def test_steps_view_is_the_step_summary(ppo: RolloutStore) -> None:
    got = q(ppo, "SELECT * FROM steps ORDER BY step")
    want = ppo.step_summary()
    assert list(got.columns[: len(want.columns)]) == list(want.columns)
    pd.testing.assert_frame_equal(got[want.columns], want, check_dtype=False)


def test_grpo_steps_add_components_and_groups(grpo: RolloutStore) -> None:
    got = q(grpo, "SELECT * FROM steps ORDER BY step")
    groups = grpo.group_stats()
    np.testing.assert_allclose(got["zero_variance_share"], groups["zero_variance_share"])
    np.testing.assert_allclose(got["solved_mean"], groups["solved_mean"])
    assert got["groups"].tolist() == groups["groups"].tolist()
    for component in grpo.reward_components:
        means = grpo.samples(columns=[component]).groupby("step")[component].mean()
        np.testing.assert_allclose(got[f"{component}_mean"], means.to_numpy())


def test_zero_variance_groups_by_sql_equal_the_group_table(grpo: RolloutStore) -> None:
    got = q(
        grpo,
        'SELECT step, "group", count(*) AS n FROM samples GROUP BY step, "group" '
        'HAVING min(reward) = max(reward) ORDER BY step, "group"',
    )
    table = grpo.groups()
    want = table[table["zero_variance"]].sort_values(["step", "group"])
    assert list(zip(got["step"], got["group"], strict=True)) == list(
        zip(want["step"], want["group"], strict=True)
    )


@pytest.mark.parametrize("name", ["verl", "trl", "openrlhf", "nemo_rl"])
def test_trainer_dumps_reward_means(name: str, tmp_path: Path, cache_dir: Path) -> None:
    dump = T.ALL_WRITERS[name](tmp_path / "out")
    store = RolloutStore.open(dump.run_folder(tmp_path), cache_dir=cache_dir)
    got = q(store, "SELECT step, avg(reward) AS m, count(*) AS n FROM samples GROUP BY step ORDER BY step")
    assert got["step"].tolist() == dump.steps
    for row in got.itertuples():
        assert row.m == pytest.approx(dump.reward_means[row.step], abs=1e-6)
        assert row.n == len(dump.rewards[row.step])


def test_examples_all_run(grpo: RolloutStore) -> None:
    for example in sql.EXAMPLES:
        result = sql.run_query(grpo, example.sql)
        assert len(result.frame.columns) > 1, example.title


def test_schema_names_every_column(grpo: RolloutStore) -> None:
    described = sql.schema(grpo)
    late = ["template"]  # each answer's family, worked out when a query names it
    assert described["samples"]["column"].tolist() == [*grpo.arrow_samples().column_names, "tags", *late]
    assert {"turns", "tool_calls", "patterns", "labels"} <= set(described)
    assert (
        dict(zip(described["samples"]["column"], described["samples"]["type"], strict=True))["reward"]
        == "DOUBLE"
    )
    assert "zero_variance_share" in described["steps"]["column"].tolist()


def test_empty_result_keeps_its_columns(ppo: RolloutStore) -> None:
    result = sql.run_query(ppo, "SELECT step, reward FROM samples WHERE reward > 1e9")
    assert list(result.frame.columns) == ["step", "reward"] and result.frame.empty and not result.capped


# --------------------------------------------------------------------------- safety


def refused(store: RolloutStore, text: str) -> str:
    with pytest.raises(sql.QueryError) as info:
        sql.run_query(store, text)
    assert isinstance(info.value, InvalidArgumentError) and isinstance(info.value, RLBoardError)
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_csv_auto('/etc/passwd', sep = ':')",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_blob('/etc/hostname')",
        "SELECT * FROM sniff_csv('/etc/passwd')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_json_objects('/etc/passwd')",
        "SELECT * FROM read_parquet('https://example.com/x.parquet')",
    ],
)
def test_files_and_urls_cannot_be_read(ppo: RolloutStore, text: str) -> None:
    assert "disabled by configuration" in refused(ppo, text)


def test_copy_to_a_file_is_refused_and_writes_nothing(ppo: RolloutStore, tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    assert "COPY" in refused(ppo, f"COPY samples TO '{target}'")
    assert "COPY" in refused(ppo, f"COPY (SELECT 1) TO '{target}' (FORMAT csv)")
    refused(ppo, f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{target}'")
    refused(ppo, f"SELECT * FROM query('COPY (SELECT 1) TO ''{target}''')")
    refused(ppo, f"EXPORT DATABASE '{tmp_path / 'dump'}'")
    assert not target.exists() and not (tmp_path / "dump").exists()


@pytest.mark.parametrize(
    "text",
    [
        "ATTACH '/tmp/rl-board-sql-test.db' AS x",
        "ATTACH ':memory:' AS m",
        "INSTALL httpfs",
        "LOAD httpfs",
        "LOAD '/tmp/evil.duckdb_extension'",
        "SET enable_external_access = true",
        "RESET lock_configuration",
        "SET memory_limit = '100GB'",
        "PRAGMA database_list",
        "CALL pragma_version()",
        "CREATE TABLE t AS SELECT 1",
        "DETACH memory",
        "CREATE SECRET (TYPE s3, KEY_ID 'k', SECRET 's')",
    ],
)
def test_statements_that_are_not_reads_are_refused(ppo: RolloutStore, text: str) -> None:
    assert "only reading statements" in refused(ppo, text)
    assert not Path("/tmp/rl-board-sql-test.db").exists()


def test_configuration_is_locked_and_external_access_off(ppo: RolloutStore) -> None:
    got = q(
        ppo,
        "SELECT current_setting('enable_external_access') AS ext, current_setting('lock_configuration') "
        "AS locked, current_setting('autoload_known_extensions') AS autoload",
    )
    assert got.iloc[0].tolist() == [False, True, False]


def test_a_database_made_early_is_locked_down_and_taken_once(ppo: RolloutStore) -> None:
    """``start_database`` (rl-board query makes it while the run opens): the next query takes it, with the
    same locked-down configuration; a second start before then makes no second one; later queries make
    their own."""
    sql.start_database()
    sql.start_database()
    assert len(sql._early) == 1
    early_thread = sql._early[0][0]
    test_configuration_is_locked_and_external_access_off(ppo)
    assert sql._early == [] and not early_thread.is_alive()
    assert q(ppo, "SELECT count(*) AS n FROM samples").n.iloc[0] == ppo.num_samples


def test_python_variables_are_not_scanned(ppo: RolloutStore) -> None:
    secret_table = pd.DataFrame({"secret": ["s3cr3t"]})  # noqa: F841 - what a replacement scan would find
    assert "secret_table" in refused(ppo, "SELECT * FROM secret_table")


def test_one_statement_only(ppo: RolloutStore) -> None:
    assert "one statement at a time" in refused(ppo, "SELECT 1; SELECT 2")
    assert "one statement at a time" in refused(ppo, "SELECT 1; COPY samples TO '/tmp/x.csv'")
    assert "empty" in refused(ppo, "  -- nothing\n")
    assert q(ppo, "SELECT 1 AS one;")["one"].tolist() == [1]  # one trailing ';' is fine


def test_duckdb_errors_carry_duckdbs_message(ppo: RolloutStore) -> None:
    with pytest.raises(sql.QueryError) as info:
        sql.run_query(ppo, "SELECT rewrd FROM samples")
    assert 'Referenced column "rewrd" not found' in str(info.value) and "column 8" in str(info.value)
    assert "LINE 1:" in info.value.detail and "^" in info.value.detail
    assert "syntax error" in refused(ppo, "SELEC * FROM samples")
    assert "does not exist" in refused(ppo, "SELECT * FROM sample")


def test_a_slow_query_is_stopped_at_the_limit(ppo: RolloutStore) -> None:
    t0 = time.perf_counter()
    with pytest.raises(sql.QueryError, match=r"longer than the 0\.5 s limit"):
        sql.run_query(ppo, SLOW, timeout=0.5)
    assert time.perf_counter() - t0 < 5
    assert q(ppo, "SELECT count(*) AS n FROM samples")["n"].tolist() == [ppo.num_samples]  # the next one runs


def test_row_cap(ppo: RolloutStore) -> None:
    result = sql.run_query(ppo, "SELECT * FROM range(100000)", max_rows=2500)
    assert result.capped and len(result.frame) == 2500 and result.frame["range"].tolist() == list(range(2500))
    exact = sql.run_query(ppo, "SELECT * FROM samples", max_rows=ppo.num_samples)
    assert not exact.capped and len(exact.frame) == ppo.num_samples
    assert sql.run_query(ppo, "SELECT * FROM samples", max_rows=ppo.num_samples - 1).capped
    assert len(sql.run_query(ppo, "SELECT * FROM range(50000)").frame) == sql.MAX_ROWS


def test_bad_limits_are_refused(ppo: RolloutStore) -> None:
    with pytest.raises(InvalidArgumentError):
        sql.run_query(ppo, "SELECT 1", timeout=0)
    for timeout in (float("inf"), float("nan"), -1.0):
        with pytest.raises(InvalidArgumentError, match="time limit"):
            sql.run_query(ppo, "SELECT 1", timeout=timeout)
    with pytest.raises(InvalidArgumentError):
        sql.run_query(ppo, "SELECT 1", max_rows=0)


def test_new_data_is_seen_after_refresh(tmp_path: Path, cache_dir: Path) -> None:
    run = tmp_path / "growing"
    write_run(run, DemoSpec(steps=2, samples=4, ranks=1, tokens=6, seed=1))
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert q(store, "SELECT max(step) AS s FROM steps")["s"].tolist() == [1]
    write_run(tmp_path / "more", DemoSpec(steps=3, samples=4, ranks=1, tokens=6, seed=1))
    with (run / "rollout_data_rank_0.jsonl").open("a") as f:
        f.write((tmp_path / "more" / "rollout_data_rank_0.jsonl").read_text().splitlines()[-1] + "\n")
    assert store.refresh()
    assert q(store, "SELECT max(step) AS s FROM steps")["s"].tolist() == [2]
    assert q(store, "SELECT count(*) AS n FROM samples")["n"].tolist() == [9]


def test_targets_need_whole_numbers():
    frame = pd.DataFrame({"step": [1, 2.5, None], "sample": [0, 1, 2]})
    assert sql.sample_targets(frame) == [(1, 0), None, None]
    assert sql.sample_targets(pd.DataFrame({"step": ["a"], "sample": [1]})) is None
    assert sql.sample_targets(pd.DataFrame([[1, 2, 3]], columns=["step", "sample", "step"])) is None


def test_a_query_works_out_only_the_views_it_names(ppo: RolloutStore, monkeypatch) -> None:
    """``steps``, ``turns``, ``tool_calls`` and ``labels`` cost a query of ``samples`` nothing; the catalogue
    and a query that names them see them all."""
    asked: list[str] = []
    real_steps, real_turns = sql.steps_table, RolloutStore.turns
    monkeypatch.setattr(sql, "steps_table", lambda store: asked.append("steps") or real_steps(store))
    monkeypatch.setattr(RolloutStore, "turns", lambda self: asked.append("turns") or real_turns(self))
    assert sql.run_query(ppo, "SELECT count(*) AS n FROM samples").frame["n"][0] == ppo.num_samples
    assert asked == []
    steps = sql.run_query(ppo, "SELECT count(*) AS n FROM Steps").frame["n"][0]
    assert steps == len(ppo.steps) and asked == ["steps"]
    shown = set(sql.run_query(ppo, "SHOW TABLES").frame["name"])
    assert {"samples", "steps", "turns", "tool_calls", "patterns", "labels"} <= shown
    listed = sql.run_query(ppo, "SELECT DISTINCT table_name FROM information_schema.columns").frame
    assert {"steps", "turns", "labels"} <= set(listed["table_name"])
