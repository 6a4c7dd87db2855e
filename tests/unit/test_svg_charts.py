"""The SVG charts (ui/svg_charts.py, svg_axes.py): numbers in, escaped HTML and a well-formed SVG out."""

from __future__ import annotations

import base64
import html
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from rl_board.ui.svg_axes import Scale, format_number, nice_step, ticks
from rl_board.ui.svg_charts import Axis, Chart, Heat, Series, render, svg

HOSTILE = ["<script>alert(1)</script>", '"onload="alert(1)', "<img src=x onerror=alert(2)>", "a & b's"]
SVG_NS = "{http://www.w3.org/2000/svg}"


def picture(body: str) -> ET.Element:
    """The chart's SVG picture, parsed (it must be well-formed XML)."""
    data = re.search(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', body)
    assert data is not None
    return ET.fromstring(base64.b64decode(data.group(1)).decode("utf-8"))


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG_NS}text")]


def hovers(body: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r'<i title="([^"]*)"', body)]


def line_chart(**kw) -> Chart:
    series = kw.pop("series", [Series("reward", [0, 1, 2, 3], [0.1, 0.4, 0.3, 0.9])])
    return Chart("Reward per step", series, y=Axis("reward"), **kw)


def test_a_line_chart_has_title_axes_ticks_line_and_one_hover_band_per_step():
    body = render(line_chart())
    root = picture(body)
    assert 'class="rlb-chart-title"' in body and ">Reward per step<" in body
    assert root.get("viewBox") == "0 0 560 260"
    assert 'style="width:100%;height:auto;display:block"' in body  # fits its column
    labels = texts(root)
    assert {"0", "1", "2", "3"} <= set(labels) and "step" in labels and "reward" in labels
    assert {"0.2", "0.4", "0.6", "0.8"} <= set(labels)  # round y ticks, as few digits as the step needs
    assert len(root.findall(f".//{SVG_NS}polyline")) == 1
    assert len(root.findall(f".//{SVG_NS}circle")) == 4  # markers at a few hundred points or fewer
    assert hovers(body) == [
        "step 0\nreward: 0.1",
        "step 1\nreward: 0.4",
        "step 2\nreward: 0.3",
        "step 3\nreward: 0.9",
    ]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_escaped_in_the_html_and_the_picture(name):
    chart = Chart(
        name,
        [Series(name, [0, 1], [1.0, 2.0]), Series(name + "2", [0, 1], [2.0, 1.0], right=True)],
        x=Axis(name),
        y=Axis(name),
        y2=Axis(name),
        note=name,
        x_label=name,
    )
    body = render(chart)
    outside = re.sub(r'src="data:[^"]*"', "", body)
    assert "<script" not in outside and "<img src=x" not in outside and 'onload="' not in outside
    assert html.escape(name, quote=True) in outside  # shown as text: title, legend, note, hover
    assert all(name in h for h in hovers(body))
    root = picture(body)  # parses: nothing broke out of the SVG's text or attributes
    assert name in texts(root)
    assert not [e for e in root.iter() if e.tag.split("}")[-1] in ("script", "foreignObject", "image", "a")]
    assert not [k for e in root.iter() for k in e.attrib if k.lower().startswith("on")]


def test_nan_leaves_a_gap_and_a_lonely_point_is_still_drawn():
    x = np.arange(6)
    y = np.array([1.0, 2.0, np.nan, 3.0, np.inf, 4.0])
    body = render(line_chart(series=[Series("loss", x, y, markers=False)]))
    root = picture(body)
    lines = root.findall(f".//{SVG_NS}polyline")
    assert [len(p.get("points", "").split()) for p in lines] == [2]  # 0-1; 3 and 5 stand alone
    assert len(root.findall(f".//{SVG_NS}circle")) == 2  # the two lonely points as dots
    assert "loss: n/a" in hovers(body)[2]
    assert "nan" not in ET.tostring(root, encoding="unicode").lower()


def test_one_point_and_a_constant_series_get_a_readable_axis():
    one = picture(render(line_chart(series=[Series("r", [5], [0.5])])))
    assert len(one.findall(f".//{SVG_NS}circle")) == 1
    assert "5" in texts(one)
    flat = picture(render(line_chart(series=[Series("lr", [0, 1, 2], [3e-4, 3e-4, 3e-4])])))
    labels = texts(flat)
    assert any(label.startswith("0.0003") or label == "3e-04" for label in labels), labels
    assert not any("nan" in label.lower() or "inf" in label.lower() for label in labels)


def test_empty_input_draws_an_empty_frame_saying_so():
    for chart in (Chart("Nothing"), line_chart(series=[Series("r", [], [])])):
        body = render(chart)
        assert "no data" in texts(picture(body))
        assert hovers(body) == []


def test_bands_are_drawn_and_listed_in_the_hover():
    s = Series("reward", [0, 1, 2], [0.5, 0.6, 0.7], low=[0.1, 0.2, np.nan], high=[0.9, 1.0, np.nan])
    body = render(line_chart(series=[s]))
    polygons = picture(body).findall(f".//{SVG_NS}polygon")
    assert len(polygons) == 1 and len(polygons[0].get("points", "").split()) == 4  # steps 0-1 only
    assert hovers(body)[0] == "step 0\nreward: 0.5 (0.1 – 0.9)"
    assert hovers(body)[2] == "step 2\nreward: 0.7"


