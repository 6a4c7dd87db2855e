"""Deep links: the URL restores run, page, step, sample, sort and filters; bad values are messages."""

from __future__ import annotations

import pytest

from tests.helpers.apptest import assert_clean, table, texts


def _param(at, name):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


LINK = {
    "run": "ppo",
    "step": "3",
    "sample": "2",
    "sort": "kl_mean",
    "descending": "1",
    "reward": "-10:10",
    "search": "What",
    "token_metric": "log_ratio",
}
# The same view as links written before the parameters got readable names spelled it.
OLD_LINK = {
    "run": "ppo",
    "step": "3",
    "sample": "2",
    "sort": "kl_mean",
    "desc": "1",
    "reward": "-10:10",
    "q": "What",
    "metric": "log_ratio",
}


def test_link_restores_sample_view(open_app):
    at = open_app("sample", **LINK)
    assert_clean(at)
    assert any("Step 3 · sample 2" in t for t in texts(at.markdown))
    assert at.button_group(key="w.token_metric").value == "log_ratio"
    for name, value in LINK.items():
        assert _param(at, name) == value  # written back: the address bar can be copied


def test_link_restores_step_browser_sort_and_filters(open_app):
    at = open_app("steps", **LINK)
    assert_clean(at)
    assert at.slider(key="w.step").value == 3
    assert at.selectbox(key="w.sort").value == "kl_mean"
    assert at.toggle(key="w.descending").value is True
    assert at.text_input(key="w.search").value == "What"
    assert at.number_input(key="w.reward.lo").value == -10
    kl = table(at)["kl_mean"].to_numpy()
    assert list(kl) == sorted(kl, reverse=True)


def test_state_survives_page_switches(open_app):
    at = open_app("steps", run="ppo", step="4")
    at.selectbox(key="w.sort").set_value("reward").run()
    at.switch_page("views/overview.py").run()
    at.switch_page("views/steps.py").run()
    assert_clean(at)
    assert at.slider(key="w.step").value == 4
    assert at.selectbox(key="w.sort").value == "reward"


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"step": "abc"}, "whole number"),
        ({"step": "999"}, "Step 999 is not in this run"),
        ({"step": "2", "sample": "99"}, "Sample 99 is not in this step"),
        ({"sort": "no_such_column"}, "Cannot sort by"),
        ({"reward": "x:y"}, "must be numbers"),
        ({"reward": "5:1"}, "low bound is above"),
        ({"descending": "maybe"}, "must be 1 or 0"),
        ({"desc": "maybe"}, "must be 1 or 0"),
        ({"token_metric": "bogus"}, "not available"),
        ({"kl_estimator": "k4"}, "must be one of k3, k2, k1"),
    ],
)
def test_bad_link_values_warn_instead_of_failing(open_app, params, needle):
    page = "steps" if "sort" in params else "sample"
    at = open_app(page, run="ppo", **params)
    assert_clean(at)
    assert any(needle in t for t in texts(at.warning)), texts(at.warning)


@pytest.mark.parametrize("page", ["steps", "sample"])
def test_an_old_link_opens_the_same_view_and_is_rewritten_with_the_new_names(open_app, page):
    new, old = open_app(page, **LINK), open_app(page, **OLD_LINK)
    assert_clean(new)
    assert_clean(old)
    assert (
        {k: _param(old, k) for k in old.query_params} == {k: _param(new, k) for k in new.query_params} == LINK
    )
    if page == "steps":
        assert old.text_input(key="w.search").value == new.text_input(key="w.search").value == "What"
        assert old.toggle(key="w.descending").value is new.toggle(key="w.descending").value is True
        assert table(old).equals(table(new))
    else:
        assert (
            old.button_group(key="w.token_metric").value
            == new.button_group(key="w.token_metric").value
            == "log_ratio"
        )
        assert texts(old.markdown) == texts(new.markdown)


def test_every_old_name_is_read_as_its_new_one(open_app):
    from rl_board.ui import state

    olds = {
        "xcol": "",
        "tpage": "1",
        "tokpage": "1",
        "pst": "learned",
        "thr": "0.5",
        "flat": "1",
        "mq": "loss",
        "msm": "0.3",
        "mx": "wall_time",
        "mone": "0",
        "case": "1",
        "all": "1",
        "len": "3:",
        "xr": ":2",
        "grp": "g",
        "pid": "abc",
        "vs": "ppo",
        "sa": "1",
        "sb": "2",
        "mrow": "0",
        "mruns": "x",
    }
    assert set(olds) | {"desc", "q", "metric"} == set(state.RENAMED)  # every renamed parameter is checked
    at = open_app("steps", run="ppo", step="1", **olds)
    assert_clean(at)
    written = {k: _param(at, k) for k in at.query_params}
    assert not set(olds) & set(written)  # the address bar now uses the new names only
    for old, value in olds.items():
        new = state.RENAMED[old]
        default = (
            state.format_value(state._BY_NAME[new], state._BY_NAME[new].default)
            if state._BY_NAME[new].default not in (None, ())
            else None
        )
        assert written.get(new, default) == value, (old, new)


@pytest.mark.parametrize(
    ("run", "needle"),
    [
        ("../../etc", "outside the folders"),
        ("/etc", "outside the folders"),
        ("no_such_run", "No run"),
    ],
)
def test_bad_run_in_link_is_a_message(open_app, run, needle):
    at = open_app("steps", run=run)
    assert_clean(at)
    assert any(needle in t for t in texts(at.warning)), texts(at.warning)
    assert any("Choose a run" in t for t in texts(at.info))
    at.button(key="dismiss_notices").click().run()
    assert not at.warning


def test_link_values_cannot_inject_markdown(open_app):
    at = open_app("steps", run="[click me](https://evil.example)", step="![x](https://evil.example/x.png)")
    assert_clean(at)
    shown = " ".join(texts(at.warning))
    assert "[click me](" not in shown and r"\[click me\]" in shown
    assert "![x](" not in shown
