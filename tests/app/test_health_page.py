"""AppTest of the Health page: findings from metric and rollout runs, grouped by severity, with working
links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rl_board import config
from rl_board.rollouts.demo import DemoSpec, write_run
from tests.helpers.apptest import assert_clean, table, texts
from tests.helpers.metric_fixtures import write_tensorboard_run

APP = Path(__file__).resolve().parents[2] / "rl_board" / "ui" / "app.py"
HEALTH = "views/health.py"


def write_nan_run(folder: Path) -> None:
    folder.mkdir(parents=True)
    lines = []
    for step in range(3):
        for i in range(3):
            logprobs = [-1.0, float("nan") if (step, i) == (1, 2) else -1.0]
            lines.append(
                json.dumps(
                    {
                        "step": step,
                        "prompt": f"q{step}{i}",
                        "response": "a b",
                        "reward": float(i),
                        "response_tokens": ["a", "b"],
                        "logprobs": logprobs,
                        "ref_logprobs": [-1.1, -1.1],
                    }
                )
            )
    (folder / "rollouts.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def health_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("health-root")
    write_tensorboard_run(root / "tb" / "unstable", steps=40, unstable=True)
    write_run(root / "rollouts" / "ppo", DemoSpec(steps=30, samples=24, ranks=2, tokens=48, seed=0))
    write_nan_run(root / "rollouts" / "broken")
    return root


def open_health(root: Path, cache: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("RL_BOARD_ROOTS", str(root))
    config.reset()  # read the new environment, as a server started now would
    monkeypatch.setenv("RL_BOARD_CACHE_DIR", str(cache))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.switch_page(HEALTH)
    at.run()
    assert_clean(at)
    return at


@pytest.fixture
def health_page(health_root, tmp_path, monkeypatch):
    return lambda: open_health(health_root, tmp_path / "cache", monkeypatch)


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def follow(at: AppTest, label: str) -> AppTest:
    """Click a link button; the router switches page on the next run."""
    button(at, label).click().run()
    at.switch_page(_page_of(at)).run()  # AppTest keeps its own page sticky: move to where the app went
    assert_clean(at)
    return at


def _page_of(at: AppTest) -> str:
    goto = {"Step browser": "views/steps.py", "Sample": "views/sample.py", "Metrics": "views/metrics.py"}
    return goto[at.title[0].value]


def test_findings_from_metrics_and_rollouts_grouped_by_what_to_do(health_page):
    # since issue 33 findings come grouped by what to do, then the rest by severity (was: by severity only)
    at = health_page()
    headers = texts(at.subheader)
    assert headers[0].startswith("Training is diverging · ") and headers[1].startswith(
        "No learning signal · "
    )
    assert headers[2:] == [h for h in headers[2:] if h.startswith(("Error · ", "Warning · "))]
    text = " ".join(texts(at.markdown))
    for rule in ("non\\_finite", "value\\_loss\\_spike", "length\\_hacking", "nonfinite\\_tokens"):
        assert rule in text
    assert "early\\_entropy\\_collapse" in text  # the unstable run's entropy, 2 e^(-t/4)
    assert "`rollouts/ppo`" in text and "`tb/unstable`" in text
    assert any(c.startswith("Source: Cui et al") for c in texts(at.caption))  # the rule's source is cited
    counts = {m.label: m.value for m in at.metric}
    assert counts["Errors"] == "3"  # the NaN metric curve, the early entropy collapse and the NaN tokens


def test_rollout_link_opens_the_step_browser_at_the_step_pre_filtered(health_page):
    at = health_page()
    follow(at, "Open step 29")
    assert at.title[0].value == "Step browser"
    assert at.slider(key="w.step").value == 29
    assert at.query_params["run"] == ["rollouts/ppo"] or at.query_params["run"] == "rollouts/ppo"
    low = at.number_input(key="w.length.lo").value
    assert (
        low is not None
        and at.selectbox(key="w.sort").value == "reward"
        and at.toggle(key="w.descending").value
    )
    rows = table(at)
    assert len(rows) < 24 and (rows["n_tokens"] >= low).all()
    assert list(rows["reward"]) == sorted(rows["reward"], reverse=True)


def test_nan_token_link_opens_the_sample(health_page):
    at = health_page()
    assert any(b.label == "Open step 1" for b in at.button)
    follow(at, "Open sample 2")
    assert at.title[0].value == "Sample"
    assert any("Step 1 · sample 2" in t for t in texts(at.markdown))


def test_metric_finding_opens_the_metrics_page_on_its_tag(health_page):
    at = health_page()
    label = next(b.label for b in at.button if b.label.startswith("Show in Metrics"))
    follow(at, label)
    assert at.title[0].value == "Metrics"
    assert at.multiselect(key="w.metric_runs").value == ["tb/unstable"]
    assert at.text_input(key="w.metric_filter").value  # the finding's tag


def test_thresholds_are_shown_and_read_from_rl_board_toml(tmp_path, monkeypatch):
    root = tmp_path / "root"
    write_nan_run(root / "broken")
    (root / "rl-board.toml").write_text("[rules.nonfinite_tokens]\nseverity = 'info'\n[rules.nope]\nx = 1\n")
    at = open_health(root, tmp_path / "cache", monkeypatch)
    settings = next(f.value for f in at.dataframe if "thresholds" in f.value.columns)
    row = settings[settings["rule"] == "nonfinite_tokens"].iloc[0]
    assert row["severity"] == "info *" and row["checks"] == "rollouts"
    assert any("unknown rule 'nope'" in w for w in texts(at.warning))
    assert texts(at.subheader) == ["Info · 1"]
    assert any("rl-board check" in c.value for c in at.code)


def test_no_findings_is_said(tmp_path, monkeypatch):
    root = tmp_path / "root"
    write_tensorboard_run(root / "tb", steps=30)
    at = open_health(root, tmp_path / "cache", monkeypatch)
    assert any("No rule fired" in s.value for s in at.success)


def test_a_revisit_does_not_reopen_every_run(tmp_path, monkeypatch, serve):
    from rl_board.rollouts.store import RolloutStore

    root = tmp_path / "root"
    for k in range(6):
        write_run(root / f"run{k}", DemoSpec(steps=2, samples=3, ranks=1, tokens=4, seed=k))
    serve(root)
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.switch_page("views/health.py").run()
    assert_clean(at)
    looks = []
    real_stale = RolloutStore.stale
    monkeypatch.setattr(RolloutStore, "stale", lambda self: looks.append(self.run_dir) or real_stale(self))
    at.run()  # the same page again: the root's files did not change
    assert_clean(at)
    assert looks == []
