"""Failure signals separate the planted answers from the rest, and surface as families, columns and SQL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from rl_board.rollouts import planted
from rl_board.rollouts.sql import run_query
from rl_board.rollouts.store import RolloutStore


def opened(tmp_path: Path, **rates: float) -> tuple[RolloutStore, planted.Planted]:
    truth = planted.write(tmp_path / "run", **rates)
    return RolloutStore.open(tmp_path / "run", cache_dir=tmp_path / "cache"), truth


def keys(frame: pd.DataFrame) -> set[tuple[int, int]]:
    return {(int(s), int(i)) for s, i in zip(frame["step"], frame["sample"], strict=True)}


def test_loops_and_mixed_scripts_are_told_apart(tmp_path: Path) -> None:
    store, truth = opened(tmp_path, loops=0.3, mixed=0.3)
    frame = store.samples(columns=["repetition", "scripts"])
    assert keys(frame[frame["repetition"] >= 0.5]) == truth.loop
    assert keys(frame[frame["scripts"].str.contains("+", regex=False)]) == truth.mixed
    assert set(frame.loc[~frame["scripts"].str.contains("+", regex=False), "scripts"]) == {"Latin"}


def test_the_planted_template_is_one_family_and_nothing_else_is(tmp_path: Path) -> None:
    store, truth = opened(tmp_path, template=0.4)
    families = store.pattern_families()
    assert families["template"].tolist() == ["T1"]
    members = store.samples(columns=["template"])
    assert keys(members[members["template"] == 1]) == truth.template
    row = families.iloc[0]
    assert row["samples"] == len(truth.template) and row["reward_mean"] == 1.0
    assert row["first_step"] == min(s for s, _ in truth.template)
    shares = store.family_shares().set_index("step")["T1"]
    assert shares.iloc[-1] > shares.iloc[0]  # spreading


def test_a_clean_run_has_no_family(tmp_path: Path) -> None:
    store, _ = opened(tmp_path)
    assert store.pattern_families().empty and store.signal_counts() == {"loops": 0, "mixed_scripts": 0}


def test_patterns_in_sql_and_the_cli(tmp_path: Path) -> None:
    store, truth = opened(tmp_path, template=0.4, loops=0.2)
    got = run_query(store, "SELECT template, samples, first_step, reward_mean, example FROM patterns").frame
    assert got["template"].tolist() == ["T1"] and int(got["samples"].iloc[0]) == len(truth.template)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "rl_board",
            "patterns",
            str(tmp_path / "run"),
            "--json",
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [p["template"] for p in data["patterns"]] == ["T1"] and data["loops"] == len(truth.loop)
    assert "Great question" in data["patterns"][0]["example"]


def test_each_sample_names_its_family_in_sql_as_the_patterns_view_does(tmp_path: Path) -> None:
    """``samples.template`` is the family the Patterns page and the step browser give an answer (T1 the
    largest, NULL for none): samples filter by it, and the patterns view joins to its samples."""
    store, truth = opened(tmp_path, template=0.4)
    got = run_query(store, "SELECT step, sample FROM samples WHERE template = 'T1'").frame
    assert keys(got) == truth.template
    joined = run_query(
        store,
        "SELECT p.template, count(*) AS n, any_value(p.samples) AS said FROM patterns p "
        "JOIN samples s ON s.template = p.template GROUP BY p.template",
    ).frame
    assert joined["template"].tolist() == ["T1"] and (joined["n"] == joined["said"]).all()
    rest = run_query(store, "SELECT count(*) AS n FROM samples WHERE template IS NULL").frame["n"].iloc[0]
    assert rest == store.num_samples - len(truth.template)
