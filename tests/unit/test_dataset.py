"""A run exported as a Parquet dataset, opened again in place: every question answered as on the original."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rl_board.rollouts import dataset, lazy, sql
from rl_board.rollouts.dataset import write_dataset
from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.demo_grpo import GrpoSpec, write_grpo_run
from rl_board.rollouts.filters import SampleFilter
from rl_board.rollouts.store import RolloutStore


@pytest.fixture(params=["ppo", "grpo"])
def pair(request, tmp_path):
    """(original store, the same run read from its exported dataset, the dataset folder)."""
    run = tmp_path / "run"
    if request.param == "ppo":
        write_run(run, DemoSpec(steps=5, samples=12, ranks=2, tokens=24, seed=7))
    else:
        write_grpo_run(run, GrpoSpec(steps=5, prompts=4, group_size=4, tokens=20, long_tokens=50, seed=3))
    original = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    out = tmp_path / "dataset"
    write_dataset(original.arrow_samples(), out)
    return original, RolloutStore.open(out, cache_dir=tmp_path / "cache2"), out


def _without_place(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows compared without where they live (the dataset's file and row, the source's kept beside)."""
    return frame.drop(
        columns=[c for c in ("file", "line", "source_file", "source_line") if c in frame.columns]
    )


def test_read_in_place_without_a_cache(pair, tmp_path):
    original, reread, _ = pair
    assert isinstance(reread._view, lazy.LazyRunView)
    assert not (tmp_path / "cache2").exists(), "nothing is copied into a cache"
    assert reread.report.format == "rl-board-parquet" and "read in place" in reread.report.read_as
    assert reread.num_samples == original.num_samples and reread.steps == original.steps
    assert reread.samples_per_step() == original.samples_per_step()
    pd.testing.assert_frame_equal(reread.step_summary(), original.step_summary())
    assert set(reread.fields) - set(original.fields) == {"source_file", "source_line"}


