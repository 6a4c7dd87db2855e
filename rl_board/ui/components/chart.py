"""One way for every page to show a chart: an SVG picture drawn on the server by default, the Plotly figure
when the sidebar's "Interactive charts (zoom, pan)" is on.

Why: Plotly's script (4.6 MB) costs a fresh tab 1.1-1.3 s of the browser's main thread the first time a page
shows a Plotly chart; the SVG charts need no script, so a deep link opens in under 2 s. Interactive mode
keeps zoom, pan, per-point hovers and clicking a point (``on_select``). The setting is shared by every
page and kept in the link (``interactive_charts=1``).

Both builders are passed as callables: only the one the mode needs is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import streamlit as st

from rl_board.ui import state
from rl_board.ui.svg_charts import Chart, render

SETTING = "interactive_charts"
LABEL = "Interactive charts (zoom, pan)"
PLOT_CONFIG = {"displaylogo": False}


def interactive() -> bool:
    """Whether charts are drawn with Plotly (the shared setting; off by default)."""
    return bool(state.get(SETTING, False))


def render_toggle() -> None:
    """The sidebar's switch between SVG charts and Plotly ones."""
    st.toggle(
        LABEL,
        help="Off: charts are pictures drawn on the server (hover for values), so pages open fast. On: "
        "Plotly charts that zoom, pan and open a step when you click a point (the browser loads Plotly "
        "the first time, about a second).",
        **state.bind(SETTING, default=False),
    )


def show(
    key: str,
    *,
    figure: Callable[[], Any],
    svg: Callable[[], Chart],
    on_select: Callable[[], None] | None = None,
    link: Callable[[float], str] | None = None,
) -> None:
    """Draw one chart: ``svg()`` as a picture, or ``figure()`` (a Plotly figure) in interactive mode, whose
    point clicks call ``on_select`` (read the selection from ``st.session_state[key]``). ``link``: the
    address a click at x opens in the picture (what ``on_select`` does in interactive mode)."""
    if not interactive():
        picture = svg()
        st.html(render(picture if link is None else replace(picture, link=link)))
        return
    select: dict[str, Any] = {"on_select": on_select, "selection_mode": "points"} if on_select else {}
    st.plotly_chart(figure(), key=key, config=PLOT_CONFIG, **select)


def click_hint(action: str, *, linked: bool = False) -> str:
    """A caption for a chart whose points open something: how, in the mode the charts are in (``linked``: the
    pictures' steps are links too)."""
    if linked and not interactive():
        return f"Hover a chart for its values; click a step to {action}."
    if interactive():
        return f"Click a point to {action}."
    return (
        f"Hover a chart for its values; switch on **{LABEL}** in the sidebar to click a point and {action}."
    )
