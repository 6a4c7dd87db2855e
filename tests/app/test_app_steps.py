"""Step browser: step chooser, batch charts and metrics, sorting, filters, paging, opening a sample."""

from __future__ import annotations

import numpy as np

from rl_board.rollouts.filters import SampleFilter
from tests.helpers.apptest import assert_clean, decode, figures, open_page, table, texts, trace
from tests.unit.test_regex_search import has_han, write_mixed_run


def test_step_page_shows_batch_of_the_linked_step(open_app, store_of):
    at = open_app("steps", run="ppo", step="3")
    assert_clean(at)
    assert at.slider(key="w.step").value == 3
    frame = table(at)
    assert len(frame) == 8 and list(frame["sample"]) == list(range(8))
    bars = trace(figures(at)["Reward per sample"], "reward")
    expected = store_of("ppo").samples(step=3, columns=["reward"])["reward"]
    np.testing.assert_allclose(decode(bars["y"]), expected)
    assert "Reward gap (reward − ref reward)" in figures(at)
    assert "Reward distribution" in figures(at)
    labels = [m.label for m in at.metric]
    assert "Tokens" in labels and "Ref characters" in labels
    length = next(m for m in at.metric if m.label == "Tokens")
    assert length.delta is not None  # change from step 2


def test_prev_next_buttons_move_between_steps(open_app):
    at = open_app("steps", run="ppo", step="3")
    at.button(key="step_next").click().run()
    assert at.slider(key="w.step").value == 4
    at.button(key="step_prev").click().run()
    at.button(key="step_prev").click().run()
    assert_clean(at)
    assert at.slider(key="w.step").value == 2
    assert at.query_params["step"] in ("2", ["2"])


def test_sort_by_kl_descending_goes_through_the_store(open_app, store_of):
    at = open_app("steps", run="ppo", step="5")
    at.selectbox(key="w.sort").set_value("kl_mean").run()
    at.toggle(key="w.descending").set_value(True).run()
    assert_clean(at)
    frame = table(at)
    kl = frame["kl_mean"].to_numpy()
    assert np.all(np.diff(kl) <= 0)
    expected = store_of("ppo").samples(step=5, sort_by="kl_mean", descending=True)["sample"]
    assert list(frame["sample"]) == list(expected)
    assert at.query_params["sort"] in ("kl_mean", ["kl_mean"])


def test_filters_count_matches(open_app, store_of):
    at = open_app("steps", run="ppo", step="5")
    at.number_input(key="w.reward.lo").set_value(0.5).run()
    assert_clean(at)
    expected = store_of("ppo").count(step=5, filters=SampleFilter.build(ranges={"reward": (0.5, None)}))
    assert len(table(at)) == expected
    assert any(f"**{expected}** of 8 samples in step 5 match" in t for t in texts(at.markdown))


def test_search_all_steps_with_regex(open_app, store_of):
    at = open_app("steps", run="ppo", step="0")
    at.text_input(key="w.search").input(r"What is 1\d \+").run()
    at.toggle(key="w.regex").set_value(True).run()
    at.toggle(key="w.all_steps").set_value(True).run()
    assert_clean(at)
    flt = SampleFilter.build(text=r"What is 1\d \+", regex=True)
    expected = store_of("ppo").count(filters=flt)
    frame = table(at)
    assert len(frame) == expected > 0
    assert "step" in frame.columns  # rows from several steps say which step they are from
    assert any(f"**{expected}** of 48 samples in all steps" in t for t in texts(at.markdown))


def test_invalid_regex_is_a_message(open_app):
    at = open_app("steps", run="ppo", step="0", search="([", regex="1")
    assert_clean(at)
    assert any("invalid regular expression" in t for t in texts(at.error))
    assert len(table(at)) == 8


def test_regex_with_a_unicode_class_finds_chinese_text(serve, tmp_path):
    rows = write_mixed_run(tmp_path / "served" / "mixed", seed=5)
    serve(tmp_path / "served")
    at = open_page("steps", run="mixed", step="0", q=r"\p{Han}", regex="1", all="1")
    assert_clean(at)
    assert not at.error, texts(at.error)
    expected = sorted(r["response"] for r in rows if has_han(r["response"]))
    assert expected and sorted(table(at)["response"]) == expected


def test_no_match_says_so(open_app):
    at = open_app("steps", run="ppo", step="0", search="no such text anywhere")
    assert_clean(at)
    assert any("No sample matches" in t for t in texts(at.info))


def test_open_top_sample_opens_the_sample_page(open_app, store_of):
    at = open_app("steps", run="ppo", step="4", sort="kl_mean", descending="1")
    at.button(key="open_top").click().run()
    assert_clean(at)
    top = int(store_of("ppo").samples(step=4, sort_by="kl_mean", descending=True)["sample"].iloc[0])
    assert any(f"Step 4 · sample {top}" in t for t in texts(at.markdown))
    assert at.query_params["sample"] in (str(top), [str(top)])


def test_large_step_is_paged(open_app):
    at = open_app("steps", run="big", step="1")
    assert_clean(at)
    assert len(table(at)) == 1000
    assert any("at most 1000 rows" in t for t in texts(at.caption))
    at.number_input(key="w.table_page").set_value(2).run()
    assert_clean(at)
    frame = table(at)
    assert len(frame) == 100 and frame["sample"].iloc[0] == 1000


def test_export_buttons_present(open_app):
    at = open_app("steps", run="ppo", step="1")
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Export CSV", "Export JSONL"]


def test_user_fields_are_shown_and_sortable(open_app):
    at = open_app("steps", run="extras", step="0")
    assert_clean(at)
    frame = table(at)
    assert {"tags", "meta", "note", "score2"} <= set(frame.columns)
    options = at.selectbox(key="w.sort").options
    assert "score2" in options and "note" in options and "tags" not in options
    at.selectbox(key="w.sort").set_value("score2").run()
    assert_clean(at)
    assert list(table(at)["score2"]) == [0, 1, 2, 3]
    at = open_app("sample", run="extras", step="0", sample="1")
    assert_clean(at)
    fields = next(f.value for f in at.dataframe if "field" in f.value.columns)
    assert {"tags", "meta", "note", "score2"} <= set(fields["field"])
