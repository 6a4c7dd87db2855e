"""Click benchmark: what a user waits for, in a real browser, from a click to the page settled.

    python benchmarks/clicks.py                      # bundled samples, then a ~1 GB run
    python benchmarks/clicks.py --size 200MB         # a quicker large run
    python benchmarks/clicks.py --only samples       # just the bundled samples
    python benchmarks/clicks.py --work /tmp/clicks   # keep the generated runs and cache for the next time
    python benchmarks/clicks.py --repeat 5
    python benchmarks/clicks.py --only agent         # an agent run: 10,000 trajectories of ~20 turns

Starts `rl-board serve` (a subprocess on a free port, its own cache folder) and
drives Debian's chromium (/usr/bin/chromium, never a downloaded browser)
through Playwright. Two logs roots are served in turn:

  samples  a copy of rollout_samples/ (ppo_math, grpo_math, eval_math) plus a
           TensorBoard run with 150 tags (tests/helpers/metric_fixtures.py)
  big      ppo_math of about --size (`rl-board demo` as benchmarks/load.py
           writes it: 4 ranks, 256 samples per step, ~600 tokens each), a GRPO
           demo run whose longest answer per step is 8,000 tokens, and the same
           150-tag TensorBoard run
  agent    an agent run of --trajectories trajectories (20 steps, about 20
           turns each, tool calls that fail, token spans per turn; written by
           rl_board/rollouts/demo_agent.py) and a small PPO run to switch from

Charts are SVG pictures by default (no Plotly script to load); the clicks on a chart's point open
their page with ``interactive_charts=1`` (Plotly charts), as a user switches "Interactive charts" on.

Each click is timed from the click (or the Enter, or the address typed into a
new tab) until the app's script run it caused has finished (counted on the
WebSocket), no "running" indicator, stale element or skeleton is left, every
chart has drawn, and the element the click should show is visible (skeletons
in collapsed expanders, which nobody sees, are not waited for). Before the
first repetition the page is brought to where the click starts by a deep link,
before later ones by going back inside the app (not timed): the first click
in a tab also evaluates the scripts of element kinds the tab had not shown
yet, so the range's top is usually the first repetition. Each repetition opens
another sample (the same one again would come from the browser's message
cache). Every run is opened once before timing, so the 1 GB run's first parse
(seconds, once per cache) is not in the table.

Besides the wall time, the table gives the CPU time the server process and the
browser's processes spent on the click (medians; wall time moves with whatever
else runs on the machine, CPU time much less; for a new tab it is rough, as
Chromium may hand the tab a renderer process it started earlier), and what the
server sent (KB over the WebSocket, ForwardMsg messages). Targets (issue
"Speed, round two"): every click < 1 s, the sample page with an 8k-token
answer < 1.5 s, a fresh tab on a deep link < 2 s. Nothing is asserted: it
prints numbers. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.load import MB, make_run, parse_size  # noqa: E402  (the 1 GB run, written as load.py writes it)
from tests.helpers.streamlit_browser import (  # noqa: E402  (the tests' server and render waits)
    CHROMIUM,
    CHROMIUM_ARGS,
    StreamlitRuns,
    free_port,
    stop_streamlit,
)

TAGS_RUN = "many_tags"
GRPO_LONG = 8000
CLICK, SAMPLE_8K, FRESH_TAB = 1.0, 1.5, 2.0  # targets, seconds


# -- the logs roots -------------------------------------------------------------


def _tags_run(root: Path) -> None:
    from tests.helpers.metric_fixtures import write_many_tags_run

    folder = root / TAGS_RUN
    if not folder.exists():
        folder.mkdir(parents=True)
        write_many_tags_run(folder, groups=15, per_group=10, steps=300)


def samples_root(work: Path) -> Path:
    root = work / "samples"
    if not root.exists():
        shutil.copytree(REPO / "rollout_samples", root)
    _tags_run(root)
    return root


AGENT_RUN, AGENT_STEPS, AGENT_TURNS = "agent", 20, 24  # a turn limit of 24: about 20 turns on average


def agent_root(work: Path, trajectories: int) -> Path:
    from rl_board.rollouts.demo import DemoSpec, write_run
    from rl_board.rollouts.demo_agent import AgentSpec, write_agent_run

    root = work / f"agent_{trajectories}"
    if not (root / AGENT_RUN / "rollout_data_rank_0.jsonl").exists():
        spec = AgentSpec(
            steps=AGENT_STEPS,
            trajectories=max(1, trajectories // AGENT_STEPS),
            turns=AGENT_TURNS,
            ranks=4,
            seed=1,
        )
        write_agent_run(root / AGENT_RUN, spec)
        write_run(root / "ppo_small", DemoSpec(steps=10, samples=16))
    return root


def big_root(work: Path, size: int) -> Path:
    from rl_board.rollouts.demo_grpo import GrpoSpec, write_grpo_run

    root = make_run(size, work).parent  # work/run_<N>MB/ppo_math
    grpo = root / "grpo_long"
    if not (grpo / "rollout_data_rank_0.jsonl").exists():
        write_grpo_run(grpo, GrpoSpec(steps=20, prompts=8, group_size=8, tokens=400, long_tokens=GRPO_LONG))
    _tags_run(root)
    return root


# -- the server and the browser ---------------------------------------------------

# A chart on the page: an SVG picture (the default) or, with "Interactive charts" on, a Plotly chart.
CHART = '.rlb-chart, [data-testid="stPlotlyChart"]'
INTERACTIVE = "interactive_charts=1"  # in a link: Plotly charts, whose points can be clicked

# What the user can see is settled: connected, no script running, no "running" indicator, and no
# stale element, skeleton, undrawn chart or SVG chart picture not yet decoded on screen. (The tests'
# wait_for_app_idle also waits for skeletons inside collapsed expanders, which nobody sees and which can
# stay for seconds.)
SETTLED = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const seen = sel => [...document.querySelectorAll(sel)].filter(e => e.checkVisibility());
  return app && app.dataset.testConnectionState === 'CONNECTED'
    && app.dataset.testScriptState === 'notRunning'
    && !document.querySelector('[data-testid="stStatusWidget"]')
    && !seen('[data-stale="true"]').length && !seen('[data-testid="stSkeleton"]').length
    && seen('[data-testid="stPlotlyChart"]').every(c => c.querySelector('.main-svg'))
    && seen('.rlb-chart img').every(i => i.complete && i.naturalWidth > 0);
}"""


