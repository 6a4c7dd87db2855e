"""Metric readers read nothing outside the served roots (red-team finding: symlinks out of a root).

A link planted under a served root (a DI-engine config pointing at
/etc/passwd, a verl log pointing elsewhere, an event file, a logger, a
checkpoint) must become a problem, "links outside the served folders; not
read", and none of its bytes may reach the bundle. Without ``allowed_roots``
(the CLI reading what its user named) links are followed as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rl_board import api
from rl_board.metrics.dilogs import checkpoint_listing, read_di_engine_texts
from rl_board.metrics.reader import load_metrics, metrics_signature
from rl_board.metrics.tensorboard import read_event_files
from rl_board.sources.roots import OUTSIDE, inside
from tests.helpers.apptest import APP, PAGES, assert_clean
from tests.helpers.metric_fixtures import (
    write_di_engine_folder,
    write_tensorboard_run,
    write_verl_console_log,
)

SECRET = "root:x:0:0:SECRET-FROM-OUTSIDE:/root:/bin/bash"


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """(served root, a folder beside it that is not served) with a secret file outside."""
    root, outside = tmp_path / "served", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "passwd").write_text(SECRET + "\n")
    return root.resolve(), outside.resolve()


def _di_with_linked_config(root: Path, outside: Path) -> Path:
    """The red team's repro: ``ln -s /etc/passwd ROOT/x/formatted_total_config.py`` in a DI-engine folder."""
    folder = write_di_engine_folder(root / "x")
    (folder / "formatted_total_config.py").unlink()
    (folder / "formatted_total_config.py").symlink_to(outside / "passwd")
    return folder


def _refused(problems: list, path: Path) -> bool:
    return any(p.file == str(path) and p.reason == OUTSIDE for p in problems)


def _everything(bundle: api.MetricsBundle) -> str:
    """Every text the bundle carries, to search for leaked bytes."""
    parts = [bundle.scalars.to_csv(), bundle.texts.to_csv(), bundle.histograms.to_csv()]
    for info in bundle.runs:
        parts += [
            info.config_text,
            info.network_text,
            repr(info.checkpoints),
            repr(info.files),
            repr(info.hparams),
        ]
    return "\n".join(parts)


# --------------------------------------------------------------------------- the one check


def test_inside_resolves_links_and_dots(places):
    root, outside = places
    (root / "in.txt").write_text("x")
    (root / "out.txt").symlink_to(outside / "passwd")
    (root / "loop").symlink_to(root / "loop")
    assert inside(root / "in.txt", [root]) and inside(root, [root])
    assert inside(root / "not-there-yet.log", [root])  # missing files are just missing
    assert not inside(root / "out.txt", [root])
    assert not inside(root / ".." / "outside" / "passwd", [root])
    assert not inside(root / "loop", [root])
    assert inside(root / "out.txt", [root, outside])
    assert not inside(root / "in.txt", [])


# --------------------------------------------------------------------------- DI-engine


def test_di_engine_config_linked_to_a_secret_is_refused(places):
    root, outside = places
    folder = _di_with_linked_config(root, outside)
    bundle = load_metrics(root, allowed_roots=[root])
    info = bundle.run("x")
    assert info is not None and info.kind == "di-engine"
    assert info.config_text == "" and SECRET not in _everything(bundle)
    assert _refused(bundle.problems, folder / "formatted_total_config.py")
    on_disk = {c["name"] for c in info.checkpoints if c["exists"]}  # the rest of the experiment is still read
    assert on_disk == {"ckpt_best.pth.tar", "iteration_0.pth.tar", "iteration_500.pth.tar"}
    assert SECRET in load_metrics(root).run("x").config_text  # the CLI (no roots given) follows links


def test_di_engine_logger_linked_outside_is_refused(places):
    root, outside = places
    folder = write_di_engine_folder(root / "x")
    learner = folder / "log" / "learner" / "learner_logger.txt"
    (outside / "learner_logger.txt").write_bytes(learner.read_bytes())
    learner.unlink()
    learner.symlink_to(outside / "learner_logger.txt")
    result = read_di_engine_texts(folder, "x", allowed_roots=[root])
    assert _refused(result.problems, learner)
    assert result.extras["network_text"] == ""
    assert not (result.scalars["source"] == "learner").any()
    status = {f["role"]: f["status"] for f in result.extras["files"]}
    assert status["learner"] == "refused" and status["collector"] == "ok"


def test_checkpoints_linked_outside_are_neither_listed_nor_stated(places):
    root, outside = places
    folder = write_di_engine_folder(root / "x")
    (outside / "stolen.pth.tar").write_bytes(b"y" * 999)
    (folder / "ckpt" / "stolen.pth.tar").symlink_to(outside / "stolen.pth.tar")
    problems: list = []
    rows = checkpoint_listing(folder, [], allowed_roots=[root], problems=problems)
    assert "stolen.pth.tar" not in {r["name"] for r in rows} and len(rows) == 3  # the three real ones
    assert _refused(problems, folder / "ckpt" / "stolen.pth.tar")


