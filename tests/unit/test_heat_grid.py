"""The heatmap grid drawn as HTML: one cell per token, numbers only, every label escaped."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rl_board.ui import heat_grid
from rl_board.ui.chips import scale_for


def _tokens(n: int) -> pd.DataFrame:
    values = np.linspace(0.0, 1.0, n)
    values[3] = math.nan
    return pd.DataFrame({"token": ['<img src=x onerror=alert(1)>"'] * n, "kl": values,
                         "log_ratio": np.linspace(-1.0, 0.5, n)})


def test_every_token_is_one_cell_wrapped_in_rows_and_no_model_text_is_in_it() -> None:
    tokens = _tokens(250)
    grid = heat_grid.wrapped_grid_html(tokens, "kl", width=100)
    assert grid.count('title="#') == 250
    assert grid.count("<i></i>") == 50  # the last row's empty cells
    assert "onerror" not in grid and "<img" not in grid
    assert 'title="#3 kl=n/a"' in grid and 'title="#249 kl=1"' in grid
    assert '<i class="cd9d9d9" title="#3 kl=n/a">' in grid  # a missing value has the chips' "no value" colour
    assert ".rlb-heat i.cd9d9d9{background:#d9d9d9}" in grid
    assert "of all 250 tokens, 100 per row" in grid


def test_cells_have_the_chips_colours() -> None:
    tokens = _tokens(10)
    grid = heat_grid.wrapped_grid_html(tokens, "kl")
    top = scale_for(tokens["kl"].tolist(), "kl").color(1.0)
    r, g, b = (min(255, round(int(x) / 4) * 4) for x in top[4:-1].split(","))  # rounded to a multiple of 4
    colour = f"{r:02x}{g:02x}{b:02x}"
    assert f'<i class="c{colour}" title="#9 kl=1">' in grid and f"i.c{colour}{{background:#{colour}}}" in grid
    assert grid.count("<style>") == 1 and grid.count("{background:") <= 11


def test_turns_start_rows_and_untrained_tokens_are_marked() -> None:
    tokens = _tokens(30)
    groups = [("turn 0 · <b>assistant</b>", 0, 10), ("turn 1 · tool", 10, 30)]
    untrained = np.array([False] * 10 + [True] * 20)
    grid = heat_grid.wrapped_grid_html(tokens, "kl", groups=groups, untrained=untrained, width=8)
    assert grid.count("(not trained)") == 20
    assert "&lt;b&gt;assistant&lt;/b&gt;" in grid and "<b>" not in grid
    assert "one turn per block" in grid
    rows = heat_grid.metric_rows_html(tokens, ["kl", "log_ratio"], groups=groups, untrained=untrained)
    assert rows.count('title="#') == 60 and rows.count("(not trained)") == 40
    assert rows.count(' t" title=') == 2  # the second turn's first token, in each metric row


def test_metric_rows_skip_metrics_without_values() -> None:
    tokens = _tokens(5).assign(value=math.nan)
    rows = heat_grid.metric_rows_html(tokens, ["kl", "value"])
    assert rows.count('title="#') == 5