def test_unified_hover_lists_every_series_and_the_legend_names_them():
    a = Series("reward", [0, 1], [0.1, 0.2], "#1f6feb")
    b = Series("ref reward", [1, 2], [0.3, 0.4], "#8b949e", dash=True)
    body = render(line_chart(series=[a, b]))
    assert hovers(body) == [
        "step 0\nreward: 0.1",
        "step 1\nreward: 0.2\nref reward: 0.3",
        "step 2\nref reward: 0.4",
    ]
    assert "#1f6feb" in body and "#8b949e" in body and "dashed" in body  # legend swatches, Plotly's colours


def test_percent_axis_bars_areas_heat_and_right_axis():
    bars = Series("answers", [0, 1, 2], [3, 0, 5], "#cf222e", "bar", colors=["#000001", "#000002", "#000003"])
    root = picture(render(Chart("Loops", [bars], y=Axis("answers", zero=True))))
    fills = [r.get("fill") for r in root.iter(f"{SVG_NS}rect") if r.get("fill", "").startswith("#00000")]
    assert fills == ["#000001", "#000003"]  # each bar its own colour; a bar of 0 is not drawn
    areas = [Series(n, [0, 1], [0.5, 0.5], kind="area", percent=True) for n in ("stop", "length")]
    body = render(Chart("Why", areas, y=Axis("share", percent=True, lo=0.0, hi=1.0)))
    assert "100%" in texts(picture(body)) and "stop: 50.0%" in hovers(body)[0]
    heat = Heat([0, 1, 2], [0, 10, 20], [[0.2, 0.8], [0.0, 1.0]])
    line = Series("cut", [0.5, 1.5], [0.1, 0.2], right=True, percent=True)
    root = picture(render(Chart("Lengths", [line], heat=heat, y2=Axis("cut", percent=True, lo=0.0, hi=1.0))))
    assert len([r for r in root.iter(f"{SVG_NS}rect") if r.get("fill") != "#ffffff"]) == 3  # 0 is not drawn


def test_many_x_positions_share_at_most_max_hover_bands():
    x = np.arange(5000)
    body = render(line_chart(series=[Series("v", x, np.sin(x / 100.0))]))
    assert 300 <= len(hovers(body)) <= 400
    assert len(picture(body).findall(f".//{SVG_NS}circle")) == 0  # too many points for markers


def test_time_axis_shows_utc_dates():
    t0 = 1_764_000_000.0  # 2025-11-24
    chart = Chart(
        "loss", [Series("loss", [t0, t0 + 3600, t0 + 7200], [1, 2, 3])], x=Axis("wall time", time=True)
    )
    labels = texts(picture(render(chart)))
    assert any(re.fullmatch(r"\d\d-\d\d \d\d:\d\d|\d\d:\d\d", label) for label in labels), labels


@pytest.mark.parametrize(
    ("lo", "hi", "axis", "expected"),
    [
        (0.0, 1.0, Axis(), ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]),
        (0.0, 0.1, Axis(), ["0", "0.02", "0.04", "0.06", "0.08", "0.10"]),
        (0.0, 12500.0, Axis(), ["0", "2.5k", "5k", "7.5k", "10k", "12.5k"]),
        (-1.0, 1.0, Axis(), ["-1.0", "-0.5", "0", "0.5", "1.0"]),
        (0.0, 0.5, Axis(percent=True), ["0%", "10%", "20%", "30%", "40%", "50%"]),
        (4.0, 6.0, Axis(integer=True), ["4", "5", "6"]),  # steps: never 4.5
    ],
)
def test_ticks_are_round_and_readable(lo, hi, axis, expected):
    assert [label for _, label in ticks(Scale(lo, hi, 0, 100), axis)] == expected


def test_tick_helpers():
    assert nice_step(1.0, 5) == 0.2 and nice_step(12500, 5) == 2500
    assert format_number(0.25, percent=True, step=0.25) == "25%"
    assert format_number(1e-5) == "1e-05" and format_number(math.nan) == "n/a"
    log = Scale.fit(np.array([1.0, 1000.0]), Axis(log=True), 100, 0)
    assert [label for _, label in ticks(log, Axis(log=True))] == ["1", "10", "100", "1000"]
    assert math.isnan(log.to(-1.0))  # a log axis cannot show it: a gap


def test_svg_is_a_standalone_document():
    doc = svg(line_chart())
    assert doc.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    ET.fromstring(doc)


def test_the_chart_modules_are_pure():
    """No Streamlit in the SVG charts and their builders; no Plotly in the drawing itself."""
    code = (
        "import sys; import rl_board.ui.svg_charts; print('plotly' in sys.modules); "
        "import rl_board.ui.svg_figures, rl_board.ui.svg_metric_figures; print('streamlit' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_linked_chart_makes_each_step_band_a_link_and_escapes_the_address():
    chart = Chart(
        "Reward",
        [Series("reward", [0, 1, 2], [0.1, 0.2, 0.3])],
        link=lambda x: f'steps?step={int(x)}&run="><script>',
    )
    out = render(chart)
    links = re.findall(r'<a href="([^"]*)" target="_self" title="([^"]*)"', out)
    assert [html.unescape(h) for h, _ in links] == [f'steps?step={k}&run="><script>' for k in range(3)]
    assert all(t.startswith("step ") for _, t in links)
    assert "<script>" not in out
    assert "<a " not in render(Chart("Reward", [Series("reward", [0, 1, 2], [0.1, 0.2, 0.3])]))
