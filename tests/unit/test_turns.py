"""A trajectory's turns for the sample view, with tiny hand-made inputs: spans from the messages or from a
loss mask, untrained tokens, per-turn KL, where jumps go, and the heatmap that starts each turn on a new
row."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rl_board.ui import turns
from rl_board.ui.chips import scale_for, turn_chips_html
from rl_board.ui.token_heatmap import turn_wrapped_figure
from tests.helpers.apptest import decode

MESSAGES = [
    {"role": "user", "content": "go"},
    {
        "role": "assistant",
        "content": "a",
        "tool_calls": [{"id": "c1", "name": "python", "arguments": "{}"}],
        "tokens": [0, 3],
        "trained": True,
    },
    {
        "role": "tool",
        "content": "Error: x",
        "tool_call_id": "c1",
        "name": "python",
        "error": True,
        "tokens": [3, 5],
        "trained": False,
    },
    {"role": "assistant", "content": "done", "tokens": [5, 8], "trained": True},
]


def tokens(n: int = 8, kl: list[float] | None = None) -> pd.DataFrame:
    return pd.DataFrame({"token": [f"t{k}" for k in range(n)], "kl": kl or [0.1] * n})


def test_spans_from_messages_and_from_a_loss_mask() -> None:
    parts = turns.segments(MESSAGES, 8)
    assert [(g.turn, g.role, g.start, g.end, g.trained) for g in parts] == [
        (1, "assistant", 0, 3, True),
        (2, "tool", 3, 5, False),
        (3, "assistant", 5, 8, True),
    ]
    plain = [{k: v for k, v in m.items() if k not in ("tokens", "trained")} for m in MESSAGES]
    by_mask = turns.segments(plain, 8, np.array([1, 1, 1, 0, 0, 1, 1, 1.0]))
    assert [(g.turn, g.role, g.start, g.end) for g in by_mask] == [
        (1, "assistant", 0, 3),
        (2, "tool", 3, 5),
        (3, "assistant", 5, 8),
    ]
    odd = turns.segments(plain, 6, np.array([1, 0, 1, 0, 1, 1.0]))  # more runs than turns: named by the mask
    assert [(g.turn, g.role) for g in odd][:2] == [(-1, "trained"), (-1, "masked")]


def test_untrained_tokens_and_turn_kl() -> None:
    parts = turns.segments(MESSAGES, 8)
    frame = tokens(kl=[0.1, 0.2, 0.3, 9.0, 9.0, 0.5, 0.5, 0.5])
    assert turns.untrained(frame, parts).tolist() == [False] * 3 + [True] * 2 + [False] * 3
    got = turns.turn_kl(frame, parts, "kl")  # the untrained tool output is left out
    assert list(got) == [1, 3] and np.allclose(list(got.values()), [0.2, 0.5])
    with_mask = frame.assign(loss_mask=[1, 0, 1, 1, 1, 1, 1, 1.0])
    assert turns.untrained(with_mask, parts).tolist()[:2] == [False, True]  # a logged mask wins


def test_jump_targets_wrap_around() -> None:
    assert turns.call_turns(MESSAGES) == [1] and turns.error_turns(MESSAGES) == [2]
    assert turns.next_after([1, 4], None) == 1 and turns.next_after([1, 4], 1) == 4
    assert turns.next_after([1, 4], 4) == 1 and turns.next_after([], 2) is None
    assert turns.answered_by(MESSAGES) == {2: (1, 0)}


def test_single_turn_samples_are_not_trajectories() -> None:
    assert not turns.is_trajectory(None)
    assert not turns.is_trajectory(
        [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a"},
        ]
    )
    assert turns.is_trajectory(MESSAGES)


def test_heatmap_starts_each_turn_on_a_new_row_and_greys_untrained_tokens() -> None:
    parts = turns.segments(MESSAGES, 8)
    frame = tokens(kl=[float(k) for k in range(8)])
    groups = turns.groups(frame, parts)
    assert groups == [
        ("turn 1 · assistant", 0, 3),
        ("turn 2 · tool · not trained", 3, 5),
        ("turn 3 · assistant", 5, 8),
    ]
    fig = turn_wrapped_figure(frame, "kl", groups, turns.untrained(frame, parts), width=2).to_plotly_json()
    trained, grey = (
        np.asarray(decode(t["z"]) if isinstance(t["z"], dict) else t["z"], dtype=float).reshape(-1, 2)
        for t in fig["data"]
    )
    # rows: [0 1] [2 -] | [3 4] | [5 6] [7 -]; the tool's row is only in the grey trace
    assert trained.shape == (5, 2)
    np.testing.assert_array_equal(trained[0], [0, 1]) and np.testing.assert_array_equal(trained[3], [5, 6])
    assert np.isnan(trained[2]).all() and np.array_equal(grey[2], [3.0, 4.0])
    assert list(fig["layout"]["yaxis"]["tickvals"]) == [0, 2, 3]


def test_turn_chips_are_escaped_and_marked() -> None:
    frame = pd.DataFrame({"token": ["<b>", "x"], "kl": [0.1, 0.2]})
    html = turn_chips_html(
        frame, "kl", [("turn 1 · <assistant>", frame, [False, True])], scale_for([0.1, 0.2], "kl")
    )
    assert "&lt;assistant&gt;" in html and "&lt;b&gt;" in html and "<b>" not in html
    assert html.count("rlb-untrained") == 1
