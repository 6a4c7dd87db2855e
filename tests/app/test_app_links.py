"""Deep links: the URL restores run, page, step, sample, sort and filters; bad values are messages."""

from __future__ import annotations

import pytest

from tests.helpers.apptest import assert_clean, table, texts


def _param(at, name):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


LINK = {"run": "ppo", "step": "3", "sample": "2", "sort": "kl_mean", "desc": "1",
        "reward": "-10:10", "q": "What", "metric": "log_ratio"}


def test_link_restores_sample_view(open_app):
    at = open_app("sample", **LINK)
    assert_clean(at)
    assert any("Step 3 · sample 2" in t for t in texts(at.markdown))
    assert at.get("button_group")[0].value == "log_ratio"
    for name, value in LINK.items():
        assert _param(at, name) == value  # written back: the address bar can be copied


def test_link_restores_step_browser_sort_and_filters(open_app):
    at = open_app("steps", **LINK)
    assert_clean(at)
    assert at.slider(key="w.step").value == 3
    assert at.selectbox(key="w.sort").value == "kl_mean"
    assert at.toggle(key="w.desc").value is True
    assert at.text_input(key="w.q").value == "What"
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


@pytest.mark.parametrize(("params", "needle"), [
    ({"step": "abc"}, "whole number"),
    ({"step": "999"}, "Step 999 is not in this run"),
    ({"step": "2", "sample": "99"}, "Sample 99 is not in this step"),
    ({"sort": "no_such_column"}, "Cannot sort by"),
    ({"reward": "x:y"}, "must be numbers"),
    ({"reward": "5:1"}, "low bound is above"),
    ({"desc": "maybe"}, "must be 1 or 0"),
    ({"metric": "bogus"}, "not available"),
])
def test_bad_link_values_warn_instead_of_failing(open_app, params, needle):
    page = "steps" if "sort" in params else "sample"
    at = open_app(page, run="ppo", **params)
    assert_clean(at)
    assert any(needle in t for t in texts(at.warning)), texts(at.warning)


@pytest.mark.parametrize(("run", "needle"), [
    ("../../etc", "outside the folders"), ("/etc", "outside the folders"), ("no_such_run", "No run"),
])
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
