"""Length distribution per step and the share at the longest length, by hand."""

from __future__ import annotations

import pandas as pd

from rl_board.rollouts.lengths import length_table, truncation_share


def test_lengths_by_hand() -> None:
    frame = pd.DataFrame({"step": [0, 0, 0, 1, 1], "n_tokens": [10, 20, 100, 100, 100]})
    counts, edges = length_table(frame, "n_tokens", bins=3)
    assert counts.loc[0].tolist() == [2, 0, 1] and counts.loc[1].tolist() == [0, 0, 2]
    assert edges[0] == 10 and edges[-1] == 101
    assert truncation_share(frame, "n_tokens").tolist() == [1 / 3, 1.0]