def wait_settled(page, timeout_ms: float = 120_000) -> None:
    page.wait_for_function(SETTLED, timeout=timeout_ms, polling="raf")


class Server:
    """`rl-board serve ROOT` on a free loopback port; output to a log file; stopped by its PID."""

    def __init__(self, root: Path, cache: Path, log: Path, cwd: Path = REPO) -> None:
        """``cwd``: the checkout whose rl_board runs (``python -m`` imports from the working folder)."""
        import urllib.request

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # the server's token, in its environment (a checkout from before tokens ignores it); a tab brings it
        self.token = secrets.token_urlsafe(16)
        cmd = [
            sys.executable,
            "-m",
            "rl_board",
            "serve",
            str(root),
            "--port",
            str(self.port),
            "--cache-dir",
            str(cache),
        ]
        with open(log, "w") as out:
            env = {**os.environ, "RL_BOARD_TOKEN": self.token}
            self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"rl-board serve exited:\n{log.read_text()}")
            try:
                with opener.open(self.url + "/_stcore/health", timeout=2) as r:
                    if r.read() == b"ok":
                        return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"no health OK in 60 s:\n{log.read_text()}")

    def stop(self) -> None:
        stop_streamlit(self.proc)


class Traffic(StreamlitRuns):
    """Finished script runs (the tests' counter) plus the bytes and messages the server sent."""

    POLL_MS = 10  # finer than the tests': a click's time is read off this loop

    def settle(self, timeout_ms: float) -> None:
        wait_settled(self.page, timeout_ms)

    def __init__(self, page) -> None:
        self.bytes = self.messages = 0
        super().__init__(page)

    def _on_frame(self, payload, socket: int = 0) -> None:
        if not isinstance(payload, str):
            self.bytes += len(payload)
            self.messages += 1
        super()._on_frame(payload, socket)


@dataclass
class Tab:
    page: object
    runs: Traffic
    url: str
    cpu: Cpu
    token: str = ""

    def go(self, path: str) -> None:
        self.runs.goto(self.url + path, timeout_ms=120_000)

    def main(self):
        return self.page.get_by_test_id("stMain")


