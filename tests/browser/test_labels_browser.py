"""Failure patterns and labels in a real browser, on a server started as a user starts it (`rl-board serve
--labels FILE`): the Patterns page finds the planted template, a sample is tagged from the Sample page (a
suggestion clicked, a note typed), the step browser finds it by its tag, and rows ticked in the table are
tagged at once. The labels land in the file named with --labels. Screenshots of each view."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from rl_board.rollouts import planted
from rl_board.rollouts.labels import LabelStore
from rl_board.writer import RolloutWriter
from tests.helpers.screens import REPO, save_screenshot
from tests.helpers.streamlit_browser import StreamlitRuns, choose_option, free_port, stop_streamlit

pytestmark = pytest.mark.browser
STEPS, SAMPLES = 24, 32
SECOND = "Sure thing, the final answer here is {n} and you can trust me on {n} for certain, no doubt at all."
SECOND_STEPS = range(12, STEPS)
TOTAL = STEPS * SAMPLES + 3 * len(SECOND_STEPS)
NOTE = "opens with praise, then <b>any</b> number"
TOKEN = "labels-browser-token"  # the server's token (--token): each tab opens /?token=... once


def _params(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`rl-board serve ROOT --labels FILE` on a free port; yields (url, root, labels file, what was
    planted)."""
    root = tmp_path_factory.mktemp("patterns") / "logs"
    truth = planted.write(
        root / "planted", steps=STEPS, samples=SAMPLES, seed=7, template=0.45, loops=0.25, mixed=0.2, cut=0.1
    )
    with RolloutWriter(
        root / "planted", rank=1
    ) as writer:  # a second, smaller family (rank 1 sorts after rank 0)
        for step in SECOND_STEPS:
            for k in range(3):
                writer.write(step, f"extra {k}", SECOND.format(n=step * 10 + k), 0.3)
    logs = tmp_path_factory.mktemp("patterns-server")
    labels, port = logs / "team" / "labels.sqlite", free_port()
    with open(logs / "serve.log", "w") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rl_board",
                "serve",
                str(root),
                "--port",
                str(port),
                "--cache-dir",
                str(logs / "cache"),
                "--labels",
                str(labels),
                "--token",
                TOKEN,
            ],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url, opener, started = (
        f"http://127.0.0.1:{port}",
        urllib.request.build_opener(urllib.request.ProxyHandler({})),
        time.monotonic(),
    )
    while True:
        assert proc.poll() is None, (logs / "serve.log").read_text()
        try:
            with opener.open(url + "/_stcore/health", timeout=2) as reply:
                if reply.read() == b"ok":
                    break
        except OSError:
            pass
        assert time.monotonic() - started < 60, (logs / "serve.log").read_text()
        time.sleep(0.1)
    yield url, root, labels, truth
    stop_streamlit(proc)


@pytest.fixture
def tab(chromium_browser, served):
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    assert context.request.get(f"{served[0]}/?token={TOKEN}").ok  # the cookie, kept by the context
    page = context.new_page()
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    yield page, StreamlitRuns(page)
    context.close()


def _tick_rows(page, runs, rows: list[int]) -> None:
    """Tick rows of the step browser's table by their selection boxes (the grid is a canvas)."""
    grid = page.get_by_test_id("stMain").get_by_test_id("stDataFrameResizable").first
    grid.scroll_into_view_if_needed()
    expect(grid.locator('[data-testid="glide-cell-1-0"]')).to_be_attached()
    box = grid.bounding_box()
    for row in rows:
        with runs.expect_rerun():
            page.mouse.click(box["x"] + 18, box["y"] + 35 * (row + 1) + 17)


