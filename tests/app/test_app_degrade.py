"""Runs that lack things: eval logs, no reference, one step, one sample, no samples at all."""

from __future__ import annotations

import pytest

from tests.helpers.apptest import assert_clean, figures, open_page, table, texts
from tests.unit.test_cli_unnamed import PICKLE, write_slime_dumps


def test_eval_run_overview_says_what_is_missing(open_app):
    at = open_app(run="eval")
    assert_clean(at)
    figs = figures(at)
    assert "Reward per step" in figs
    assert "Response length (characters) per step" in figs
    assert not any(title.startswith("KL") for title in figs)
    assert any("No KL curve" in t for t in texts(at.info))


def test_eval_run_irregular_steps_use_a_list(open_app):
    at = open_app("steps", run="eval", step="400")
    assert_clean(at)
    assert at.selectbox(key="w.step").value == 400
    assert at.selectbox(key="w.step").options == ["0", "100", "200", "400", "800", "1000"]
    frame = table(at)
    assert "kl_mean" not in frame.columns and "reward_gap" in frame.columns
    at.button(key="step_next").click().run()
    assert at.selectbox(key="w.step").value == 800


def test_eval_run_sample_has_no_token_view(open_app):
    at = open_app("sample", run="eval", step="1000", sample="4")
    assert_clean(at)
    assert any("No token view" in t for t in texts(at.info))
    assert any("Step 1000 · sample 4" in t for t in texts(at.markdown))


def test_run_without_reference(open_app):
    at = open_app("steps", run="noref", step="1")
    assert_clean(at)
    assert any("No reward gap" in t for t in texts(at.info))
    assert "ref_reward" not in table(at).columns
    at = open_app("sample", run="noref", step="1", sample="0")
    assert_clean(at)
    headings = texts(at.markdown)  # no reference response: it takes no space, the response the whole column
    assert any(t.startswith("**Response** · ") for t in headings)
    assert not any(t.startswith("**Ref response**") for t in headings)
    assert not any("not in this log" in t for t in texts(at.caption))


@pytest.mark.parametrize("page", ["overview", "steps", "sample"])
def test_single_step_single_sample_run(open_app, page):
    at = open_app(page, run="single")
    assert_clean(at)
    if page == "overview":
        assert any("single step" in t for t in texts(at.info))
    if page == "steps":
        assert any("the only step" in t for t in texts(at.markdown))
        assert len(table(at)) == 1
    if page == "sample":
        assert any("Step 0 · sample 0" in t for t in texts(at.markdown))
        assert at.button(key="sample_next").disabled and at.button(key="sample_prev").disabled


@pytest.mark.parametrize("page", ["overview", "steps", "sample"])
def test_empty_run(open_app, page):
    at = open_app(page, run="empty")
    assert_clean(at)
    assert any("no complete samples yet" in t for t in texts(at.info))


def test_a_bug_in_a_page_is_a_message_not_a_traceback(open_app, monkeypatch):
    from rl_board.ui import charts, svg_figures

    def boom(*args, **kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(charts, "curve_figure", boom)  # the interactive chart
    monkeypatch.setattr(svg_figures, "curve_chart", boom)  # the SVG one, drawn by default
    at = open_app(run="ppo")
    assert not at.exception
    shown = " ".join(texts(at.error))
    assert "Something went wrong" in shown and "secret internal detail" not in shown
    assert at.sidebar.selectbox(key="w.run").value == "ppo"  # the rest of the app still works


def test_run_that_cannot_be_opened_is_a_message(open_app, monkeypatch):
    from rl_board.errors import NotFoundError
    from rl_board.ui import cached

    def gone(*args, **kwargs):
        raise NotFoundError("no run folder at /somewhere")

    monkeypatch.setattr(cached, "store_for", gone)
    at = open_app(run="ppo")
    assert_clean(at)
    assert any("no run folder" in t for t in texts(at.sidebar.error))
    assert at.sidebar.selectbox(key="w.run") is not None


def test_the_start_page_names_pickled_rollouts(tmp_path, serve):
    dumps = write_slime_dumps(tmp_path / "served" / "slime", range(2), seed=5)
    serve(tmp_path / "served")
    at = open_page()
    assert not at.exception
    assert any("holds no rollout run" in t for t in texts(at.warning))
    [listing] = [d.value for d in at.dataframe if "why it is not read" in d.value.columns]
    rows = dict(zip(listing["file"], listing["why it is not read"], strict=True))
    assert rows == {p.relative_to(tmp_path / "served").as_posix(): PICKLE for p in dumps}
