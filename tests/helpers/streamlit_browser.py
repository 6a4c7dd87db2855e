"""Reference helpers for real-browser tests of a Streamlit app, verified on these machines.

Start/stop a real Streamlit server on a free loopback port, launch Debian's chromium
through Playwright, and wait until a page has really finished rendering. Adapt freely;
`shared/TESTING.md` beside the project (``../shared/TESTING.md`` from its root) says why each piece exists."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# urllib must not go through a proxy for loopback, whatever the environment says.
_NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    url: str
    log_path: Path
    startup_s: float

    @property
    def pid(self) -> int:
        return self.proc.pid


def start_streamlit(
    log_path: Path,
    app_file: Path,
    port: int | None = None,
    extra_args: list[str] | None = None,
    env_extra: dict[str, str] | None = None,
    timeout_s: float = 60.0,
    address: str | None = "127.0.0.1",
    gather_usage_stats: bool | None = False,
    cwd: Path | None = None,
) -> Server:
    """address=None / gather_usage_stats=None leave Streamlit's defaults (for checking them).

    ``cwd`` (default: the app's folder) is where Streamlit looks for ``.streamlit/config.toml``.
    """
    port = port or free_port()
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_file),
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.fileWatcherType",
        "none",
    ]
    if address is not None:
        cmd += ["--server.address", address]
    if gather_usage_stats is not None:
        cmd += ["--browser.gatherUsageStats", str(gather_usage_stats).lower()]
    cmd += extra_args or []
    env = {**os.environ, **(env_extra or {})}
    t0 = time.perf_counter()
    # Output goes to a file: an unread PIPE can fill up and block the server.
    with open(log_path, "w") as log:  # the child keeps its own handle
        proc = subprocess.Popen(
            cmd, cwd=cwd or app_file.parent, stdout=log, stderr=subprocess.STDOUT, env=env
        )
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url, log_path, timeout_s, t0)
    return Server(proc, port, url, log_path, time.perf_counter() - t0)


def wait_healthy(
    proc: subprocess.Popen, url: str, log_path: Path, timeout_s: float, t0: float | None = None
) -> None:
    """Until the server at ``url`` answers its health check; stopped, with its log, when it exits first or
    does not answer within ``timeout_s`` of ``t0`` (default: now)."""
    t0 = time.perf_counter() if t0 is None else t0
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early rc={proc.returncode}:\n{log_path.read_text()}")
        try:
            with _NO_PROXY_OPENER.open(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200 and r.read() == b"ok":
                    return
        except OSError:
            pass
        if time.perf_counter() - t0 > timeout_s:
            stop_streamlit(proc)
            raise TimeoutError(f"no health OK within {timeout_s}s:\n{log_path.read_text()}")
        time.sleep(0.05)


def stop_streamlit(proc: subprocess.Popen, timeout_s: float = 10.0) -> int:
    """Stop exactly the process we started (by its PID), SIGTERM then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout_s)
    return proc.returncode


APP_ROOT = '[data-testid="stApp"]'


def wait_for_app_idle(page, timeout_ms: float = 30_000) -> None:
    """Robust 'finished rendering' wait for a Streamlit page.

    1. websocket connected, 2. a script run has happened and is finished
    (data-test-script-state is 'initial' before the first run), 3. no
    'Running...' status widget, 4. no element still marked stale, 5. no
    stSkeleton placeholder left: elements whose JS chunk is lazy-loaded
    (dataframe, plotly, selectbox, ...) show a skeleton for up to ~3 s on a
    cold page AFTER the script run has finished, 6. every plotly chart has drawn, and every SVG chart's
    picture has loaded.
    """
    page.wait_for_selector(
        f'{APP_ROOT}[data-test-connection-state="CONNECTED"]', state="attached", timeout=timeout_ms
    )
    page.wait_for_selector(
        f'{APP_ROOT}[data-test-script-state="notRunning"]', state="attached", timeout=timeout_ms
    )
    page.wait_for_function(
        """() => !document.querySelector('[data-testid="stStatusWidget"]')
                 && !document.querySelector('[data-stale="true"]')
                 && !document.querySelector('[data-testid="stSkeleton"]')
                 && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
                      .every(c => c.querySelector('.main-svg'))
                 && [...document.querySelectorAll('.rlb-chart img')].every(i => i.complete)""",
        timeout=timeout_ms,
    )


