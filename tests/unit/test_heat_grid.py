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
    return pd.DataFrame(
        {"token": ['<img src=x onerror=alert(1)>"'] * n, "kl": values, "log_ratio": np.linspace(-1.0, 0.5, n)}
    )


def _bands(row: str) -> list[tuple[str, float, float]]:
    """(colour, from %, to %) of one painted row."""
    inside = row.split("linear-gradient(90deg,", 1)[1].split(")", 1)[0]
    out = []
    for stop in inside.split(","):
        colour, start, end = stop.split()
        out.append((colour, float(start.rstrip("%") or 0), float(end.rstrip("%"))))
    return out


def _rows_of(grid: str) -> list[str]:
    return [part.split(">", 1)[0] for part in grid.split("<div title=")[1:]]


def test_every_token_is_one_band_wrapped_in_rows_and_no_model_text_is_in_it() -> None:
    tokens = _tokens(250)
    grid = heat_grid.wrapped_grid_html(tokens, "kl", width=100)
    rows = _rows_of(grid)
    assert len(rows) == 3  # 100 + 100 + 50 tokens
    assert "onerror" not in grid and "<img" not in grid
    covered = [sum(end - start for colour, start, end in _bands(r) if colour != "transparent") for r in rows]
    assert covered == [100, 100, 50]  # every token has its band; the last row's rest is empty
    assert ("transparent", 50.0, 100.0) in _bands(rows[2])
    assert any(
        colour == "#d9d9d9" and (start, end) == (3, 4) for colour, start, end in _bands(rows[0])
    )  # NaN
    assert '"tokens 0–99 · KL (k3)"' in grid and '"tokens 200–249 · KL (k3)"' in grid
    assert "of all 250 tokens, 100 per row" in grid


def test_bands_have_the_chips_colours() -> None:
    tokens = _tokens(10)
    grid = heat_grid.wrapped_grid_html(tokens, "kl")
    top = scale_for(tokens["kl"].tolist(), "kl").color(1.0)
    r, g, b = (min(255, round(int(x) / 4) * 4) for x in top[4:-1].split(","))  # rounded to a multiple of 4
    colour = f"#{r:02x}{g:02x}{b:02x}"
    assert _bands(_rows_of(grid)[0])[-2][0] == colour  # the last token's band, before the empty rest


def test_turns_start_rows_and_untrained_tokens_are_faded() -> None:
    tokens = _tokens(30)
    groups = [("turn 0 · <b>assistant</b>", 0, 10), ("turn 1 · tool", 10, 30)]
    untrained = np.array([False] * 10 + [True] * 20)
    grid = heat_grid.wrapped_grid_html(tokens, "kl", groups=groups, untrained=untrained, width=8)
    assert len(_rows_of(grid)) == 2 + 3  # a turn starts a new row: 10 = 8 + 2, 20 = 8 + 8 + 4
    assert "&lt;b&gt;assistant&lt;/b&gt;" in grid and "<b>" not in grid
    assert "one turn per block" in grid
    plain = heat_grid.wrapped_grid_html(tokens, "kl", groups=groups, width=8)
    assert _bands(_rows_of(grid)[0]) == _bands(_rows_of(plain)[0])  # trained: as they are
    assert _bands(_rows_of(grid)[2]) != _bands(_rows_of(plain)[2])  # not trained: lighter
    faded = _bands(_rows_of(grid)[2])[0][0]
    assert all(int(faded[i : i + 2], 16) >= 0.65 * 255 for i in (1, 3, 5))
    rows = heat_grid.metric_rows_html(tokens, ["kl", "log_ratio"], groups=groups, untrained=untrained)
    assert rows.count('title="#') == 60 and rows.count("(not trained)") == 40
    assert rows.count(' t" title=') == 2  # the second turn's first token, in each metric row


def test_metric_rows_skip_metrics_without_values() -> None:
    tokens = _tokens(5).assign(value=math.nan)
    rows = heat_grid.metric_rows_html(tokens, ["kl", "value"])
    assert rows.count('title="#') == 5
