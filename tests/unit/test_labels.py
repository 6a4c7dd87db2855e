"""Labels stay on their sample through a restart, a cache wipe, a growing run and new rank files, and go out
with export, SQL and the CLI; their text is the user's, bounded and never markup."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rl_board.errors import InvalidArgumentError, RLBoardError
from rl_board.rollouts.labels import MAX_NOTE, LabelStore
from rl_board.rollouts.sql import run_query
from rl_board.rollouts.store import RolloutStore
from rl_board.writer import RolloutWriter


def write(run: Path, rank: int, steps: range, tag: str = "") -> None:
    with RolloutWriter(run, rank=rank) as writer:
        for step in steps:
            for k in range(3):
                writer.write(step, f"q{k}", f"rank {rank} answer {k} {tag}", float(k))


def response(store: RolloutStore, step: int, sample: int) -> str:
    return store.sample(step=step, index=sample).fields["response"]


def test_a_label_stays_on_its_sample(tmp_path: Path) -> None:
    run, labels = tmp_path / "run", LabelStore(tmp_path / "data" / "labels.sqlite")
    write(run, 1, range(2))
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    target = response(store, 1, 2)
    labels.put(**store.label_key(step=1, index=2), tag="reward hack", note="says 'Great question' <b>x</b>")
    write(run, 0, range(3))  # a new rank file sorts first: indices within step 1 move
    with RolloutWriter(run, rank=1) as writer:  # and the run grows
        writer.write(2, "q9", "late answer", 0.5)
    shutil.rmtree(tmp_path / "cache")  # the cache is wiped
    again = LabelStore(tmp_path / "data" / "labels.sqlite")  # as after a restart
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    [label] = store.labels(again).to_dict("records")
    assert response(store, label["step"], label["sample"]) == target
    assert label["sample"] != 2 and label["note"] == "says 'Great question' <b>x</b>"


def test_tags_in_sql_and_export(tmp_path: Path) -> None:
    run, data = tmp_path / "run", tmp_path / "data"
    write(run, 0, range(2))
    env = {**os.environ, "RL_BOARD_LABELS": str(data / "team.sqlite")}
    cli = [sys.executable, "-m", "rl_board"]
    for sample, tag in ((0, "good"), (2, "=cmd|' /C calc'!A0"), (2, "loop")):
        out = subprocess.run(
            [
                *cli,
                "label",
                str(run),
                "--step",
                "1",
                "--sample",
                str(sample),
                "--tag",
                tag,
                "--json",
                "--cache-dir",
                str(tmp_path / "c"),
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        assert out.returncode == 0, out.stderr
    out = subprocess.run(
        [*cli, "labels", str(run), "--json", "--cache-dir", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        env=env,
    )
    listed = json.loads(out.stdout)["labels"]
    assert sorted((x["sample"], x["tag"]) for x in listed) == [
        (0, "good"),
        (2, "=cmd|' /C calc'!A0"),
        (2, "loop"),
    ]
    store = RolloutStore.open(run, cache_dir=tmp_path / "c")
    os.environ["RL_BOARD_LABELS"] = str(data / "team.sqlite")
    try:
        from rl_board import config

        config.reset()
        tags = run_query(store, "SELECT sample, tags FROM samples WHERE step = 1 ORDER BY sample").frame
        assert tags["tags"].tolist()[0] == "good" and "loop" in tags["tags"].tolist()[2]
        assert len(run_query(store, "SELECT * FROM labels").frame) == 3
    finally:
        del os.environ["RL_BOARD_LABELS"]
        config.reset()
    out = subprocess.run(
        [*cli, "export", str(run), str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    exported = pq.read_table(tmp_path / "out" / "step=1" / "part-0.parquet").to_pydict()
    assert exported["tags"][0] == "good"
    removed = subprocess.run(
        [
            *cli,
            "label",
            str(run),
            "--step",
            "1",
            "--sample",
            "0",
            "--tag",
            "good",
            "--remove",
            "--cache-dir",
            str(tmp_path / "c"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert removed.returncode == 0 and "removed" in removed.stdout


def test_label_text_is_bounded(tmp_path: Path) -> None:
    labels = LabelStore(tmp_path / "l.sqlite")
    key = {"run": "r", "step": 1, "file": "f", "line": 1, "sample_digest": "d"}
    with pytest.raises(InvalidArgumentError, match="at most 64"):
        labels.put(**key, tag="x" * 65)
    with pytest.raises(InvalidArgumentError, match=f"at most {MAX_NOTE}"):
        labels.put(**key, tag="ok", note="y" * (MAX_NOTE + 1))
    with pytest.raises(InvalidArgumentError, match="at least one"):
        labels.put(**key, tag="   ")
    write(tmp_path / "run", 0, range(1))
    env = {**os.environ, "RL_BOARD_LABELS": str(tmp_path / "l.sqlite")}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "rl_board",
            "label",
            str(tmp_path / "run"),
            "--step",
            "0",
            "--sample",
            "0",
            "--tag",
            "x" * 70,
            "--cache-dir",
            str(tmp_path / "c"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert (
        out.returncode == 2
        and "a tag is at most 64 characters" in out.stderr
        and "Traceback" not in out.stderr
    )


def test_version_changes_with_every_label_and_reading_never_makes_the_file(tmp_path: Path) -> None:
    """The pages cache the run's labels on ``version``: it must change on every add, note and removal."""
    labels = LabelStore(tmp_path / "data" / "labels.sqlite")
    assert labels.of_run("r") == [] and labels.version("r") == "none" and not labels.path.exists()
    keys = [{"run": "r", "step": 1, "file": "f", "line": n, "sample_digest": f"d{n}"} for n in (1, 2, 3)]
    seen = [labels.version("r")]
    assert labels.put_many(keys, tag="loop") == 3
    seen.append(labels.version("r"))
    labels.put_many(keys[:1], tag="loop", note="why")  # a new note on a tag it has
    seen.append(labels.version("r"))
    assert labels.remove_many(keys[1:], tag="loop") == 2 and labels.remove_many(keys[1:], tag="loop") == 0
    seen.append(labels.version("r"))
    assert len(set(seen)) == len(seen)
    [left] = labels.of_run("r")
    assert (left.line, left.note) == (1, "why") and labels.version("other") != seen[-1]
    with pytest.raises(InvalidArgumentError, match="at least one"):
        labels.put_many(keys, tag=" ")


