"""Long reasoning responses: every token in the heatmap, chips paged, find and jump."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.store import RolloutStore
from rl_board.ui.token_heatmap import wrapped_heatmap_figure
from tests.helpers.apptest import APP, assert_clean, heat_grid


@pytest.fixture
def long_root(tmp_path: Path, serve) -> Path:
    root = tmp_path / "served"
    write_run(root / "long", DemoSpec(steps=1, samples=2, ranks=1, tokens=6000, seed=7))
    serve(root)
    return root


def test_every_token_is_a_cell_of_the_wrapped_heatmap(long_root: Path, tmp_path: Path) -> None:
    detail = RolloutStore.open(long_root / "long", cache_dir=tmp_path / "c").sample(step=0, index=0)
    tokens = detail.tokens
    assert len(tokens) > 3000
    fig = wrapped_heatmap_figure(tokens, "kl")
    z = np.asarray(fig.data[0].z, dtype=np.float64)
    kl = tokens["kl"].to_numpy()
    assert z.shape[1] == 100 and np.count_nonzero(np.isfinite(z)) == np.count_nonzero(np.isfinite(kl))
    assert np.allclose(z.ravel()[: len(kl)], kl, equal_nan=True) and fig.data[0].xgap == 0


def test_sample_page_with_a_long_response(long_root: Path) -> None:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params.update({"run": "long", "step": "0", "sample": "0"})
    at.run()
    at.switch_page("views/sample.py").run()
    assert_clean(at)
    chips = [h.proto.body for h in at.get("html") if "rlb-chip" in h.proto.body]
    assert chips and chips[0].count('class="rlb-chip"') == 500  # one page of chips, not thousands
    grid = heat_grid(at)
    assert "one band per token" in grid
    tokens = int(re.search(r"of all (\d+) tokens", grid).group(1))
    assert grid.count('<div title="tokens ') == -(-tokens // 100)  # every token in a row of 100
    at.text_input(key="token_find").input("Indeed").run()  # the planted reward-hacking words, if any
    assert_clean(at)
    at.button(key="token_jump_0").click().run()
    assert_clean(at)
    assert any("the extreme is at position" in c.value for c in at.caption)