def test_every_question_matches_the_original(pair):
    original, reread, _ = pair
    step = original.steps[2]
    for kwargs in (
        {"step": step},
        {"step": step, "sort_by": "reward", "descending": True},
        {"step": step, "sort_by": "response"},
        {"sort_by": "kl_mean", "limit": 7, "offset": 3},
        {"filters": SampleFilter(text="the", ranges=(("reward", 0.2, None),))},
        {"step": step, "columns": ["reward", "response", "prompt"]},
    ):
        a = _without_place(original.samples(**kwargs))
        b = _without_place(reread.samples(**kwargs))
        pd.testing.assert_frame_equal(a, b[a.columns], check_categorical=False)
    assert reread.count(filters=SampleFilter(text="e")) == original.count(filters=SampleFilter(text="e"))
    for index in (0, 5):
        x, y = original.sample(step=step, index=index), reread.sample(step=step, index=index)
        pd.testing.assert_frame_equal(x.tokens, y.tokens)
        assert y.fields["source_file"] == x.file and y.fields["source_line"] == x.line
        assert {k: v for k, v in y.fields.items() if not k.startswith("source_")} == x.fields
    pd.testing.assert_frame_equal(reread.prompts(), original.prompts())
    pd.testing.assert_frame_equal(reread.groups(step=step), original.groups(step=step))
    pd.testing.assert_frame_equal(reread.mismatch(), original.mismatch())
    for a, b in zip(reread.length_distribution(), original.length_distribution(), strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_one_step_reads_one_file(pair):
    _, reread, _ = pair
    heavy = reread._view.heavy
    assert heavy.reads == 0, "opening reads footers and numbers only"
    step = reread.steps[3]
    reread.samples(step=step, columns=["response"])
    reread.sample(step=step, index=1)
    assert heavy.reads <= 2  # the step's text, then its token arrays: the one file of that step
    assert {k for k, _ in heavy._cache} == {reread.steps.index(step)}


def test_sql_reads_the_dataset_itself(pair):
    original, reread, _ = pair
    q = (
        "select step, count(*) as n, avg(reward) as r, max(n_tokens) as t from samples "
        "group by step order by step"
    )
    pd.testing.assert_frame_equal(sql.run_query(reread, q).frame, sql.run_query(original, q).frame)


def test_a_new_step_is_followed(pair):
    original, reread, out = pair
    assert not reread.stale()
    last = original.steps[-1]
    table = pq.read_table(out / f"step={last}" / "part-0.parquet")
    (out / "step=99").mkdir()
    pq.write_table(table, out / "step=99" / "part-0.parquet")
    (out / "step=99" / ".part-1.parquet.tmp").write_bytes(b"half written")  # never read
    assert reread.stale()
    assert reread.refresh()
    assert reread.steps[-1] == 99 and reread.samples_per_step()[99] == original.samples_per_step()[last]


def test_another_writers_layout_goes_through_the_cache(tmp_path):
    """A Spark-style dataset with only logged columns (no derived ones) is still a run, read via the cache."""
    out = tmp_path / "spark"
    for step in (0, 1, 2):
        (out / f"step={step}").mkdir(parents=True)
        rows = [
            {
                "prompt": f"p{i}",
                "response": "r" * (i + 1),
                "reward": float(i + step),
                "logprobs": [-0.1] * 3,
                "ref_logprobs": [-0.2] * 3,
            }
            for i in range(4)
        ]
        pq.write_table(pa.Table.from_pylist(rows), out / f"step={step}" / "part-00000.parquet")
    store = RolloutStore.open(out, cache_dir=tmp_path / "cache")
    assert not isinstance(store._view, lazy.LazyRunView)
    assert store.steps == [0, 1, 2] and store.num_samples == 12
    assert store.step_summary()["reward_mean"].tolist() == [1.5, 2.5, 3.5]
    assert store.step_summary()["kl_mean"].notna().all()  # derived from the token arrays


def test_present_counts_say_which_list_columns_hold_values(pair):
    original, reread, out = pair
    meta = pq.read_schema(next(out.glob("step=*/part-0.parquet"))).metadata
    counts = json.loads(meta[b"rl_board_present"])
    assert counts["response"] > 0
    for name in ("ref_logprobs", "values", "token_rewards"):
        assert reread.has(name) == original.has(name)


def test_a_search_over_every_step_holds_one_file_at_a_time(pair, set_sizes):
    original, reread, _ = pair
    set_sizes(dataset_cache_bytes=1)  # keep nothing beyond the file being read
    flt = SampleFilter(text="the")
    assert reread.count(filters=flt) == original.count(filters=flt)
    files = {k for k, _ in reread._view.heavy._cache}
    assert len(files) == 1, "only the last file's text is kept"
    pd.testing.assert_frame_equal(reread.mismatch(), original.mismatch())


def test_a_damaged_step_file_is_named_and_the_rest_read(pair, tmp_path):
    original, _, out = pair
    steps = original.steps
    bad = out / f"step={steps[1]}" / "part-0.parquet"
    bad.write_bytes(bad.read_bytes()[:100])  # cut off: no footer
    store = RolloutStore.open(out, cache_dir=tmp_path / "c")
    errors = {f.name: f.error for f in store.report.files if f.error}
    assert (
        list(errors) == [f"step={steps[1]}/part-0.parquet"]
        and "cannot be read as Parquet" in errors[f"step={steps[1]}/part-0.parquet"]
    )
    assert store.steps == [s for s in steps if s != steps[1]]
    assert store.num_samples == original.num_samples - original.samples_per_step()[steps[1]]
    x, y = original.sample(step=steps[2], index=1), store.sample(step=steps[2], index=1)
    assert x.fields["response"] == y.fields["response"]
    counted = sql.run_query(store, "select count(*) as n from samples").frame["n"].iloc[0]
    assert counted == store.num_samples, "SQL reads the readable files"


def test_a_file_damaged_after_opening_gives_a_message(pair):
    from rl_board.errors import RLBoardError

    _, reread, out = pair
    step = reread.steps[-1]
    (out / f"step={step}" / "part-0.parquet").write_bytes(b"not parquet")
    with pytest.raises(RLBoardError, match="can no longer be read"):
        reread.sample(step=step, index=0)


def test_the_index_opens_a_dataset_without_reading_its_step_files(pair, tmp_path, monkeypatch):
    original, _, out = pair
    assert (out / dataset.INDEX).is_file()
    opened = []
    real = lazy._light_part
    monkeypatch.setattr(lazy, "_light_part", lambda fs, f: opened.append(f.name) or real(fs, f))
    fresh = RolloutStore.open(out, cache_dir=tmp_path / "c")
    assert opened == [], "every step came from the index"
    pd.testing.assert_frame_equal(fresh.step_summary(), original.step_summary())
    assert fresh.fields == RolloutStore.open(out, cache_dir=tmp_path / "c").fields

    # a step file rewritten since the index was made (another size) is read itself; the rest still indexed
    step = original.steps[1]
    path = out / f"step={step}" / "part-0.parquet"
    table = pq.read_table(path)
    pq.write_table(table.slice(0, 3), path)
    shrunk = RolloutStore.open(out, cache_dir=tmp_path / "c")
    assert opened == [f"step={step}/part-0.parquet"]
    assert shrunk.samples_per_step()[step] == 3

    # a damaged index is ignored: every file is read
    opened.clear()
    (out / dataset.INDEX).write_bytes(b"ARROW1 but not really")
    again = RolloutStore.open(out, cache_dir=tmp_path / "c")
    assert len(opened) == len(original.steps) and again.samples_per_step()[step] == 3


def test_reindex_covers_steps_added_by_another_writer(pair, tmp_path, monkeypatch):
    original, _, out = pair
    last = original.steps[-1]
    (out / "step=500").mkdir()
    pq.write_table(
        pq.read_table(out / f"step={last}" / "part-0.parquet"), out / "step=500" / "part-0.parquet"
    )
    assert lazy.reindex(out) == len(original.steps) + 1
    opened = []
    real = lazy._light_part
    monkeypatch.setattr(lazy, "_light_part", lambda fs, f: opened.append(f.name) or real(fs, f))
    store = RolloutStore.open(out, cache_dir=tmp_path / "c")
    assert opened == [] and store.steps[-1] == 500
