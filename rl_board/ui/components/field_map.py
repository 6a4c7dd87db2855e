"""Which column of the logs is the prompt, the response, the reward: the open run's field map.

The map lives in the URL (``fields=reward=acc,prompt=question``), so a link
opens the run read the same way. Choosing "as read" drops a field from the
map; the run is then read as its format (or rl-board.toml) says. A run whose
reward is made of parts (TRL's reward functions) also gets the sum itself to
edit, weights included (``reward=accuracy + 0.5*format``).
"""

from __future__ import annotations

import streamlit as st

from rl_board import api
from rl_board.errors import InvalidArgumentError
from rl_board.formats import fields as F
from rl_board.ui import state
from rl_board.ui.text import escape_markdown

AS_READ = "(as read)"
CHOICES = ("reward", "prompt", "response", "ground_truth")


def current_map() -> dict[str, str]:
    """The view's field map; entries that cannot be used become a notice, not an error."""
    out: dict[str, str] = {}
    for part in (state.get("fields") or "").split(","):
        if not part.strip():
            continue
        try:
            field, key = api.parse_field_option(part)
        except InvalidArgumentError as exc:
            state.notice(
                f"Ignored field map entry {escape_markdown(repr(part[:60]))}: {escape_markdown(str(exc))}"
            )
            continue
        out[field] = key
    return out


def _encode(fmap: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(fmap.items()))


def _changed(field: str) -> None:
    fmap = current_map()
    chosen = st.session_state.get(f"fieldmap.{field}")
    if chosen in (None, AS_READ):
        fmap.pop(field, None)
    else:
        fmap[field] = chosen
    state.put_many(fields=_encode(fmap), table_page=1)


SUM_KEY = "fieldmap.reward_sum"


def _sum_text(weights: dict[str, float]) -> str:
    """``{"a": 1.0, "b": 0.5}`` -> ``a + 0.5*b``."""
    return " + ".join(name if weight == 1.0 else f"{weight:g}*{name}" for name, weight in weights.items())


def _sum_changed() -> None:
    fmap = current_map()
    text = (st.session_state.get(SUM_KEY) or "").strip()
    if not text:
        fmap.pop("reward", None)
    else:
        try:
            field, value = api.parse_field_option(f"reward={text}")
        except InvalidArgumentError as exc:
            state.notice(f"Reward sum not used: {escape_markdown(str(exc))}")
            return
        fmap[field] = value
    state.put_many(fields=_encode(fmap), table_page=1)


def _reward_sum(store: api.RolloutStore) -> None:
    """The sum the reward is made of, to edit (weights as ``0.5*name``); empty goes back to as read."""
    if not store.reward_made_by:
        return
    st.session_state[SUM_KEY] = _sum_text(store.reward_weights)
    st.text_input(
        "Reward = weighted sum of",
        key=SUM_KEY,
        on_change=_sum_changed,
        help="The reward functions and their weights (TRL's reward_weights are not in its files), e.g. "
        "accuracy_reward + 0.5*format_reward; NaN parts are skipped, as TRL does",
    )
    st.caption(escape_markdown(f"Parts found from {store.reward_made_by}."))


def render_field_map(store: api.RolloutStore) -> None:
    """An expander: how the run was read, and a chooser per main field (the main reward among them)."""
    fmap = current_map()
    with st.expander("Fields: how this run is read", icon=":material/swap_horiz:", expanded=bool(fmap)):
        if store.report.read_as:
            st.caption(escape_markdown(store.report.read_as))
        if store.report.turns_read:
            st.caption(
                escape_markdown(store.report.turns_read[0].upper() + store.report.turns_read[1:] + ".")
            )
        columns = [
            c for c in store.fields if c not in ("step",) and ((f := F.sample(c)) is None or f.sortable)
        ]
        for field in CHOICES:
            options = [AS_READ, *sorted(set(columns) - {field} | ({fmap[field]} if field in fmap else set()))]
            key = f"fieldmap.{field}"
            st.session_state[key] = fmap.get(field, AS_READ)
            st.selectbox(
                F.known(F.SAMPLE, field).title,
                options,
                key=key,
                on_change=_changed,
                args=(field,),
                help=f"Read the {F.label(field)} from another column of the logs",
            )
        _reward_sum(store)
