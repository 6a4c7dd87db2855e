"""The token view reruns on its own (a fragment) and a long answer's token table is built when opened."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rl_board.rollouts.demo import DemoSpec, write_run
from tests.helpers.apptest import APP, assert_clean, heat_grid, texts


def test_colour_change_redraws_the_tokens_and_the_link(open_app):
    at = open_app("sample", run="ppo", step="1", sample="0")
    assert at.button_group(key="w.token_metric").value == "kl"
    at.button_group(key="w.token_metric").set_value("logp").run()
    assert_clean(at)
    assert any("Top tokens by log-prob" in t for t in texts(at.markdown))
    legend = " ".join(str(h.proto.body) for h in at.get("html"))
    assert 'class="rlb-chip"' in legend
    assert at.query_params["token_metric"] == "logp"  # the fragment keeps the link current
    assert any("Step 1 · sample 0" in t for t in texts(at.markdown))  # the rest of the page is still there


@pytest.fixture
def long_run(tmp_path: Path, serve) -> Path:
    root = tmp_path / "served"
    write_run(root / "long", DemoSpec(steps=1, samples=2, ranks=1, tokens=1200, seed=7))
    serve(root)
    return root


def _token_tables(at: AppTest) -> list:
    return [f.value for f in at.dataframe if {"position", "token", "logp"} <= set(f.value.columns)]


def test_long_answer_token_table_is_built_when_opened(long_run):
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params.update({"run": "long", "step": "0", "sample": "0"})
    at.run()
    at.switch_page("views/sample.py").run()
    assert_clean(at)
    label = next(e.label for e in at.expander if e.label.startswith("Token table"))
    assert "built when opened" in label
    assert _token_tables(at) == []  # closed: thousands of rows are not sent
    assert "one band per token" in heat_grid(at)  # the heatmap still is
    at.session_state["token_table_open"] = True  # the user opens the expander
    at.run()
    assert_clean(at)
    (table,) = _token_tables(at)
    assert len(table) > 1000 and list(table["position"])[:3] == [0, 1, 2]
