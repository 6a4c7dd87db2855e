"""Overview page and sidebar: run chooser, curves, display settings, refused roots."""

from __future__ import annotations

import numpy as np

from tests.helpers.apptest import assert_clean, decode, figures, texts, trace


def test_start_page_lists_runs_and_asks_for_one(open_app):
    at = open_app()
    assert_clean(at)
    assert any("Choose a run" in t for t in texts(at.info))
    runs = next(f.value for f in at.dataframe if "run" in f.value.columns)
    assert set(runs["run"]) == {
        "ppo",
        "eval",
        "single",
        "noref",
        "empty",
        "big",
        "hostile",
        "broken",
        "extras",
    }
    assert len(at.get("plotly_chart")) == 0


def test_choosing_a_run_draws_curves_with_sorted_steps(open_app, store_of):
    at = open_app()
    at.sidebar.selectbox(key="w.run").set_value("ppo").run()
    assert_clean(at)
    figs = figures(at)
    reward = figs["Reward per step"]
    summary = store_of("ppo").step_summary()
    mean = trace(reward, "reward")
    assert list(decode(mean["x"])) == sorted(summary["step"])
    np.testing.assert_allclose(decode(mean["y"]), summary["reward_mean"])
    assert {"ref reward", "valid reward", "ref valid reward"} <= {t["name"] for t in reward["data"]}
    assert "KL (k3) to the reference per step" in figs
    assert "Response length (tokens) per step" in figs
    assert at.query_params["run"] in ("ppo", ["ppo"])  # the choice is in the URL


def _band_width(at, name="reward"):
    spec = figures(at)["Reward per step"]
    return decode(trace(spec, f"{name} +band")["y"]) - decode(trace(spec, f"{name} −band")["y"])


def test_band_shows_percentiles_by_default_and_follows_the_choice(open_app, store_of):
    at = open_app(run="ppo")
    summary = store_of("ppo").step_summary()
    np.testing.assert_allclose(_band_width(at), summary["reward_p90"] - summary["reward_p10"], rtol=1e-6)
    at.sidebar.radio(key="band").set_value("min-max").run()
    np.testing.assert_allclose(_band_width(at), summary["reward_max"] - summary["reward_min"], rtol=1e-6)
    at.sidebar.radio(key="band").set_value("std").run()
    std = summary["reward_std"].to_numpy()
    np.testing.assert_allclose(_band_width(at), 2 * 1.0 * std, rtol=1e-6)
    at.sidebar.slider(key="band_scale").set_value(0.5).run()
    assert_clean(at)
    np.testing.assert_allclose(_band_width(at), 2 * 0.5 * std, rtol=1e-6)


def test_zero_shift_and_k1_switch(open_app, store_of):
    at = open_app(run="ppo")
    at.sidebar.toggle(key="zero_shift").set_value(True).run()
    reward = trace(figures(at)["Reward per step"], "reward")
    assert decode(reward["y"])[0] == 0.0
    at.sidebar.radio(key="w.kl_estimator").set_value("k1").run()
    assert_clean(at)
    figs = figures(at)
    assert "KL (k3) to the reference per step" not in figs
    k1 = decode(trace(figs["KL (k1) to the reference per step"], "log-ratio (k1 KL, mean per sample)")["y"])
    expected = store_of("ppo").step_summary()["log_ratio_mean"].to_numpy()
    np.testing.assert_allclose(k1, expected - expected[0], rtol=1e-9)  # zero shift applies to it too


def test_reward_curves_can_be_toggled(open_app):
    at = open_app(run="ppo")
    pills = at.get("button_group")[0]
    pills.set_value(["reward"]).run()
    assert_clean(at)
    names = {t["name"] for t in figures(at)["Reward per step"]["data"]}
    assert "reward" in names and "ref reward" not in names


def test_root_outside_served_roots_is_refused(open_app):
    at = open_app()
    at.sidebar.text_input(key="root").input("/etc").run()
    assert_clean(at)
    assert any("Refused" in t and "outside" in t for t in texts(at.sidebar.error))
    assert len(at.sidebar.selectbox) == 0  # no run list: nothing under /etc was read


def test_sub_folder_of_served_root_is_accepted(open_app, served_root):
    at = open_app()
    at.sidebar.text_input(key="root").input(str(served_root / "ppo")).run()
    assert_clean(at)
    assert not at.sidebar.error


def test_load_report_badge(open_app):
    at = open_app(run="ppo")
    joined = " ".join(texts(at.sidebar.markdown))  # st.badge is a Markdown element
    assert "48 samples" in joined and "6 steps" in joined and "0 bad lines" in joined


def test_load_report_lists_bad_lines(open_app):
    at = open_app(run="broken")
    assert_clean(at)
    assert any("1 bad line" in t for t in texts(at.sidebar.markdown))
    bad = next(f.value for f in at.sidebar.dataframe if "reason" in f.value.columns)
    assert list(bad["file"]) == ["r.jsonl"] and list(bad["line"]) == [2]
    assert bad["reason"].iloc[0]


def test_start_page_explains_how_to_read_a_run(open_app):
    at = open_app()
    assert any("How to read a run" in t for t in texts(at.markdown))


def test_compare_runs_from_link(open_app):
    at = open_app(run="ppo", compare="eval,noref")
    assert_clean(at)
    figs = figures(at)
    reward = figs["Reward per step, by run"]
    names = [t["name"] for t in reward["data"] if t.get("mode") == "lines+markers"]
    assert names == ["ppo", "eval", "noref"]
    assert "KL (k3) per step, by run" in figs
    assert any("Not in: eval" in t for t in texts(at.caption))
    assert at.query_params["compare"] in ("eval,noref", ["eval,noref"])


def test_compare_ignores_unknown_runs(open_app):
    at = open_app(run="ppo", compare="ppo,nope")
    assert_clean(at)
    assert any("Not comparing" in t for t in texts(at.warning))
    assert "Reward per step, by run" not in figures(at)


def test_reward_curve_choice_survives_a_run_without_those_curves(open_app):
    at = open_app(run="ppo")
    at.sidebar.selectbox(key="w.run").set_value("eval").run()
    assert_clean(at)
    at.sidebar.selectbox(key="w.run").set_value("ppo").run()
    assert_clean(at)
    assert "Reward per step" in figures(at)


def test_length_distribution_per_step(open_app):
    at = open_app(run="ppo")
    assert_clean(at)
    assert any("distribution, and the share at the longest length" in t for t in figures(at))
