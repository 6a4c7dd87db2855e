"""Real-browser fixtures: demo runs, a real server on a free port, Debian's chromium.

The session's server is the app behind rl-board's Host and token checks (what `rl-board serve` runs), with a
known token; every tab (``app_page``) is let in as a user is, by opening ``/?token=...`` once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rl_board.rollouts.demo import DemoSpec, write_eval_run, write_run
from tests.helpers.apptest import APP
from tests.helpers.served import admit, start_app_with_token
from tests.helpers.streamlit_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    StreamlitRuns,
    stop_streamlit,
)

REPO = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items):
    if not Path(CHROMIUM).exists():
        skip = pytest.mark.skip(reason=f"no chromium at {CHROMIUM} (apt-get install chromium)")
        for item in items:
            if "browser" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def browser_root(tmp_path_factory) -> Path:
    """The same runs `rl-board demo` writes for rollout_samples/, plus one with hostile text."""
    root = tmp_path_factory.mktemp("browser") / "rollout_samples"
    write_run(root / "ppo_math", DemoSpec(steps=30, samples=24))
    write_eval_run(root / "eval_math")
    hostile = root / "hostile"
    hostile.mkdir()
    record = {
        "step": 0,
        "reward": 1.0,
        "prompt": "# Big heading\n[click](javascript:alert(1)) **bold**",
        "response": '<img src=x onerror="window.__xss=1"><script>window.__xss=1</script>',
        "response_tokens": [
            '<img src=x onerror="window.__xss=1">',
            "<script>",
            '" onmouseover="window.__xss=1',
        ],
        "logprobs": [-0.1, -0.2, -0.3],
        "ref_logprobs": [-0.2, -0.1, -0.3],
    }
    (hostile / "r.jsonl").write_text(json.dumps(record) + "\n")
    write_run(root / "growing", DemoSpec(steps=2, samples=4, ranks=1, tokens=8, seed=9))
    return root


@pytest.fixture(scope="session")
def server(browser_root, tmp_path_factory):
    logs = tmp_path_factory.mktemp("server")
    srv = start_app_with_token(
        logs / "streamlit.log",
        APP,
        cwd=REPO,
        env_extra={  # REPO: the project's config.toml
            "RL_BOARD_ROOTS": str(browser_root),
            "RL_BOARD_CACHE_DIR": str(logs / "cache"),
            "RL_BOARD_LABELS": str(logs / "labels.sqlite"),  # never the user's data folder
        },
    )
    yield srv
    stop_streamlit(srv.proc)


@pytest.fixture(scope="session")
def chromium_browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def app_page(chromium_browser, server, request):
    """A fresh tab (own context, let in with the server's token) that records any dialog a script might
    open."""
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    admit(context, server)
    pg = context.new_page()
    pg.dialogs = []  # any alert() means a script ran
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    yield pg
    context.close()
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        print(server.log_path.read_text()[-5000:])  # the server's side of a failure


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


@pytest.fixture
def runs(app_page) -> StreamlitRuns:
    return StreamlitRuns(app_page)