def test_patterns_then_a_label_found_again_by_its_tag(tab, served):
    page, runs = tab
    url, root, labels_file, truth = served
    main = page.get_by_test_id("stMain")

    # the Patterns page: the planted template is family T1, with all its answers
    runs.goto(f"{url}/patterns?run=planted")
    expect(main.get_by_text(f"T1 · {len(truth.template)} answers", exact=False)).to_be_visible()
    expect(main.get_by_text("Answers that loop, per step")).to_be_visible()
    save_screenshot(page, "patterns.png")
    with runs.expect_rerun():
        main.get_by_role(
            "button", name=f"All {len(truth.template)} answers of T1 in the step browser"
        ).click()
    page.wait_for_url(re.compile(r"/steps\?"))
    assert _params(page)["template"] == "1" and _params(page)["all_steps"] == "1"
    expect(
        main.get_by_text(f"{len(truth.template)} of {TOTAL} samples in all steps match the filters")
    ).to_be_visible()

    # the Sample page: a template answer tagged with a suggestion and a note
    step, sample = max(truth.template)
    runs.goto(f"{url}/sample?run=planted&step={step}&sample={sample}")
    panel = page.locator(".st-key-sample_labels")
    expect(panel.get_by_text("none yet")).to_be_visible()
    expect(panel.get_by_role("textbox", name="Tag", exact=True)).to_have_count(0)  # drawn only when asked for
    with runs.expect_rerun():
        panel.get_by_text("Add a label", exact=True).click()
    with runs.expect_rerun():
        panel.get_by_test_id("stButtonGroup").get_by_role("radio", name="reward hack").click()
    expect(panel.get_by_role("textbox", name="Tag", exact=True)).to_have_value("reward hack")
    panel.get_by_role("textbox", name="Note (optional)").fill(NOTE)
    with runs.expect_rerun():
        panel.get_by_role("button", name="Add label").click()
    expect(panel.get_by_text("Tagged 1 sample(s) “reward hack”.")).to_be_visible()
    expect(panel.get_by_text(NOTE)).to_be_visible()  # the note as text: its <b> is not bold markup
    [label] = LabelStore(labels_file).of_run(str(root / "planted"))  # in the file named with --labels
    assert (label.step, label.tag, label.note) == (step, "reward hack", NOTE)
    assert not list(root.rglob("*.sqlite"))  # nothing beside the logs
    panel.scroll_into_view_if_needed()
    save_screenshot(page, "labels.png")

    # the step browser finds it by its tag
    runs.goto(f"{url}/steps?run=planted&step=0")
    main.get_by_text("Filter and search").click()
    choose_option(
        page, runs, main.get_by_test_id("stSelectbox").filter(has_text="Tag"), "reward hack", typed="reward"
    )
    assert _params(page)["tag"] == "reward hack"
    expect(main.get_by_text("0 of ")).to_be_visible()  # not at step 0
    with runs.expect_rerun():
        main.get_by_test_id("stCheckbox").filter(has_text="All steps").locator("label").click()
    expect(main.get_by_text(f"1 of {TOTAL} samples in all steps match the filters")).to_be_visible()
    expect(page.locator('[data-testid="glide-cell-1-0"]')).to_have_text(str(step))
    expect(page.locator('[data-testid="glide-cell-2-0"]')).to_have_text(str(sample))
    expect(page.locator('[data-testid="glide-cell-3-0"]')).to_have_text("reward hack")  # the tags column
    assert page.dialogs == []


def test_ticked_rows_tagged_at_once(tab, served):
    page, runs = tab
    url, root, labels_file, truth = served
    main = page.get_by_test_id("stMain")
    step = 10  # five loops, and before the second family: SAMPLES answers
    loops = sorted(k for s, k in truth.loop if s == step)
    runs.goto(f"{url}/steps?run=planted&step={step}&repetition=0.5:&sort=sample")
    expect(
        main.get_by_text(f"{len(loops)} of {SAMPLES} samples in step {step} match the filters")
    ).to_be_visible()
    with runs.expect_rerun():
        main.get_by_test_id("stCheckbox").filter(has_text="Tag rows").locator("label").click()
    bar = page.locator(".st-key-rows_labels")
    expect(bar.get_by_text("tick rows in the table")).to_be_visible()
    _tick_rows(page, runs, [0, 1])
    expect(bar.get_by_text("2 selected")).to_be_visible()
    bar.get_by_role("textbox", name="Tag", exact=True).fill("loop")
    with runs.expect_rerun():
        bar.get_by_role("button", name="Tag 2 row(s)").click()
    expect(bar.get_by_text("Tagged 2 sample(s) “loop”.")).to_be_visible()
    tagged = sorted(x.line for x in LabelStore(labels_file).of_run(str(root / "planted")) if x.tag == "loop")
    assert len(tagged) == 2
    for row in (0, 1):  # the tags column (after step-less sample, the sorted column): filled on those rows
        expect(page.locator(f'[data-testid="glide-cell-2-{row}"]')).to_have_text("loop")
    save_screenshot(page, "labels-steps.png")
    # turned off, a click opens the sample again
    with runs.expect_rerun():
        main.get_by_test_id("stCheckbox").filter(has_text="Tag rows").locator("label").click()
    _tick_rows(page, runs, [0])
    page.wait_for_url(re.compile(r"/sample\?"))
    assert _params(page)["sample"] == str(loops[0])
    expect(
        page.locator(".st-key-sample_labels").locator("strong").get_by_text("loop", exact=True)
    ).to_be_visible()
