"""Reading what an AppTest page shows: charts, the batch table, texts; shared by the UI tests."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "rl_board" / "ui" / "app.py"
PAGES = {
    name: f"views/{name}.py"
    for name in (
        "overview",
        "steps",
        "sample",
        "groups",
        "prompts",
        "matchup",
        "metrics",
        "health",
        "tools",
        "patterns",
    )
}


def decode(value):
    """Plotly JSON arrays may be base64 ({"dtype", "bdata"})."""
    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return np.asarray(value)


INTERACTIVE = "w.interactive_charts"  # the sidebar's "Interactive charts (zoom, pan)" toggle


def interactive(at: AppTest, on: bool = True) -> AppTest:
    """Switch the sidebar's "Interactive charts" on (Plotly figures) or off (SVG charts, the default)."""
    toggle = at.sidebar.toggle(key=INTERACTIVE)
    if toggle.value != on:
        toggle.set_value(on).run()
    return at


def figures(at: AppTest) -> dict[str, dict]:
    """Plotly figures on the page by title; charts are SVG pictures by default, so the sidebar's
    "Interactive charts" is switched on first (a rerun) when it is off."""
    if any(t.key == INTERACTIVE and not t.value for t in at.sidebar.toggle):
        interactive(at)
    out = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec.get("layout", {}).get("title", {}).get("text", "")
        out[title] = spec
    return out


def trace(spec: dict, name: str) -> dict:
    return next(t for t in spec["data"] if t.get("name") == name)


def table(at: AppTest):
    """The batch table (the dataframe with a prompt column)."""
    for frame in at.dataframe:
        if "prompt" in frame.value.columns:
            return frame.value
    raise AssertionError("no batch table on the page")


def texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


def svg_charts(at: AppTest) -> dict[str, str]:
    """The SVG charts on the page (``st.html`` of ``svg_charts.render``) by title: their HTML."""
    out = {}
    for element in at.get("html"):
        body = str(element.proto.body)
        if 'class="rlb-chart"' in body:
            title = body.split('class="rlb-chart-title"', 1)[1].split(">", 1)[1].split("</div>", 1)[0]
            out[html.unescape(title)] = body
    return out


def svg_picture(body: str) -> str:
    """The SVG document inside a chart's HTML (its image's data URI, decoded)."""
    data = body.split('src="data:image/svg+xml;base64,', 1)[1].split('"', 1)[0]
    return base64.b64decode(data).decode("utf-8")


def heat_grid(at: AppTest) -> str:
    """The HTML of the sample page's token heatmap grid ('' when there is none)."""
    return next((str(h.proto.body) for h in at.get("html") if 'class="rlb-heat"' in str(h.proto.body)), "")


def plain_texts(at: AppTest) -> list[str]:
    """The model texts a page shows with ``st.text`` (text_block), without the zero-width spaces that keep
    their edges."""
    return [str(e.value).strip("\u200b") for e in at.text]


def assert_clean(at: AppTest) -> None:
    """No exception reached the page, and no bug was caught at the page boundary."""
    assert not at.exception, [e.value for e in at.exception]
    bugs = [e.value for e in at.error if "Something went wrong" in str(e.value)]
    assert not bugs, bugs


def open_page(page: str | None = None, **params: str) -> AppTest:
    """The app opened with these URL parameters, then switched to ``page`` (a key of PAGES or a views/
    path)."""
    at = AppTest.from_file(str(APP), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    if page is not None:
        at.switch_page(PAGES.get(page, page))
        at.run()
    return at
