"""Every case of the hostile corpus: the load finishes, good lines survive, bad ones are reported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rl_board.rollouts.store import RolloutStore
from tests.hostile import Case, cases, write_case

CASES = cases()
UNREADABLE = "file without read permission"


def as_unprivileged(args: list[str]) -> list[str]:
    """Root reads anything; drop the capabilities that let it, so permissions apply."""
    if os.geteuid() != 0:
        return args
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to test unreadable files as root"
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--", *args]


def load(case: Case, tmp_path: Path) -> tuple[dict, Path]:
    """The run's summary as the CLI prints it (a subprocess, so permissions can apply)."""
    run = write_case(case, tmp_path / "root")
    cache = tmp_path / "cache"
    cache.mkdir()
    if case.name != UNREADABLE:
        from rl_board.cli import summary_dict

        return summary_dict(RolloutStore.open(run, cache_dir=cache)), run
    cmd = as_unprivileged(
        [sys.executable, "-m", "rl_board", "summary", str(run), "--json", "--cache-dir", str(cache)]
    )
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), run


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_case(case: Case, tmp_path: Path) -> None:
    summary, run = load(case, tmp_path)
    assert summary["samples"] == case.samples
    reported = {b["line"]: b["reason"] for b in summary["bad_lines"]}
    assert set(reported) == set(case.bad)
    for line, words in case.bad.items():
        assert words in reported[line]
    files = {f["name"]: f for f in summary["files"]}
    errors = {name: f["error"] for name, f in files.items() if f["error"]}
    assert set(errors) == set(case.file_errors)
    for name, words in case.file_errors.items():
        assert words in errors[name]
    readable = [f for f in files.values() if not f["error"]]
    # Nothing silently dropped: every complete line is a sample, a bad line or blank.
    store = RolloutStore.open(run, cache_dir=tmp_path / "cache") if case.name != UNREADABLE else None
    if store is not None:
        for report in store.report.files:
            if not report.error:
                assert report.lines == report.samples + report.bad + report.blank
        assert sum(f.blank for f in store.report.files) == case.blank
        assert sum(f.pending_bytes for f in store.report.files) == case.pending_bytes
        assert len(store.report.warnings) == case.warnings
    assert sum(f["samples"] for f in readable) == case.samples


def test_corpus_totals(tmp_path: Path) -> None:
    """The numbers quoted in the closing note: cases, lines tried, kept, reported."""
    tried = kept = reported = 0
    for i, case in enumerate(c for c in CASES if c.name != UNREADABLE):
        run = write_case(case, tmp_path / f"root{i}")
        store = RolloutStore.open(run, cache_dir=tmp_path / "cache")
        tried += sum(f.lines for f in store.report.files)
        kept += store.num_samples
        reported += store.report.bad_line_count
    print(f"\nhostile corpus: {len(CASES)} cases, {tried} lines tried, {kept} kept, {reported} reported")
    assert kept + reported <= tried
    assert kept == sum(c.samples for c in CASES if c.name != UNREADABLE)
    assert reported == sum(len(c.bad) for c in CASES if c.name != UNREADABLE)
    assert (len(CASES), tried, kept, reported) == (
        38,
        135,
        113,
        19,
    )  # 29 cases before deep / clash / long lines
