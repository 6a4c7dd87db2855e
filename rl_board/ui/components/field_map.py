"""Which column of the logs is the prompt, the response, the reward: the open run's field map.

The map lives in the URL (``fields=reward=acc,prompt=question``), so a link
opens the run read the same way. Choosing "as read" drops a field from the
map; the run is then read as its format (or rl-board.toml) says.
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
            state.notice(f"Ignored field map entry {escape_markdown(repr(part[:60]))}: {escape_markdown(str(exc))}")
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


def render_field_map(store: api.RolloutStore) -> None:
    """An expander: how the run was read, and a chooser per main field (the main reward among them)."""
    fmap = current_map()
    with st.expander("Fields: how this run is read", icon=":material/swap_horiz:", expanded=bool(fmap)):
        if store.report.read_as:
            st.caption(escape_markdown(store.report.read_as))
        columns = [c for c in store.fields if c not in ("step",) and (F.sample(c) is None or F.sample(c).sortable)]
        for field in CHOICES:
            options = [AS_READ, *sorted(set(columns) - {field} | ({fmap[field]} if field in fmap else set()))]
            key = f"fieldmap.{field}"
            st.session_state[key] = fmap.get(field, AS_READ)
            st.selectbox(F.sample(field).title, options, key=key, on_change=_changed, args=(field,),
                         help=f"Read the {F.label(field)} from another column of the logs")