def new_tab(browser, server: Server) -> Tab:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    context.request.get(f"{server.url}/?token={server.token}")  # let in: the cookie stays in the context
    page = context.new_page()
    return Tab(page, Traffic(page), server.url, Cpu(server.proc.pid), server.token)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


class Cpu:
    """CPU time the server and the browser spend on a click: unlike wall time, barely moved by other load."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid

    def now(self) -> tuple[float, float]:
        server = {self.server_pid, *_descendants(self.server_pid)}
        browser = [p for p in _descendants(os.getpid()) if p not in server]
        return _cpu_seconds(self.server_pid), sum(_cpu_seconds(p) for p in browser)


@dataclass
class Click:
    seconds: float
    kb: float
    messages: int
    server_cpu: float
    browser_cpu: float


def timed(tab: Tab, act: Callable[[], None], shows: Callable[[], object]) -> Click:
    """From ``act`` until its script run finished, the page is settled and ``shows()`` is visible."""
    target = tab.runs.completed + 1
    b0, m0 = tab.runs.bytes, tab.runs.messages
    s0, c0 = tab.cpu.now()
    t0 = time.perf_counter()
    act()
    tab.runs.wait_for_runs(target, timeout_ms=120_000)
    shows().wait_for(state="visible", timeout=120_000)
    wait_settled(tab.page)
    seconds = time.perf_counter() - t0
    s1, c1 = tab.cpu.now()
    return Click(seconds, (tab.runs.bytes - b0) / 1024, tab.runs.messages - m0, s1 - s0, c1 - c0)


def _choose(
    tab: Tab, label: str, typed: str, option: re.Pattern | None = None, scope=None
) -> Callable[[], None]:
    """Open the selectbox ``label`` and type (not timed); the returned action clicks the option
    (``option``, else the one named exactly as typed)."""
    box = (scope or tab.page).get_by_role("combobox", name=label)
    box.click()
    box.fill(typed)
    choice = tab.page.get_by_role("option", name=option or typed, exact=option is None).first
    choice.wait_for(state="visible")
    return choice.click


def _row(tab: Tab, row: int) -> Callable[[], None]:
    """Clicking row ``row`` of the page's first table (a canvas: its selection marker, left of the row)."""
    grid = tab.main().get_by_test_id("stDataFrameResizable").first
    grid.scroll_into_view_if_needed()
    grid.locator('[data-testid="glide-cell-1-0"]').wait_for(state="attached")
    box = grid.bounding_box()
    return lambda: tab.page.mouse.click(box["x"] + 18, box["y"] + 35 * (row + 1) + 17)


def _row_of(tab: Tab, row: int, table: int) -> Callable[[], None]:
    """Clicking row ``row`` of the page's ``table``-th table."""
    grid = tab.main().get_by_test_id("stDataFrameResizable").nth(table)
    grid.scroll_into_view_if_needed()
    grid.locator('[data-testid="glide-cell-1-0"]').wait_for(state="attached")
    box = grid.bounding_box()
    return lambda: tab.page.mouse.click(box["x"] + 18, box["y"] + 35 * (row + 1) + 17)


def _nav(tab: Tab, title: str) -> Callable[[], None]:
    return lambda: tab.page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()


def metrics_click(browser, root: Path, log: Path, cwd: Path = REPO, shot: Path | None = None) -> float:
    """Seconds from the click on "Metrics" to the first run's first chart, on a new server over ``root``
    with an empty cache (the tab first opens the Overview, which reads none of the metrics)."""
    cache = Path(tempfile.mkdtemp(prefix="rlb-metrics-click-"))
    server = Server(root, cache, log, cwd=cwd)
    try:
        tab = new_tab(browser, server)
        tab.go("/")
        main = tab.main()
        click = timed(tab, _nav(tab, "Metrics"), lambda: main.locator(CHART).first)
        if shot is not None:
            tab.page.screenshot(path=str(shot), full_page=False)
        tab.page.context.close()
        return click.seconds
    finally:
        server.stop()
        shutil.rmtree(cache, ignore_errors=True)


# -- the clicks -----------------------------------------------------------------------


@dataclass
class Runs:
    """What the clicks open in a root: the PPO run, a GRPO run and its longest sample."""

    ppo: str
    grpo: str
    step: int  # a middle step of the PPO run
    grpo_step: int
    long_sample: int
    long_tokens: int
    short_sample: int = 3


