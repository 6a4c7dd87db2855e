"""AppTest of the Health page on the trainers' own diagnostics (issue 33): findings grouped by what to do,
each citing its source, linking to its steps on the Metrics page and to the samples behind it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.app.test_health_page import button, follow, open_health
from tests.helpers.apptest import texts
from tests.helpers.health_runs import write_verl_clip_runs

STEPS = 40


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """verl rollouts with metrics.jsonl beside them: one whose clip ratio reads 0 under a binding
    max_model_len, one whose entropy collapses early (its samples are fine)."""
    root = tmp_path_factory.mktemp("health-groups")
    runs = {r.name: r for r in write_verl_clip_runs(root)}
    for name in ("verl-batch-max",):
        for path in runs[name].folder.iterdir():
            path.unlink()
        runs[name].folder.rmdir()
    clean = runs["verl-clean"].folder / "metrics.jsonl"
    rows = [json.loads(line) for line in clean.read_text().splitlines()]
    for k, row in enumerate(rows):
        row["actor/entropy"] = 0.7 * (0.2 + 0.8 * float(np.exp(-k / 12)))
    clean.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_findings_are_grouped_by_what_to_do_and_cite_their_source(root, tmp_path, monkeypatch):
    at = open_health(root, tmp_path / "cache", monkeypatch)
    headers = texts(at.subheader)
    signal = next(k for k, h in enumerate(headers) if h == "No learning signal · 1")
    disagree = next(k for k, h in enumerate(headers) if h == "The logged numbers disagree with the data · 1")
    assert signal < disagree and all(h.startswith(("Error", "Warning")) for h in headers[disagree + 1 :])
    captions = texts(at.caption)
    assert any(c.startswith("Source: verl") and "7823" in c for c in captions)
    assert any(c.startswith("Source: Cui et al") for c in captions)
    text = " ".join(texts(at.markdown))
    assert "the trainer logged response\\_length/clip\\_ratio" in text and "7823" in text


def test_a_cross_check_opens_its_samples_and_the_trainers_curve(root, tmp_path, monkeypatch):
    at = open_health(root, tmp_path / "cache", monkeypatch)
    curve = button(at, "Show the trainer's curve")
    follow(at, curve.label)
    assert at.title[0].value == "Metrics"
    assert at.multiselect(key="w.metric_runs").value == ["verl-max-model-len/metrics.jsonl"]
    assert at.text_input(key="w.metric_filter").value == "response_length/clip_ratio"

    at = open_health(root, tmp_path / "cache2", monkeypatch)
    label = next(b.label for b in at.button if b.label.startswith("Open step "))
    follow(at, label)
    assert at.title[0].value == "Step browser"
    assert at.slider(key="w.step").value == int(label.split()[-1])


def test_a_metric_finding_opens_the_samples_of_its_step(root, tmp_path, monkeypatch):
    at = open_health(root, tmp_path / "cache", monkeypatch)
    label = next(b.label for b in at.button if b.label.startswith("Samples at step "))
    step = int(label.split()[-1])
    follow(at, label)
    assert at.title[0].value == "Step browser"
    assert at.slider(key="w.step").value == step
    run = at.query_params["run"]
    assert (run[0] if isinstance(run, list) else run) == "verl-clean"
