"""Chart pages draw SVG pictures by default (no Plotly: a fresh tab opens in <= 2 s) and the Plotly figures
when the sidebar's "Interactive charts (zoom, pan)" is on; the setting is shared by every page and kept in
the link."""

from __future__ import annotations

from pathlib import Path

import pytest

from rl_board.rollouts.store import RolloutStore
from tests.helpers.apptest import assert_clean, figures, interactive, open_page, svg_charts, svg_picture

CHART_PAGES = [
    ("overview", {"run": "ppo"}, "Reward per step"),
    ("steps", {"run": "ppo", "step": "3"}, "Reward per sample"),
]


@pytest.mark.parametrize(("page", "params", "title"), CHART_PAGES)
def test_chart_pages_draw_svg_by_default_and_plotly_on_request(open_app, page, params, title):
    at = open_app(page, **params)
    assert_clean(at)
    assert not at.get("plotly_chart")
    drawn = svg_charts(at)
    assert title in drawn
    assert svg_picture(drawn[title]).startswith("<svg")
    assert at.sidebar.toggle(key="w.interactive_charts").label == "Interactive charts (zoom, pan)"
    interactive(at)
    assert_clean(at)
    assert not svg_charts(at)
    assert title in figures(at)
    assert at.query_params["interactive_charts"] in ("1", ["1"])  # kept in the link


def test_the_setting_is_shared_by_every_page_and_read_from_the_link(open_app):
    at = open_app(run="ppo", interactive_charts="1")
    assert_clean(at)
    assert "Reward per step" in figures(at) and not svg_charts(at)
    at.switch_page("views/steps.py").run()
    assert_clean(at)
    assert "Reward per sample" in figures(at) and not svg_charts(at)
    interactive(at, on=False)
    assert not at.get("plotly_chart") and "Reward per sample" in svg_charts(at)


def test_the_overview_svg_charts_carry_the_run_numbers(open_app, store_of):
    at = open_app(run="ppo")
    drawn = svg_charts(at)
    assert {
        "Reward per step",
        "KL (k3) to the reference per step",
        "Response length (tokens) per step",
    } <= set(drawn)
    summary = store_of("ppo").step_summary().sort_values("step")
    body = drawn["Reward per step"]
    first = summary.iloc[0]
    assert f"step {int(first['step'])}\nreward: {first['reward_mean']:.4g}" in body  # the hover of step 0
    assert "band = 10th–90th percentile" in body
    assert any("distribution, and the share at the longest length" in t for t in drawn)


def test_prompt_history_draws_svg(grpo_root: Path, tmp_path: Path) -> None:
    row = RolloutStore.open(grpo_root / "grpo", cache_dir=tmp_path / "expected").prompts().iloc[0]
    at = open_page("views/prompts.py", run="grpo", prompt_id=row["id"])
    assert_clean(at)
    assert "This prompt over training" in svg_charts(at) and not at.get("plotly_chart")
    interactive(at)
    assert "This prompt over training" in figures(at)