class StreamlitRuns:
    """Counts finished script runs by decoding the app's WebSocket frames
    (each frame is one ForwardMsg protobuf; Streamlit ships the Python classes).

    Create it BEFORE page.goto() so the /_stcore/stream socket is seen.
    Why not watch data-test-script-state on [data-testid=stApp]? For a fast
    rerun React can batch 'running' and 'notRunning' into one commit, so the
    attribute never visibly changes (seen here: missed 2 of 80 fast reruns;
    this detector missed 0 of 80 - see check_wait_robustness.py)."""

    def __init__(self, page):
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._ForwardMsg = ForwardMsg
        self.page = page
        self.completed = 0  # runs that ran to the end (not those cut short by st.rerun)
        # Server-side run time (exec_time, microseconds -> ms) from PageProfile messages.
        # Streamlit only sends these when browser.gatherUsageStats is true.
        self.exec_ms: list[float] = []
        self.sockets = 0  # app sockets opened: one per page load
        self.runs_on_newest = 0  # runs finished on the newest socket (the page now shown)
        page.on("websocket", self._on_ws)

    def _on_ws(self, ws):
        if ws.url.endswith("/_stcore/stream"):
            self.sockets += 1
            self.runs_on_newest = 0
            number = self.sockets
            ws.on("framereceived", lambda payload: self._on_frame(payload, number))

    def _on_frame(self, payload, socket: int = 0):
        if isinstance(payload, str):
            return
        msg = self._ForwardMsg()
        msg.ParseFromString(payload)
        if msg.WhichOneof("type") == "page_profile":
            self.exec_ms.append(msg.page_profile.exec_time / 1000)
        if (
            msg.WhichOneof("type") == "script_finished"
            and msg.script_finished != self._ForwardMsg.FINISHED_EARLY_FOR_RERUN
        ):
            self.completed += 1
            if socket == self.sockets:
                self.runs_on_newest += 1

    POLL_MS = 20  # how often finished runs are counted (a benchmark may want finer)

    def wait_for_runs(self, count: int, timeout_ms: float = 30_000) -> None:
        deadline = time.monotonic() + timeout_ms / 1000
        while self.completed < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {self.completed} of {count} script runs finished")
            self.page.wait_for_timeout(self.POLL_MS)  # lets Playwright deliver the frame events
        self.settle(timeout_ms)

    def settle(self, timeout_ms: float) -> None:
        """After the runs finished: wait until the page shows their result."""
        wait_for_app_idle(self.page, timeout_ms)

    @contextmanager
    def expect_rerun(self, timeout_ms: float = 30_000):
        """with runs.expect_rerun(): page.get_by_role("button", name="Go").click()"""
        target = self.completed + 1
        yield
        self.wait_for_runs(target, timeout_ms)

    def goto(self, url: str, timeout_ms: float = 30_000) -> None:
        """Load ``url`` and wait for its first run on the page's own socket: a run of the page before it,
        whose frame is handed over late (events arrive while Playwright is called), does not count."""
        before = self.sockets
        self.page.goto(url)
        deadline = time.monotonic() + timeout_ms / 1000
        while self.sockets == before or self.runs_on_newest < 1:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish a script run in {timeout_ms / 1000:.0f} s")
            self.page.wait_for_timeout(self.POLL_MS)
        self.settle(timeout_ms)


def full_app_screenshot(page, path, max_height: int = 20_000) -> dict:
    """page.screenshot(full_page=True) alone only captures the viewport: Streamlit
    scrolls inside <main data-testid="stMain">, not the document. Grow the viewport
    to the content height, let the app re-layout, shoot, then restore."""
    vp = page.viewport_size
    h = page.evaluate(
        """() => { const m = document.querySelector('[data-testid="stMain"]');
                   return Math.max(m ? m.scrollHeight : 0, document.documentElement.scrollHeight); }"""
    )
    size = {"width": vp["width"], "height": min(int(h), max_height)}
    page.set_viewport_size(size)
    page.wait_for_timeout(300)  # resize -> charts/grids re-layout
    wait_for_app_idle(page)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(vp)
    return size


def choose_option(page, runs: StreamlitRuns, box, option, typed: str = "", attempts: int = 4) -> None:
    """Pick ``option`` (a name or a pattern) of the selectbox ``box``: its list opens on a click, and typing
    filters a long one. Tried again when the list does not show the option in time: under load (CI beside
    other work) a click or the first keys can land while the box is still being drawn. A failure says what the
    list offered, so it can be told from a slow list."""
    combobox, wanted = box.get_by_role("combobox"), page.get_by_role("option", name=option)
    offered: list[str] = []
    for attempt in range(attempts):
        expect(combobox).to_be_visible()
        combobox.click()
        if typed:
            expect(combobox).to_be_focused()
            page.keyboard.press("Control+A")
            page.keyboard.type(typed, delay=20)
        try:
            wanted.first.wait_for(state="visible", timeout=3000 + 3000 * attempt)
        except PlaywrightTimeout:
            offered = page.get_by_role("option").all_inner_texts()
            page.keyboard.press("Escape")
            continue
        target = runs.completed + 1
        try:  # the list can still close under the pointer (a redraw): then it is opened again
            wanted.first.click(timeout=5000)
        except PlaywrightTimeout:
            offered = ["(closed before the click)"]
            continue
        runs.wait_for_runs(target)
        return
    raise AssertionError(
        f"the selectbox never offered {option!r} in {attempts} tries; it last offered {offered}"
    )


def set_toggle(runs: StreamlitRuns, box, on: bool, attempts: int = 3) -> None:
    """Switch the toggle or checkbox ``box`` (its stCheckbox element) to ``on`` and wait for the rerun.

    A click that lands while the page is still settling (an expander opening around the box) can be lost:
    then the box is unchanged after a while and is clicked again; a click that took is never repeated."""
    box_input = box.locator("input")
    for _ in range(attempts):
        if box_input.is_checked() == on:
            raise AssertionError(f"the box is already {'on' if on else 'off'}")
        target = runs.completed + 1
        box.locator("label").click()
        try:
            expect(box_input).to_be_checked(checked=on, timeout=5000)
        except AssertionError:
            continue
        runs.wait_for_runs(target)
        return
    raise AssertionError(f"the box did not switch {'on' if on else 'off'} in {attempts} clicks")


def pick_radio(runs: StreamlitRuns, group, name: str, attempts: int = 3) -> None:
    """Choose option ``name`` of the radio group ``group`` and wait for the rerun; clicked again only when a
    click was lost while the page settled (an expander opening around it): choosing it twice changes
    nothing."""
    radio = group.get_by_role("radio", name=name)
    for _ in range(attempts):
        target = runs.completed + 1
        group.get_by_text(name).click()
        try:
            expect(radio).to_be_checked(timeout=5000)
        except AssertionError:
            continue
        runs.wait_for_runs(target)
        return
    raise AssertionError(f"the option {name!r} was not chosen in {attempts} clicks")
