"""No name from the logs reaches a Markdown-rendered string unescaped, on any page (red-team finding).

Streamlit renders Markdown in captions, alerts, expander, tab and widget
labels, tooltips, progress text, metric labels and radio / pills options, and
an image there is fetched at once: a run folder named
``![I](https:/evil.example/run.png)`` made the browser call another host with
no click. This builds a served root whose run folders, file names and metric
tags are Markdown / HTML attacks, visits every page, walks every element the
page sent and checks that:

- no Markdown-rendered string holds an unescaped ``![``, ``](``, ``<img``,
  ``<a``, ``$`` or a backtick outside an inline code span;
- no string at all (plain select options, table cells, code, chart text)
  holds a raw bidi control character;
- chart text holds no raw ``<img`` and no ``&quot;``.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from google.protobuf.message import Message
from streamlit.testing.v1 import AppTest

from rl_board import config
from rl_board.metrics.reader import load_metrics
from rl_board.rollouts.demo import DemoSpec, write_run
from rl_board.rollouts.labels import LabelStore
from rl_board.rollouts.store import RolloutStore
from tests.helpers.apptest import APP, PAGES, assert_clean
from tests.helpers.metric_fixtures import write_di_engine_folder, write_tensorboard_run

RLO = "\u202e"
RUN_A = "![I](https:/evil.example/run.png)"  # the red team's repro: ROOT/<RUN_A>/r.jsonl
RUN_B = f"<img src=x onerror=alert(1)> `tick` $x$ [l](https:/evil.example/l) {RLO}evil"
FILE_B = f"![f](evil.png) <img src=f> [l](evil) `b` $y$ {RLO}"
TB_RUN = f"tb/![T](https:/evil.example/t.png) <img src=t> {RLO}evil"
TB_TAGS = [
    "![G](https:/evil.example/g.png)",
    "<img src=evil>",
    "`evil`",
    "$evil$",
    "[evil](https:/evil.example/x)",
    f"evil{RLO}/loss",
    'say "evil"',
]
JSONL_TAGS = ["![K](https:/evil.example/k.png)", "<img src=evilk>", "`evilk`", "$evilk$", f"evilk{RLO}"]
JSONL_RUN_DIR = "logs/![J](https:/evil.example/j.png)"
DI_RUN = f"di/![D](https:/evil.example/d.png) <img src=d> {RLO}"
AGENT_RUN = "agent ![A](https:/evil.example/a.png)"
TOOL = f"![T](https:/evil.example/tool.png) <img src=t> `t` $t$ {RLO}"

BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
CODE_SPAN = re.compile(r"(?<!\\)`[^`\n]*`")
UNESCAPED = re.compile(r"(?<!\\)(!\[|\]\(|<img|<a[\s>]|\$|`)", re.I)
MARKDOWN_FIELDS = {"body", "label", "help", "text", "caption", "captions", "content", "tooltip"}
MARKDOWN_OPTIONS = {"Radio", "ButtonGroup"}  # options rendered as Markdown (selectbox / multiselect: plain)


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile-names")
    write_run(root / RUN_A, DemoSpec(steps=3, samples=4, ranks=1, tokens=6, seed=1))
    run_b = root / RUN_B
    write_run(run_b, DemoSpec(steps=2, samples=2, ranks=1, tokens=6, seed=2))
    for path in run_b.glob("*.jsonl"):
        path.rename(run_b / f"{FILE_B}{path.name}")
    write_tensorboard_run(root / TB_RUN, steps=20, unstable=True, extra_tags=TB_TAGS)
    (root / JSONL_RUN_DIR).mkdir(parents=True)
    rows = [{"step": s, **{tag: float(s) for tag in JSONL_TAGS}} for s in range(5)]  # no time: no wall times
    (root / JSONL_RUN_DIR / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_di_engine_folder(root / DI_RUN)
    _write_agent_run(root / AGENT_RUN)
    return root


def _write_agent_run(run: Path) -> None:
    """Trajectories whose tool name, arguments and results are attacks (the Tools page names tools in
    labels)."""
    run.mkdir(parents=True)
    lines = []
    for step in (1, 2):
        for i in range(3):
            call = {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": TOOL, "arguments": json.dumps({"q": TOOL})},
            }
            messages = [
                {"role": "user", "content": f"task {i}"},
                {"role": "assistant", "content": "calling", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "name": TOOL, "content": f"Error: {TOOL}"},
                {"role": "assistant", "content": f"done {TOOL}"},
            ]
            lines.append({"step": step, "messages": messages, "reward": float(i), "finish_reason": "stop"})
    (run / "r.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.fixture(scope="module")
def metric_runs(hostile_root) -> list[str]:
    runs = [info.run for info in load_metrics(hostile_root).runs]
    assert len(runs) == 3, runs
    return runs


@pytest.fixture
def visit(hostile_root, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RL_BOARD_ROOTS", str(hostile_root))
    config.reset()  # read the new environment, as a server started now would
    monkeypatch.setenv("RL_BOARD_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))

    def _visit(page: str, run: str | None = None, **view: object) -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=60)
        if run is not None:
            at.query_params["run"] = run
        at.run()
        at.switch_page(PAGES.get(page, page))
        for name, value in view.items():
            at.session_state[f"view.{name}"] = value
        at.run()
        assert_clean(at)
        return at

    return _visit


# --------------------------------------------------------------------------- reading what a page sent


@dataclass
class Shown:
    """Every string a page sent, sorted by how the browser treats it."""

    markdown: list[tuple[str, str]] = field(default_factory=list)  # (element.field, text)
    plain: list[tuple[str, str]] = field(default_factory=list)
    chart: list[str] = field(default_factory=list)
    html: list[str] = field(default_factory=list)  # st.html bodies: sanitized HTML (SVG charts, heatmaps)


def _strings(msg: Message, path: str = "") -> Iterator[tuple[str, str]]:
    """(dotted field name, value) of every string in a proto, nested messages included."""
    for descriptor, value in msg.ListFields():
        name = f"{path}.{descriptor.name}" if path else descriptor.name
        items = value if not isinstance(value, (str, Message)) and hasattr(value, "__len__") else [value]
        for item in items:
            if isinstance(item, Message):
                yield from _strings(item, name)
            elif isinstance(item, str):
                yield name, item


def _json_strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)


def _nodes(node) -> Iterator:
    yield node
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _nodes(child)


def shown(at: AppTest) -> Shown:
    out = Shown()
    for top in (at.main, at.sidebar):
        for node in _nodes(top):
            kind = type(node).__name__
            if kind == "Dataframe":
                frame = node.value
                out.plain += [(f"{kind}.cell", str(v)) for v in [*frame.columns, *frame.to_numpy().ravel()]]
            proto = getattr(node, "proto", None)
            if proto is None:
                continue
            for name, text in _strings(proto):
                last = name.rsplit(".", 1)[-1]
                if last == "spec":  # a Plotly figure as JSON
                    out.chart += list(_json_strings(json.loads(text)))
                elif kind == "Html" and last == "body":  # HTML, not Markdown: names in it must be escaped
                    out.html.append(text)
                elif kind == "Text" and last == "body":  # st.text: shown as text, never read as Markdown
                    out.plain.append((f"{kind}.{name}", text))
                elif last in MARKDOWN_FIELDS or (last == "options" and kind in MARKDOWN_OPTIONS):
                    out.markdown.append((f"{kind}.{name}", text))
                else:
                    out.plain.append((f"{kind}.{name}", text))
    return out


def unescaped(text: str) -> list[str]:
    """Markup that would render: outside inline code spans, not preceded by a backslash."""
    return UNESCAPED.findall(CODE_SPAN.sub("", text))


def check(at: AppTest) -> Shown:
    page = shown(at)
    bad = [(where, text) for where, text in page.markdown if unescaped(text)]
    assert not bad, bad
    raw_bidi = [(where, text) for where, text in page.markdown + page.plain if BIDI.search(text)]
    raw_bidi += [("chart", text) for text in page.chart if BIDI.search(text)]
    assert not raw_bidi, raw_bidi
    chart = [text for text in page.chart if "<img" in text.lower() or "&quot;" in text]
    assert not chart, chart
    for body in page.html:
        check_html(body)
    return page


SVG_PICTURE = re.compile(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"')
# A step curve's own links: a page of this app and its query, percent-encoded (no scheme, no host, no path)
OWN_LINK = re.compile(r'<a href="[a-z_]+\?[A-Za-z0-9_.~%+=&;-]*" target="_self"')
MARKUP = re.compile(r"<img|<a[\s>]|<script|<iframe|<foreignObject", re.I)


def check_html(body: str) -> None:
    """An st.html body (an SVG chart, the token heatmap): no markup but the chart's own picture and its own
    step links (a name in a link's query percent-encoded), no raw bidi; the picture's SVG likewise (a name in
    it escaped)."""
    pictures = [base64.b64decode(data).decode("utf-8") for data in SVG_PICTURE.findall(body)]
    rest = OWN_LINK.sub("", SVG_PICTURE.sub("", body))
    assert not MARKUP.findall(rest), rest
    assert not BIDI.search(rest), rest
    for svg in pictures:
        assert not MARKUP.findall(svg), svg
        assert not BIDI.search(svg), svg


def markdown_with(page: Shown, *needles: str) -> list[str]:
    return [text for _, text in page.markdown if all(n in text for n in needles)]


# --------------------------------------------------------------------------- every page


def test_the_visits_below_cover_every_page():
    visited = {
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
    }
    assert set(PAGES) == visited


def test_overview_without_a_run_lists_the_hostile_runs_as_data(visit):
    page = check(visit("overview"))
    cells = [text for where, text in page.plain if where == "Dataframe.cell"]
    assert RUN_A in cells and any("⟨U+202E⟩evil" in c for c in cells)


def test_overview_compare_label_and_chart(visit):
    """The compare multiselect's label is Markdown: the current run's name is escaped in it."""
    page = check(visit("overview", RUN_B, compare=[RUN_A]))
    labels = markdown_with(page, "Compare ", "evil")
    assert labels and all("⟨U\\+202E⟩" in label for label in labels)
    # the other run is drawn (an SVG chart's legend and hover), escaped: check() found no markup in it
    assert any("![I](https:/evil.example/run.png)" in html.unescape(body) for body in page.html)


def test_overview_of_the_image_named_run(visit):
    page = check(visit("overview", RUN_A))
    assert markdown_with(page, "Compare \\!\\[I\\]\\(https\\:/evil\\.example/run\\.png\\) with")


@pytest.mark.parametrize("run", [RUN_A, RUN_B])
def test_step_browser(visit, run):
    check(visit("steps", run))


@pytest.mark.parametrize("run", [RUN_A, RUN_B])
def test_sample_view(visit, run):
    page = check(visit("sample", run))
    if run == RUN_B:  # the sample's source file is named in an expander label
        assert markdown_with(page, "source \\!\\[f\\]\\(evil\\.png\\)")


@pytest.mark.parametrize("run", [RUN_A, RUN_B])
def test_groups_prompts_and_same_prompts(visit, run):
    check(visit("groups", run))
    check(visit("prompts", run))
    check(visit("matchup", run, versus=run))


def test_agent_run_pages_with_a_hostile_tool(visit):
    """The tool's name is a label, an option and a chart's text on the Tools page, and a card on the Sample
    page."""
    page = check(visit("tools", AGENT_RUN))
    assert any("evil.example/tool.png" in text for _, text in page.markdown + page.plain)
    check(visit("sample", AGENT_RUN))
    check(visit("steps", AGENT_RUN))
    check(visit("overview", AGENT_RUN))


@pytest.mark.parametrize("run", [RUN_A, RUN_B])
def test_tools_and_patterns_pages(visit, run):
    check(visit("tools", run))
    check(visit("patterns", run))


def test_tags_and_notes_are_text_on_the_sample_page_and_in_the_step_browser(visit, hostile_root, tmp_path):
    """Tags and notes are the user's text: as hostile as a file name, shown the same way."""
    store = RolloutStore.open(hostile_root / RUN_B, cache_dir=tmp_path / "cache")
    labels = LabelStore(config.settings().labels)
    for tag in (RUN_A, FILE_B[:60]):
        labels.put(**store.label_key(step=0, index=0), tag=tag, note=RUN_B)
    page = check(visit("sample", RUN_B, step=0, sample=0))
    assert markdown_with(page, ":material/label:", "\\!\\[I\\]\\(https\\:/evil\\.example/run\\.png\\)")
    assert markdown_with(page, ":material/label:", "⟨U\\+202E⟩")  # the file name's bidi control, shown
    assert markdown_with(page, "\\<img src\\=x onerror\\=alert\\(1\\)\\>", "⟨U\\+202E⟩evil")  # the note
    page = check(visit("steps", RUN_B, step=0, tag=RUN_A))
    cells = [text for where, text in page.plain if where == "Dataframe.cell"]
    assert any(RUN_A in c and "⟨U+202E⟩" in c for c in cells)  # the tags cell: both tags, as text


@pytest.mark.parametrize("run", [RUN_A, RUN_B])
def test_sql_page(visit, run):
    """The default query's table shows the hostile file name; the schema tables and captions stay plain."""
    page = check(visit("views/query.py", run))
    if run == RUN_B:
        assert any("⟨U+202E⟩" in text for where, text in page.plain if where == "Dataframe.cell")


def test_metrics_page_every_group_open_on_the_wall_time_axis(visit, metric_runs):
    at = visit("metrics", **{"metric_runs": metric_runs, "metric_filter": "evil", "x_axis": "wall_time"})
    page = check(at)
    captions = markdown_with(page, "no wall times logged")
    assert len(captions) == len(JSONL_TAGS), captions  # one under each JSONL tag's chart, each escaped
    assert markdown_with(page, "\\!\\[K\\]\\(https\\:/evil\\.example/k\\.png\\)", "no wall times logged")
    assert markdown_with(page, "DI\\-engine — loggers, checkpoints, config and network", "\\!\\[D\\]")
    assert markdown_with(page, "hyperparameters", "\\!\\[T\\]")
    # an SVG chart's title: quotes escaped in the HTML (shown as quotes), never an attribute's end
    assert any(">say &quot;evil&quot;</div>" in body for body in page.html)


def test_metrics_page_default_view(visit, metric_runs):
    check(visit("metrics", **{"metric_runs": metric_runs}))


def test_metrics_page_filter_text_from_a_link_is_escaped(visit, metric_runs):
    link_text = "![Q](https:/evil.example/q.png)"
    page = check(visit("metrics", **{"metric_runs": metric_runs, "metric_filter": link_text}))
    assert markdown_with(page, "No tag contains")


def test_health_page(visit):
    page = check(visit("health"))
    assert markdown_with(page, "metric run", "evil")