def test_a_ckpt_folder_linked_outside_is_not_listed(places):
    root, outside = places
    folder = write_di_engine_folder(root / "x")
    for path in (folder / "ckpt").iterdir():
        path.unlink()
    (folder / "ckpt").rmdir()
    (outside / "ckpt").mkdir()
    (outside / "ckpt" / "private_file.pth").write_bytes(b"z")
    (folder / "ckpt").symlink_to(outside / "ckpt")
    bundle = load_metrics(root, allowed_roots=[root])
    assert "private_file" not in _everything(bundle)
    assert _refused(bundle.problems, folder / "ckpt")


# --------------------------------------------------------------------------- text logs and event files


def test_text_log_linked_outside_is_refused_not_plotted(places):
    """The red team's repro: ``ln -s /outside/verl.log ROOT/v.log``."""
    root, outside = places
    write_verl_console_log(outside / "verl.log")
    (root / "v.log").symlink_to(outside / "verl.log")
    bundle = load_metrics(root, allowed_roots=[root])
    assert bundle.run("v.log") is None and bundle.scalars.empty
    assert _refused(bundle.problems, root / "v.log")
    assert load_metrics(root).run("v.log") is not None  # without roots the link is followed


def test_event_file_linked_outside_is_refused(places):
    root, outside = places
    event = write_tensorboard_run(outside / "tb", steps=3)
    (root / "tb").mkdir()
    (root / "tb" / event.name).symlink_to(event)
    bundle = load_metrics(root, allowed_roots=[root])
    assert bundle.scalars.empty and bundle.histograms.empty and bundle.texts.empty
    assert _refused(bundle.problems, root / "tb" / event.name)
    result = read_event_files([root / "tb" / event.name], "tb", allowed_roots=[root])
    assert result.scalars.empty and _refused(result.problems, root / "tb" / event.name)


def test_files_inside_the_roots_read_as_before(places):
    root, _ = places
    write_tensorboard_run(root / "tb", steps=5)
    write_di_engine_folder(root / "di")
    write_verl_console_log(root / "verl.log")
    free, confined = load_metrics(root), load_metrics(root, allowed_roots=[root])
    assert not confined.problems
    assert len(confined.scalars) == len(free.scalars) > 0
    assert confined.run("di").config_text == free.run("di").config_text != ""


# --------------------------------------------------------------------------- cache and signature


def test_a_cached_unconfined_read_is_not_served_to_a_confined_one(places, tmp_path):
    root, outside = places
    _di_with_linked_config(root, outside)
    cache = tmp_path / "cache"
    assert SECRET in load_metrics(root, cache_dir=cache).run("x").config_text
    confined = load_metrics(root, cache_dir=cache, allowed_roots=[root])
    assert SECRET not in _everything(confined)
    assert SECRET not in _everything(load_metrics(root, cache_dir=cache, allowed_roots=[root]))  # from cache


def test_signature_ignores_what_happens_outside(places):
    root, outside = places
    write_verl_console_log(outside / "verl.log")
    (root / "v.log").symlink_to(outside / "verl.log")
    write_verl_console_log(root / "mine.log")
    before = metrics_signature(root, allowed_roots=[root])
    with (outside / "verl.log").open("a") as handle:
        handle.write("step:99 - actor/pg_loss:1.0\n")
    assert metrics_signature(root, allowed_roots=[root]) == before
    with (root / "mine.log").open("a") as handle:
        handle.write("step:99 - actor/pg_loss:1.0\n")
    assert metrics_signature(root, allowed_roots=[root]) != before


def test_api_read_metrics_passes_the_roots_on(places, tmp_path):
    root, outside = places
    _di_with_linked_config(root, outside)
    bundle = api.read_metrics(root, api.Served(tmp_path / "cache", (root,)))
    assert SECRET not in _everything(bundle)
    assert _refused(bundle.problems, root / "x" / "formatted_total_config.py")


# --------------------------------------------------------------------------- the page


def test_metrics_page_config_tab_never_shows_a_file_outside(places, tmp_path, monkeypatch):
    """The Metrics page reads with the served roots: the Config tab stays empty, the link is named."""
    root, outside = places
    _di_with_linked_config(root, outside)
    write_verl_console_log(outside / "verl.log")
    (root / "v.log").symlink_to(outside / "verl.log")
    monkeypatch.setenv("RL_BOARD_ROOTS", str(root))
    monkeypatch.setenv("RL_BOARD_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.switch_page(PAGES["metrics"])
    at.run()
    assert_clean(at)
    shown = [c.value for c in at.code] + [str(e.value) for e in [*at.markdown, *at.warning, *at.caption]]
    assert not any(SECRET in text for text in shown)
    assert not any("SECRET" in str(frame.value.to_csv()) for frame in at.dataframe)
    warnings = " ".join(str(w.value) for w in at.warning)
    assert "formatted_total_config.py" in warnings and "v.log" in warnings
    assert "links outside the served folders" in warnings
    assert [o for o in at.multiselect(key="w.metric_runs").options] == ["x · DI-engine · 13 tags"]
