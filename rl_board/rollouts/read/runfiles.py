"""Which files of a run folder are rollout files, how each is read, and whether they changed."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from rl_board.formats import Reading
from rl_board.formats.fieldmap import FieldMap
from rl_board.rollouts.read import stored
from rl_board.sources import members
from rl_board.sources.catalogue import ROLLOUT, ROLLOUT_SUFFIXES, catalogue, classify, run_of
from rl_board.sources.roots import OUTSIDE, inside


@dataclass(frozen=True)
class RunFile:
    """One rollout file of a run: its name in the run, how it is read, and why it cannot be ("" if it can)."""

    path: Path
    name: str
    problem: str
    reading: Reading | None = None


def list_rollout_files(run_dir: Path, fields: FieldMap | None = None) -> list[Path]:
    """The run's rollout files that can be read, in natural order."""
    return [f.path for f in scan_run(run_dir, fields=fields) if not f.problem]


def scan_run(
    run_dir: Path, allowed: list[Path] | None = None, fields: FieldMap | None = None
) -> list[RunFile]:
    """Every rollout file of a run, classified once (the load reads each as its ``reading`` says).

    The files are those the root catalogue gives this run (its own folder, and
    step folders below it); names are paths relative to the run. A folder, a
    broken or looping link, or (with ``allowed``) a link that leads outside
    the served folders is named in the report, never read, and never opened
    to be classified.
    """
    inside_store = members.split(run_dir)
    if inside_store is not None:
        return _scan_member(run_dir, *inside_store, allowed, fields)
    if run_dir.is_file():  # a run of one file
        problem = _unusable(run_dir, allowed)
        if problem:
            return [RunFile(run_dir, run_dir.name, problem)]
        source = classify(run_dir, fields, allowed=allowed)
        return [RunFile(run_dir, run_dir.name, "", source.reading)] if source.role == ROLLOUT else []
    found: dict[str, RunFile] = {}
    folders: dict[Path, str] = {}
    for path in run_dir.iterdir():
        if path.suffix.lower() in ROLLOUT_SUFFIXES and (problem := _unusable(path, allowed, folders)):
            found[path.name] = RunFile(path, path.name, problem)
    listing = catalogue(run_dir, fields=fields, allowed=allowed)
    for source in listing.of_role(ROLLOUT):
        if run_of(source) != ".":
            continue
        name = source.path.relative_to(listing.root).as_posix()
        if name not in found:
            found[name] = RunFile(source.path, name, _unusable(source.path, allowed, folders), source.reading)
    return [found[name] for name in sorted(found, key=_natural_key)]


def _scan_member(
    run_dir: Path, store: Path, name: str, allowed: list[Path] | None, fields: FieldMap | None
) -> list[RunFile]:
    """A run inside a store file (``sources.members``): the store, read as the catalogue of that file
    says (the kind that claimed it, and the run's part); [] when the store holds no such run."""
    problem = _unusable(store, allowed)
    if problem:
        return [RunFile(store, name, problem)]
    listing = catalogue(store, fields=fields, allowed=allowed, metric_kinds=members.keepers())
    return [
        RunFile(store, name, "", source.reading)
        for source in listing.of_role(ROLLOUT)
        if source.path == run_dir and stored.is_stored(source.reading)
    ]


def file_state(file: RunFile) -> tuple[int, int]:
    """(size, mtime in ns) that decide whether a file is read again: a store's include its side files."""
    if stored.is_stored(file.reading):
        return members.state(file.path)
    st = file.path.stat()
    return st.st_size, st.st_mtime_ns


def _unusable(path: Path, allowed: list[Path] | None, folders: dict[Path, str] | None = None) -> str:
    """Why a file cannot be read, or "". A plain file (not a link) costs one lstat: it lies where its
    folder does, and each folder is checked once (``folders``: folder -> why it is unusable, or "")."""
    try:
        st = os.lstat(path)
    except OSError:
        return "is a broken or looping symbolic link"
    if stat.S_ISLNK(st.st_mode) or folders is None:
        return _unusable_link(path, allowed)
    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if allowed is None:
        return ""
    if path.parent not in folders:
        folders[path.parent] = "" if inside(path.parent, allowed) else OUTSIDE
    return folders[path.parent]


def _unusable_link(path: Path, allowed: list[Path] | None) -> str:
    try:
        if path.is_dir():
            return "is a folder, not a file"
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return "is a broken or looping symbolic link"
    if not real.is_file():
        return "is not a regular file"
    if allowed is not None and not inside(real, allowed):
        return OUTSIDE
    return ""


def _natural_key(name: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def stat_signature(run_dir: Path, fields: FieldMap | None = None, allowed: list[Path] | None = None) -> str:
    """Names, sizes and mtimes of the run's files: cheap change detection (the same files a load reads)."""
    try:
        return files_signature(scan_run(run_dir, allowed, fields))
    except OSError:
        return ""


def files_signature(files: list[RunFile]) -> str:
    """Names, sizes and mtimes of these files, and how each is read: a change in any reads the run again."""
    parts = []
    for file in files:
        if file.problem:
            continue
        try:
            size, mtime_ns = file_state(file)
        except OSError:
            continue
        how = file.reading.digest() if file.reading else ""
        parts.append(f"{file.path}:{size}:{mtime_ns}:{how}")
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]
