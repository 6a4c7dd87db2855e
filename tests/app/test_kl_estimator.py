"""The KL estimator chosen in the sidebar (k3 default, k2, k1) drives every view that shows "KL"."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.apptest import assert_clean, decode, figures, table, texts, trace


def _param(at, name):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def test_overview_curve_follows_the_estimator_and_the_link_keeps_it(open_app, store_of):
    at = open_app(run="ppo")
    summary = store_of("ppo").step_summary()
    k3 = trace(figures(at)["KL (k3) to the reference per step"], "KL (k3, mean per sample)")
    np.testing.assert_allclose(decode(k3["y"]), summary["kl_mean"], rtol=1e-9)
    assert _param(at, "kl_estimator") is None  # the default is not written
    at.sidebar.radio(key="w.kl_estimator").set_value("k2").run()
    assert_clean(at)
    figs = figures(at)
    assert "KL (k3) to the reference per step" not in figs
    spec = figs["KL (k2) to the reference per step"]
    np.testing.assert_allclose(
        decode(trace(spec, "KL (k2, mean per sample)")["y"]), summary["kl_k2_mean"], rtol=1e-9
    )
    band = decode(trace(spec, "KL (k2, mean per sample) +band")["y"])
    np.testing.assert_allclose(band, summary["kl_k2_p90"], rtol=1e-9)  # the band is the k2 spread too
    assert _param(at, "kl_estimator") == "k2"


def test_step_browser_table_sort_and_filter_use_the_estimator(open_app, store_of):
    at = open_app("steps", run="ppo", step="4", sort="kl_mean", descending="1", kl=":0.05", kl_estimator="k2")
    assert_clean(at)
    frame = table(at)
    assert "kl_k2_mean" in frame.columns and "kl_k2_sum" in frame.columns
    assert "kl_mean" not in frame.columns and "kl_sum" not in frame.columns
    assert at.selectbox(key="w.sort").value == "kl_k2_mean"  # sort=kl_mean means "KL": k2's here
    values = frame["kl_k2_mean"].to_numpy()
    assert list(values) == sorted(values, reverse=True) and values.max() <= 0.05
    rows = store_of("ppo").samples(step=4, columns=["kl_k2_mean"])
    assert len(frame) == int((rows["kl_k2_mean"] <= 0.05).sum()) < len(rows)  # the range is on k2
    assert any("KL (k2, mean)" in label for label in (n.label for n in at.number_input))
    cards = {m.label: m.value for m in at.metric}
    expected = store_of("ppo").step_summary().set_index("step").loc[4, "kl_k2_mean"]
    assert float(cards["Mean KL (k2)"]) == pytest.approx(expected, rel=1e-3)


def test_switching_the_estimator_moves_a_kl_sort_along(open_app):
    at = open_app("steps", run="ppo", step="4", sort="kl_mean")
    at.sidebar.radio(key="w.kl_estimator").set_value("k1").run()
    assert_clean(at)
    assert at.selectbox(key="w.sort").value == "log_ratio_mean"
    assert "kl_mean" not in table(at).columns
    at.sidebar.radio(key="w.kl_estimator").set_value("k3").run()
    assert at.selectbox(key="w.sort").value == "kl_mean"


def test_sample_page_cards_and_token_colours_use_the_estimator(open_app, store_of):
    at = open_app(
        "sample", run="ppo", step="2", sample="1", kl_estimator="k2", metric="kl"
    )  # an old-style colour
    assert_clean(at)
    row = store_of("ppo").samples(step=2, columns=["kl_k2_mean", "kl_k2_sum"], offset=1, limit=1).iloc[0]
    cards = {m.label.replace("\\", ""): m.value for m in at.metric}  # labels are Markdown-escaped
    assert float(cards["KL (k2, mean)"]) == pytest.approx(row["kl_k2_mean"], rel=1e-3)
    assert float(cards["KL (k2, sum)"]) == pytest.approx(row["kl_k2_sum"], rel=1e-3)
    assert not {"KL (k3, mean)", "KL (k3, sum)"} & set(cards)
    colour = at.button_group(key="w.token_metric")
    assert colour.value == "kl_k2" and "KL (k2)" in colour.options and "KL (k3)" not in colour.options
    assert any("Top tokens by KL (k2)" in t for t in texts(at.markdown))
    assert _param(at, "token_metric") == "kl_k2"