def test_an_unusable_labels_file_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "labels.sqlite").write_text("not a database" * 100)
    with pytest.raises(RLBoardError, match="labels file"):
        LabelStore(tmp_path / "labels.sqlite").of_run("r")
    (tmp_path / "file").write_text("")
    with pytest.raises(RLBoardError, match="cannot open the labels file"):
        LabelStore(tmp_path / "file" / "labels.sqlite").put(
            run="r", step=0, file="f", line=1, sample_digest="d", tag="t"
        )


def test_samples_by_tag_and_the_signals_per_step(tmp_path: Path) -> None:
    from rl_board.rollouts.filters import SampleFilter

    run, labels = tmp_path / "run", LabelStore(tmp_path / "l.sqlite")
    write(run, 0, range(3))
    with RolloutWriter(run, rank=0) as writer:
        writer.write(1, "q", " ".join(["again and again"] * 30), 0.0)  # a loop
        writer.write(2, "q", "mostly English 然后检查结果 then more", 0.0)  # a mix of scripts
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
    for step, sample in ((1, 3), (2, 0), (2, 2)):
        labels.put(**store.label_key(step=step, index=sample), tag="odd")
    assert sorted(store.tagged(labels, "odd")) == [(1, 3), (2, 0), (2, 2)] and store.tagged(labels, "x") == []
    only = SampleFilter.build(only=store.tagged(labels, "odd"))
    assert store.samples(filters=only)[["step", "sample"]].values.tolist() == [[1, 3], [2, 0], [2, 2]]
    assert store.count(step=2, filters=only) == 2 and store.count(filters=SampleFilter.build(only=[])) == 0
    both = SampleFilter.build(only=store.tagged(labels, "odd"), ranges={"reward": (0.5, None)})
    assert store.samples(filters=both)[["step", "sample"]].values.tolist() == [[2, 2]]  # answer k scores k
    signals = store.signals_by_step()
    assert signals.to_dict("list") == {
        "step": [0, 1, 2],
        "samples": [3, 4, 4],
        "loops": [0, 1, 0],
        "mixed_scripts": [0, 0, 1],
    }