def find_runs(root: Path, cache: Path) -> Runs:
    from rl_board.rollouts.store import RolloutStore

    grpo_name = "grpo_long" if (root / "grpo_long").exists() else "grpo_math"
    ppo = RolloutStore.open(root / "ppo_math", cache_dir=cache)
    grpo = RolloutStore.open(root / grpo_name, cache_dir=cache)
    grpo_step = grpo.steps[-1]
    lengths = grpo.samples(step=grpo_step, columns=["n_tokens"])["n_tokens"]
    return Runs(
        "ppo_math",
        grpo_name,
        ppo.steps[len(ppo.steps) // 2],
        grpo_step,
        int(lengths.idxmax()),
        int(lengths.max()),
    )


def clicks(r: Runs) -> list[tuple[str, float, Callable[[Tab, int], Click]]]:
    """(name, target s, measure(tab, repetition) -> Click), in the order a user goes.

    The first repetition starts from a deep link (a new document: the click also pays for loading
    the scripts of element kinds the page had not shown yet); later ones go back inside the app
    (the sidebar's page links, another run), as a user clicking around one tab does.
    """
    main = lambda tab: tab.main()  # noqa: E731

    def start(tab: Tab, k: int, link: str, back: str | None = None) -> None:
        if k == 0:
            tab.go(link)
        elif back is not None:
            timed(tab, _nav(tab, back), lambda: main(tab))

    def choose_run(tab: Tab, k: int):
        if k == 0:
            tab.go("/")
        else:  # from another run's Overview
            sidebar = tab.page.get_by_test_id("stSidebar")
            timed(
                tab, _choose(tab, "Run", r.grpo, re.compile(f"^{r.grpo} "), scope=sidebar), lambda: main(tab)
            )
        act = _choose(tab, "Run", r.ppo, re.compile(f"^{r.ppo} "), scope=tab.page.get_by_test_id("stSidebar"))
        return timed(tab, act, lambda: main(tab).get_by_text("Reward per step"))

    def curve_point(tab: Tab, k: int):
        start(tab, k, f"/?run={r.ppo}&{INTERACTIVE}", "Overview")
        points = main(tab).get_by_test_id("stPlotlyChart").first.locator(".scatterlayer .trace .points path")
        points.first.wait_for(state="attached")
        n = points.count()
        point = points.nth(min(n - 1, (k + 1) * n // 5))
        return timed(
            tab,
            lambda: point.click(force=True),
            lambda: main(tab).get_by_test_id("stDataFrameResizable").first,
        )

    def sort_column(tab: Tab, k: int):
        start(tab, k, f"/steps?run={r.ppo}&step={r.step}")
        label = ("KL (k3, mean)", "reward", "length (tokens)")[k % 3]
        act = _choose(tab, "Sort by", label)
        return timed(tab, act, lambda: main(tab).get_by_test_id("stDataFrameResizable").first)

    def row_to_sample(run: str, step: int, sort: str, *, longest: bool = False):
        """Another sample each time (the same one again would come from the browser's message cache):
        the next row, or for the longest answer the previous step's."""

        def measure(tab: Tab, k: int):
            start(tab, k, f"/steps?run={run}&step={step}&sort={sort}&descending=1", "Step browser")
            if longest and k:
                timed(tab, main(tab).get_by_role("button", name="◀ Prev").click, lambda: main(tab))
            return timed(tab, _row(tab, 0 if longest else k), lambda: main(tab).locator(".rlb-chip").first)

        return measure

    def colour_metric(run: str, step: int, sample: int):
        def measure(tab: Tab, k: int):
            start(tab, k, f"/sample?run={run}&step={step}&sample={sample}")
            others = (
                main(tab).get_by_role("radiogroup", name="Colour tokens by").locator('[aria-checked="false"]')
            )
            others.first.wait_for(state="visible")
            button = others.nth(k % others.count())
            return timed(tab, button.click, lambda: main(tab).locator(".rlb-chip").first)

        return measure

    def search_all(tab: Tab, k: int):
        start(tab, k, f"/steps?run={r.ppo}&step={r.step}&all_steps=1")
        box = main(tab).get_by_role("textbox", name="Search prompt, response and ground truth")
        box.fill(("Great", "answer", "wonderful")[k % 3])
        return timed(tab, lambda: box.press("Enter"), lambda: main(tab).get_by_text("in all steps match"))

    def page_click(run: str | None, title: str, shows: Callable[[Tab], object], extra: str = ""):
        def measure(tab: Tab, k: int):
            start(tab, k, f"/?run={run}{extra}" if run else f"/?{extra.lstrip('&')}", "Overview")
            return timed(tab, _nav(tab, title), lambda: shows(tab))

        return measure

    def group_row(tab: Tab, k: int):
        start(tab, k, f"/groups?run={r.grpo}&step={r.grpo_step}")
        return timed(tab, _row(tab, k), lambda: main(tab).get_by_text("Word diff"))

    def prompt_row(tab: Tab, k: int):
        start(tab, k, f"/prompts?run={r.grpo}")
        return timed(tab, _row(tab, k), lambda: main(tab).get_by_text("This prompt over training"))

    def fresh_tab(run: str, step: int, sample: int):
        """A new tab of the same browser (its HTTP cache holds the app's scripts, as a user's browser
        does)."""

        def measure(tab: Tab, k: int):
            page = tab.page.context.new_page()
            fresh = Tab(page, Traffic(page), tab.url, tab.cpu)
            try:
                return timed(
                    fresh,
                    lambda: page.goto(f"{tab.url}/sample?run={run}&step={step}&sample={sample}"),
                    lambda: fresh.main().locator(".rlb-chip").first,
                )
            finally:
                page.close()

        return measure

    long = f"{r.long_tokens}-token"
    chart = lambda tab: main(tab).locator(CHART).first  # noqa: E731
    table = lambda tab: main(tab).get_by_test_id("stDataFrameResizable").first  # noqa: E731
    return [
        *fresh_tabs(r),
        ("choose run → Overview", CLICK, choose_run),
        ("curve point → step browser", CLICK, curve_point),
        ("sort a column", CLICK, sort_column),
        ("row → sample (short)", CLICK, row_to_sample(r.ppo, r.step, "kl_mean")),
        (f"row → sample ({long})", SAMPLE_8K, row_to_sample(r.grpo, r.grpo_step, "n_tokens", longest=True)),
        ("colour metric (short sample)", CLICK, colour_metric(r.ppo, r.step, r.short_sample)),
        (f"colour metric ({long})", SAMPLE_8K, colour_metric(r.grpo, r.grpo_step, r.long_sample)),
        ("search all steps", CLICK, search_all),
        ("Metrics page (150 tags)", CLICK, page_click(None, "Metrics", chart, f"&metric_runs={TAGS_RUN}")),
        ("Health page", CLICK, page_click(r.ppo, "Health", lambda tab: main(tab).get_by_text("Rules check"))),
        ("Groups page", CLICK, page_click(r.grpo, "Groups", table)),
        ("group row → best and worst", CLICK, group_row),
        ("Prompts page", CLICK, page_click(r.grpo, "Prompts", table)),
        ("prompt row → history", CLICK, prompt_row),
        ("fresh tab, deep link to a sample", FRESH_TAB, fresh_tab(r.ppo, r.step, r.short_sample)),
        (f"fresh tab, deep link ({long})", FRESH_TAB, fresh_tab(r.grpo, r.grpo_step, r.long_sample)),
    ]


def fresh_page(kind: str, link: str, shows: Callable[[Tab], object]) -> Callable[[Tab, int], Click]:
    """A deep link typed into a new tab, timed from the address to the page settled. ``kind``:

    - ``"tab"``: a new tab of the same browser (context): its HTTP cache already holds the app's scripts
      (Streamlit serves its hashed bundles ``Cache-Control: public, immutable, max-age=31536000``), as
      in the browser of a user who has opened the dashboard before;
    - ``"context"``: a new browser context, whose HTTP cache is empty: every script comes over the
      network (a first visit; letting the context in with the token is not timed).
    """

    def measure(tab: Tab, k: int) -> Click:
        browser = tab.page.context.browser
        context = tab.page.context
        if kind == "context":
            context = browser.new_context(viewport={"width": 1440, "height": 1000})
            context.request.get(f"{tab.url}/?token={tab.token}")
        page = context.new_page()
        fresh = Tab(page, Traffic(page), tab.url, tab.cpu, tab.token)
        try:
            return timed(fresh, lambda: page.goto(tab.url + link), lambda: shows(fresh))
        finally:
            page.close()
            if kind == "context":
                context.close()

    return measure


FRESH_KINDS = (("tab", "fresh tab"), ("context", "fresh context (empty cache)"))


def fresh_tabs(r: Runs) -> list[tuple[str, float, Callable[[Tab, int], Click]]]:
    """Every page opened from a deep link in a fresh tab of the same browser, then in a fresh context."""
    main = lambda tab: tab.main()  # noqa: E731
    chart = lambda tab: main(tab).locator(CHART).first  # noqa: E731
    table = lambda tab: main(tab).get_by_test_id("stDataFrameResizable").first  # noqa: E731
    shown = f'{CHART}, [data-testid="stDataFrameResizable"], [data-testid="stHeading"]'

    def anything(tab: Tab) -> object:
        return main(tab).locator(shown).first

    pages = [
        ("Overview", f"/?run={r.ppo}", lambda tab: main(tab).get_by_text("Reward per step")),
        ("Step browser", f"/steps?run={r.ppo}&step={r.step}", table),
        (
            "Sample",
            f"/sample?run={r.ppo}&step={r.step}&sample={r.short_sample}",
            lambda tab: main(tab).locator(".rlb-chip").first,
        ),
        ("Groups", f"/groups?run={r.grpo}&step={r.grpo_step}", table),
        ("Prompts", f"/prompts?run={r.grpo}", table),
        ("Patterns", f"/patterns?run={r.ppo}", anything),
        ("Metrics (150 tags)", f"/metrics?metric_runs={TAGS_RUN}", chart),
        ("Health", f"/health?run={r.ppo}", lambda tab: main(tab).get_by_text("Rules check")),
        ("SQL", f"/query?run={r.ppo}", lambda tab: main(tab).get_by_test_id("stTextArea").first),
    ]
    return [
        (f"{label}, deep link → {name}", FRESH_TAB, fresh_page(kind, link, shows))
        for kind, label in FRESH_KINDS
        for name, link, shows in pages
    ]


@dataclass
class AgentRuns:
    """What the agent clicks open: the agent run, a step, a sample with a failed call, another run."""

    run: str
    other: str
    step: int
    sample: int  # a trajectory of that step with a failed call


def find_agent_runs(root: Path, cache: Path) -> AgentRuns:
    from rl_board.rollouts.store import RolloutStore

    store = RolloutStore.open(root / AGENT_RUN, cache_dir=cache)
    RolloutStore.open(root / "ppo_small", cache_dir=cache)
    step = store.steps[len(store.steps) // 2]
    frame = store.samples(step=step, columns=["n_tool_errors", "turns"])
    sample = int(frame.loc[(frame["n_tool_errors"] > 0) & (frame["turns"] >= 18), "sample"].iloc[0])
    return AgentRuns(AGENT_RUN, "ppo_small", step, sample)


def agent_clicks(r: AgentRuns) -> list[tuple[str, float, Callable[[Tab, int], Click]]]:
    """The agent run's clicks, in the order a user goes (see ``clicks`` for how repetitions start)."""
    main = lambda tab: tab.main()  # noqa: E731
    table = lambda tab: main(tab).get_by_test_id("stDataFrameResizable").first  # noqa: E731

    def choose_run(tab: Tab, k: int):
        sidebar = tab.page.get_by_test_id("stSidebar")
        if k == 0:
            tab.go(f"/?run={r.other}")
        else:
            timed(
                tab,
                _choose(tab, "Run", r.other, re.compile(f"^{r.other} "), scope=sidebar),
                lambda: main(tab),
            )
        act = _choose(tab, "Run", r.run, re.compile(f"^{r.run} "), scope=sidebar)
        return timed(tab, act, lambda: main(tab).get_by_text("Why trajectories ended, per step"))

    def curve_point(tab: Tab, k: int):
        if k == 0:
            tab.go(f"/?run={r.run}&{INTERACTIVE}")
        else:
            timed(tab, _nav(tab, "Overview"), lambda: main(tab))
        points = main(tab).get_by_test_id("stPlotlyChart").first.locator(".scatterlayer .trace .points path")
        points.first.wait_for(state="attached")
        n = points.count()
        point = points.nth(min(n - 1, (k + 1) * n // 5))
        return timed(tab, lambda: point.click(force=True), lambda: table(tab))

    def filter_errors(tab: Tab, k: int):
        if k == 0:
            tab.go(f"/steps?run={r.run}&step={r.step}")
            main(tab).get_by_text("Filter and search").click()
        toggle = main(tab).get_by_text("Any tool error", exact=True)
        toggle.wait_for(state="visible")
        return timed(tab, toggle.click, lambda: table(tab))

    def row_to_sample(tab: Tab, k: int):
        if k == 0:
            tab.go(f"/steps?run={r.run}&step={r.step}&sort=turns&descending=1")
        else:
            timed(tab, _nav(tab, "Step browser"), lambda: table(tab))
        return timed(tab, _row(tab, k), lambda: main(tab).locator(".rlb-chip").first)

    def jump(tab: Tab, k: int):
        tab.go(f"/sample?run={r.run}&step={r.step}&sample={r.sample}" + (f"&turn={k}" if k else ""))
        button = main(tab).get_by_role(
            "button", name=("Next error ▶", "Next tool call ▶", "Highest-KL turn")[k % 3]
        )
        return timed(
            tab, button.click, lambda: main(tab).get_by_text(re.compile(r"^(Next tool|Highest KL)")).first
        )

    def tools_page(tab: Tab, k: int):
        if k == 0:
            tab.go(f"/?run={r.run}")
        else:
            timed(tab, _nav(tab, "Overview"), lambda: main(tab))
        return timed(tab, _nav(tab, "Tools"), lambda: main(tab).get_by_text("Calls per step, per tool"))

    def example_row(tab: Tab, k: int):
        if k == 0:
            tab.go(f"/tools?run={r.run}&step={r.step}")
        else:
            timed(tab, _nav(tab, "Tools"), lambda: main(tab))
        return timed(tab, _row_of(tab, k, 1), lambda: main(tab).locator(".rlb-chip").first)

    def fresh_tab(tab: Tab, k: int):
        page = tab.page.context.new_page()
        fresh = Tab(page, Traffic(page), tab.url, tab.cpu)
        try:
            link = f"{tab.url}/sample?run={r.run}&step={r.step}&sample={r.sample + k}"
            return timed(fresh, lambda: page.goto(link), lambda: fresh.main().locator(".rlb-chip").first)
        finally:
            page.close()

    def reference_row(tab: Tab, k: int):
        """The same click on the single-turn run beside it: what the machine gives today's sample page."""
        if k == 0:
            tab.go(f"/steps?run={r.other}&step=5")
        else:
            timed(tab, _nav(tab, "Step browser"), lambda: table(tab))
        return timed(tab, _row(tab, k), lambda: main(tab).locator(".rlb-chip").first)

    return [
        ("reference: row → single-turn sample (small PPO run)", CLICK, reference_row),
        ("choose run → Overview (trajectory curves)", CLICK, choose_run),
        ("curve point → step browser", CLICK, curve_point),
        ("filter: any tool error", CLICK, filter_errors),
        ("row → 20-turn sample", CLICK, row_to_sample),
        ("jump: next error / next call / highest KL", CLICK, jump),
        ("Tools page (first: every trajectory read)", CLICK, tools_page),
        ("tool example → its sample", CLICK, example_row),
        ("fresh tab, deep link to a 20-turn sample", FRESH_TAB, fresh_tab),
    ]


def measure_agent_root(
    label: str, root: Path, cache: Path, work: Path, repeat: int, browser, only: str | None
) -> list[str]:
    from rl_board.rollouts.store import RolloutStore

    runs = find_agent_runs(root, cache)  # also builds the cache, so no click pays a first parse
    store = RolloutStore.open(root / runs.run, cache_dir=cache)
    turns = store.samples(columns=["turns", "n_tool_calls"])
    mb = sum(p.stat().st_size for p in (root / runs.run).glob("*.jsonl")) / MB
    header = (
        f"## {label}: {store.num_samples} trajectories, {mb:.0f} MB of JSONL, turns mean "
        f"{turns['turns'].mean():.1f} (max {turns['turns'].max()}), {turns['n_tool_calls'].sum()} tool calls"
    )
    return _measure(
        label, root, cache, work, repeat, browser, only, header, (runs.run, runs.other), agent_clicks(runs)
    )


def measure_root(
    label: str, root: Path, cache: Path, work: Path, repeat: int, browser, only: str | None
) -> list[str]:
    runs = find_runs(root, cache)  # also builds the cache, so no click pays a first parse
    mb = sum(p.stat().st_size for p in (root / runs.ppo).glob("*.jsonl")) / MB
    header = (
        f"## {label}: {runs.ppo} {mb:.0f} MB of JSONL; {runs.grpo} longest answer {runs.long_tokens} tokens"
    )
    return _measure(
        label, root, cache, work, repeat, browser, only, header, (runs.ppo, runs.grpo), clicks(runs)
    )


def _measure(
    label: str,
    root: Path,
    cache: Path,
    work: Path,
    repeat: int,
    browser,
    only: str | None,
    header: str,
    open_first: tuple[str, ...],
    click_list: list,
) -> list[str]:
    server = Server(root, cache, work / f"serve-{label.split()[0]}.log")
    rows = [
        header,
        "",
        "| click | median s | range s | target s | | server CPU s | browser CPU s | KB sent | messages "
        "| load avg |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(rows), flush=True)
    try:
        tab = new_tab(browser, server)
        for run in open_first:  # open each run once (the server's store registry), not timed
            tab.go(f"/?run={run}")
        for name, target, measure in click_list:
            if only and not re.search(only, name):
                continue
            try:
                got = [measure(tab, k) for k in range(repeat)]
            except Exception as exc:  # a click that cannot be made is a row, not the end of the benchmark
                row = (
                    f"| {name} | failed: {type(exc).__name__}: {str(exc).splitlines()[0][:80]} "
                    f"| | {target:.1f} |"
                )
                tab = new_tab(browser, server)
            else:
                wall = [c.seconds for c in got]
                med = statistics.median(wall)
                row = (
                    f"| {name} | {med:.2f} | {min(wall):.2f}–{max(wall):.2f} | {target:.1f} "
                    f"| {'ok' if med < target else '**over**'} "
                    f"| {statistics.median(c.server_cpu for c in got):.2f} "
                    f"| {statistics.median(c.browser_cpu for c in got):.2f} "
                    f"| {statistics.median(c.kb for c in got):.0f} | {got[-1].messages} "
                    f"| {os.getloadavg()[0]:.1f} |"
                )
            rows.append(row)
            print(row, flush=True)
    finally:
        server.stop()
    return rows


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--size", type=parse_size, default=1024 * MB, help="size of the large run: 200MB, 1GB"
    )
    parser.add_argument("--repeat", type=int, default=3, help="times each click is measured (default 3)")
    parser.add_argument("--only", choices=["samples", "big", "agent"], help="measure one logs root")
    parser.add_argument("--trajectories", type=int, default=10_000, help="trajectories of the agent run")
    parser.add_argument("--clicks", default=None, help="a regex: measure only the clicks whose name matches")
    parser.add_argument(
        "--work", type=Path, default=None, help="scratch folder, kept (default: a temp dir, removed)"
    )
    ns = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"no chromium at {CHROMIUM}: apt-get install chromium", file=sys.stderr)
        return 2
    work = ns.work or Path(tempfile.mkdtemp(prefix="rl-board-clicks-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}")
    print(
        f"date: {time.strftime('%Y-%m-%d %H:%M')}; each click {ns.repeat} times; "
        f"load average {os.getloadavg()[0]:.1f}\n",
        flush=True,
    )
    from playwright.sync_api import sync_playwright

    try:
        roots = []
        if ns.only in (None, "samples"):
            roots.append(("bundled samples", samples_root(work)))
        if ns.only in (None, "big"):
            roots.append((f"large run (--size {ns.size // MB} MB)", big_root(work, ns.size)))
        if ns.only in (None, "agent"):
            roots.append((f"agent run ({ns.trajectories} trajectories)", agent_root(work, ns.trajectories)))
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for label, root in roots:
                measure = measure_agent_root if label.startswith("agent") else measure_root
                measure(label, root, work / "cache", work, ns.repeat, browser, ns.clicks)
                print(f"(load average after: {os.getloadavg()[0]:.1f})\n", flush=True)
            browser.close()
    finally:
        if ns.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
