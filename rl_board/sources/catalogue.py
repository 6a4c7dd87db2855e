"""The catalogue of what is under a logs root: every file classified once.

Each file is a rollout source (and of which format), a metric source (and of
which kind), or skipped with a reason. Rollout pages, the Metrics page, the
Health page and every CLI command ask this module, so no file is read as two
things and nothing is dropped without a word. Classifying a JSON-lines file
reads its first lines, and a text file (``.log``, ``.txt``, ``.out``,
``.err``) is a metric source only when its first lines (up to 4 MB) hold a
metric line the metrics reader knows; each answer is remembered by path,
size and mtime.

The walk skips hidden folders, package caches, the caller's skip list (the
cache folder) and anything deeper than ``MAX_DEPTH``; folder links are not
followed. A DI-engine / LightZero experiment folder is one metric source and
nothing below it is looked at again.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rl_board import formats
from rl_board.formats import Reading, fieldmap
from rl_board.formats.base import HIVE_STEP, Probe
from rl_board.formats.fieldmap import FieldMap
from rl_board.sources import companions, settings, sniff
from rl_board.sources.remote import IN_PLACE
from rl_board.sources.roots import OUTSIDE, inside
from rl_board.sources.sniff import is_di_engine_folder, is_event_file

MAX_DEPTH = 6
# _rl_board: a dataset's index; _temporary: a Spark/Hadoop job's uncommitted output (moved into place at its commit)
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "_rl_board", "_temporary"})
ROLLOUT, METRICS, SKIPPED = "rollout", "metrics", "skipped"
TRAINER_STATE = "trainer-state"  # a metric source: checkpoint-N/trainer_state.json
ROLLOUT_SUFFIXES = frozenset({".jsonl", ".ndjson", ".parquet"})
TEXT_LOG_SUFFIXES = frozenset({".log", ".txt", ".out", ".err"})
STEP_FOLDER = re.compile(r"^(?:global_)?step[_=-]?\d+(?:_evals?)?$", re.I)  # step=N: a Hive partition
QUIET_SUFFIXES = frozenset({".pt", ".pth", ".bin", ".safetensors", ".ckpt", ".lock", ".pyc"})
QUIET = "quiet"  # passed over without a word (checkpoints beside runs, locks, hidden files)
PICKLE_SUFFIXES = frozenset({".pt", ".pth"})  # torch pickles: quiet beside runs, named where there is none
NO_METRIC_LINES = "a text file with no metric lines rl-board knows"
TEXT_LOG = "text log"  # how a text file was classified, in the key of its remembered answer


@dataclass(frozen=True)
class Source:
    """One classified path. ``folder`` is the run it belongs to (relative to the root, "." for the root)."""

    path: Path
    folder: str
    role: str  # rollout | metrics | skipped
    format: str = ""  # rollout: its format; metrics: tensorboard | di-engine | text
    reason: str = ""  # why a file is skipped, or what a source is, in words
    files: tuple[Path, ...] = ()  # a folder source's files (event files of a TensorBoard run)
    reading: Reading | None = None  # a rollout file: how it is read (format, field map, options found beside it)


@dataclass(frozen=True)
class RolloutFolder:
    """A folder that directly holds rollout files: one rollout run."""

    path: Path
    relative: str
    files: int
    bytes: int
    modified: float
    format: str


@dataclass
class Catalogue:
    """Everything found under one root."""

    root: Path
    sources: list[Source] = field(default_factory=list)

    def of_role(self, role: str) -> list[Source]:
        return [s for s in self.sources if s.role == role]

    @property
    def skipped(self) -> list[Source]:
        return self.of_role(SKIPPED)

    def nothing_readable(self) -> str:
        """What was found when nothing can be read, in one line (for exit-2 messages and empty pages)."""
        skipped = self.skipped
        listed = "; ".join(f"{self.name(s.path)}: {s.reason}" for s in skipped[:5])
        more = f"; and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        if not self.sources:
            return f"no rollout or metric files under {self.root}"
        return f"no rollout or metric files under {self.root}; {len(skipped)} skipped ({listed}{more})"

    def name(self, path: Path) -> str:
        """A path as it is shown: relative to the root."""
        try:
            return path.relative_to(self.root).as_posix() or path.name
        except ValueError:
            return str(path)

    def rollout_signature(self) -> str:
        """Changes when any rollout run gains, loses or changes a file (sizes and newest mtimes; no reading)."""
        parts = [(f.relative, f.files, f.bytes, f.modified) for f in self.rollout_folders()]
        return hashlib.sha1(repr(parts).encode()).hexdigest()[:16]

    def rollout_folders(self) -> list[RolloutFolder]:
        """Rollout runs: folders holding rollout files, with their sizes and newest mtime."""
        by_folder: dict[str, list[Source]] = {}
        for s in self.of_role(ROLLOUT):
            by_folder.setdefault(run_of(s), []).append(s)
        out = []
        for name, members in sorted(by_folder.items()):
            sizes, newest = 0, 0.0
            for s in members:
                try:
                    st = s.path.stat()
                except OSError:
                    continue
                sizes += st.st_size
                newest = max(newest, st.st_mtime)
            formats = sorted({s.format for s in members})
            path = self.root if name == "." else self.root / name
            out.append(RolloutFolder(path, name, len(members), sizes, newest, "+".join(formats)))
        return out


def run_of(source: Source) -> str:
    """The run a rollout file belongs to: its folder, or the folder above its step folders.

    Trainers that write a folder per step (``step_12/``, ``global_step_12_evals/``,
    AReaL's ``rollout/12/``) make one run of all of them, as do Spark's partitions
    (``step=-1/``, ``step=3.0/``, ``step=__HIVE_DEFAULT_PARTITION__/``).
    """
    parts = [] if source.folder == "." else source.folder.split("/")
    for k in range(len(parts) - 1, -1, -1):
        if STEP_FOLDER.match(parts[k]) or HIVE_STEP.match(parts[k]) or (source.format == "areal" and parts[k].isdigit()):
            return "/".join(parts[:k]) or "."
    return source.folder


def catalogue(root: Path, *, skip: tuple[Path, ...] = (), fields: FieldMap | None = None,
              allowed: list[Path] | None = None, text_logs: TextLogCheck | None = None) -> Catalogue:
    """Classify everything under ``root`` (a folder, or one file); ``fields`` adds to rl-board.toml field maps.

    With ``allowed`` (a server's served roots), a file linked from outside them is named as such and never
    opened, so not even its keys or columns are shown. ``text_logs`` (the metrics layer's check, see
    ``metrics.reader.metric_catalogue``) decides which text files are metric logs; without it, every
    ``.log/.txt/.out/.err`` file counts as one.
    """
    root = Path(root).expanduser().resolve()
    limits = None if allowed is None else list(allowed)
    if root.is_file():
        look = _FolderOptions(root.parent, limits, text_logs)
        one = Catalogue(root, [_classify_file(root, root.name, fields, options=look)])
        return _without_quiet(one)
    found = Catalogue(root)
    skipped = {p.expanduser().resolve() for p in skip}
    base = len(root.parts)
    looked: dict[str, int] = {}
    for current, dirs, files in os.walk(root, followlinks=False):
        here = Path(current)
        depth = len(here.parts) - base
        folder = _relative(here, root)
        has_log = "log" in dirs  # a DI-engine experiment's loggers are under log/: no stat for other folders
        dirs[:] = sorted(d for d in dirs if _walkable(here / d, skipped)) if depth < MAX_DEPTH else []
        if IN_PLACE in files:  # the mirror of a bucket's Parquet dataset: one run, read in the bucket
            found.sources.append(Source(here, folder, ROLLOUT, "rl-board-parquet",
                                        "Parquet dataset read in place from object storage"))
            dirs[:] = []
            continue
        if has_log and is_di_engine_folder(here):
            found.sources.append(Source(here, folder, METRICS, "di-engine", "DI-engine experiment folder",
                                        tuple(_di_engine_event_files(here))))
            dirs[:] = []
            continue
        paths = [here / f for f in sorted(files)]
        events = tuple(p for p in paths if is_event_file(p))
        if events:
            found.sources.append(Source(here, folder, METRICS, "tensorboard", "TensorBoard event files", events))
        fmap = settings.for_file(here, fields, seen=looked)  # one look per folder (and its parents once)
        options = _FolderOptions(here, limits, text_logs)  # one look beside the folder per format, not per file
        for path in paths:
            if path in events:
                continue
            if _linked_out(path, limits):
                found.sources.append(Source(path, folder, SKIPPED, "", OUTSIDE))
            else:
                found.sources.append(_classify_file(path, folder, fields, fmap, options))
    return _without_quiet(found)


def _without_quiet(found: Catalogue) -> Catalogue:
    """Drop the quiet files; but where no rollout file is, torch pickles are named (slime writes its
    rollouts as ``.pt``): they may be the very run the user expected to see."""
    alone = not found.of_role(ROLLOUT)
    kept = []
    for s in found.sources:
        if s.role != QUIET:
            kept.append(s)
        elif alone and s.path.suffix.lower() in PICKLE_SUFFIXES:
            kept.append(Source(s.path, s.folder, SKIPPED, "", sniff.reason_for_suffix(s.path)))
    found.sources = kept
    return found


class DiskProbe(Probe):
    """A format's questions about a file's neighbours, answered from the disk."""

    def exists(self, path: Path) -> bool:
        return path.exists()

    def is_dir(self, path: Path) -> bool:
        return path.is_dir()

    def names(self, folder: Path) -> list[str]:
        try:
            return [e.name for e in os.scandir(folder)]
        except OSError:
            return []


TextLogCheck = Callable[[Path], str]  # why a text file holds no metric line ("" when it holds one)


class _FolderOptions:
    """What a look at one folder needs: its files' options per format, looked up once (see ``companions``),
    never outside ``allowed`` (the served roots; None: anywhere), and the caller's text-log check."""

    def __init__(self, folder: Path, allowed: list[Path] | None, text_logs: TextLogCheck | None = None) -> None:
        self.folder, self.allowed, self.text_logs, self.found = folder, allowed, text_logs, {}

    def __call__(self, fmt: str) -> dict:
        if fmt not in self.found:
            self.found[fmt] = companions.options_for(self.folder, fmt, self.allowed)
        return self.found[fmt]


def classify(path: Path, fields: FieldMap | None = None, allowed: list[Path] | None = None) -> Source:
    """One file on its own (the folder is its parent's name); nothing outside ``allowed`` is looked at."""
    return _classify_file(path, path.parent.name, fields, options=_FolderOptions(path.parent, allowed))


def _classify_file(path: Path, folder: str, fields: FieldMap | None = None, fmap: FieldMap | None = None,
                   options: _FolderOptions | None = None) -> Source:  # fmt: skip
    """``fmap``: the folder's effective field map when the caller already knows it."""
    suffix = path.suffix.lower()
    if suffix in sniff.JSON_LINES_SUFFIXES or suffix == ".parquet":
        fmap = settings.for_file(path, fields) if fmap is None else fmap
        role, fmt, reason = _sniffed(path, fmap)
        aside = formats.by_name(fmt).aside(path, DiskProbe()) if role == ROLLOUT else ""
        if aside:  # the format knows this file is not part of its run (a copy, an unfinished step, ...)
            return Source(path, folder, SKIPPED, fmt, aside)
        if role != ROLLOUT:
            return Source(path, folder, role, fmt, reason)
        found = (options or _FolderOptions(path.parent, [path.parent]))(fmt)
        return Source(path, folder, role, fmt, reason, reading=Reading(fmt or formats.NATIVE, fmap, found))
    if path.name == companions.TRAINER_STATE:
        return _trainer_state(path, folder, options)
    if suffix in TEXT_LOG_SUFFIXES:
        check = options.text_logs if options is not None else None
        if check is None:  # the caller does not read metrics: a text log is one by its name
            return Source(path, folder, METRICS, "text", "text log (read for metric lines)")
        role, fmt, reason = _remembered(path, TEXT_LOG, lambda: _text_log(path, check))
        return Source(path, folder, role, fmt, reason)
    if is_event_file(path):
        return Source(path, folder, METRICS, "tensorboard", "TensorBoard event file")
    if path.name.startswith(".") or suffix in QUIET_SUFFIXES or path.name == sniff.SETTINGS_FILE:
        return Source(path, folder, QUIET)
    return Source(path, folder, SKIPPED, "", sniff.reason_for_suffix(path))


def _trainer_state(path: Path, folder: str, options: _FolderOptions | None) -> Source:
    """The newest checkpoint's ``trainer_state.json`` holds the trainer's whole metric history; older ones
    hold a part of it."""
    allowed = options.allowed if options is not None else [path.parent]
    newest = companions.newest_trainer_state(path.parent.parent, allowed)
    if newest is not None and newest == path:
        return Source(path, folder, METRICS, TRAINER_STATE, "a Hugging Face trainer's logged metrics (log_history)")
    return Source(path, folder, "quiet")


_CACHE: OrderedDict[tuple[str, int, int, str], tuple[str, str, str]] = OrderedDict()
_CACHE_LIMIT = 8192
_CACHE_LOCK = threading.Lock()


def _sniffed(path: Path, fmap: FieldMap) -> tuple[str, str, str]:
    """(role, format, reason) of a JSON-lines or Parquet file, remembered by path, size, mtime and field map."""
    reader = sniff.parquet if path.suffix.lower() == ".parquet" else sniff.json_lines
    unreadable = (ROLLOUT, sniff.RL_BOARD, "unreadable (named in the run's load report)")
    return _remembered(path, fieldmap.digest(fmap), lambda: reader(path, fmap), unreadable)


def _text_log(path: Path, check: TextLogCheck) -> tuple[str, str, str]:
    """A text file is a metric source when ``check`` finds a metric line in it (the metric reader's own
    parser, handed in by the layer that owns it)."""
    if not path.is_file():  # a pipe or a device named like a log: opening it could wait forever
        return SKIPPED, "", "not a regular file; never opened"
    why_not = check(path)
    return (SKIPPED, "", why_not) if why_not else (METRICS, "text", "text log (read for metric lines)")


def _remembered(path: Path, how: str, classify: Callable[[], tuple[str, str, str]],
                unreadable: tuple[str, str, str] = (METRICS, "text", "unreadable (named by the metrics reader)"),
                ) -> tuple[str, str, str]:  # fmt: skip
    """``classify()``'s answer for a file, remembered by path, size, mtime and ``how`` it was classified."""
    try:
        st = path.stat()
    except OSError:
        return unreadable
    key = (str(path), st.st_size, st.st_mtime_ns, how)
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    answer = classify()
    with _CACHE_LOCK:
        _CACHE[key] = answer
        while len(_CACHE) > _CACHE_LIMIT:
            _CACHE.popitem(last=False)
    return answer


def may_hold_metrics(path: Path) -> bool:
    """A file a metric reader would look at: a text log or an event file (by its name alone)."""
    return path.suffix.lower() in TEXT_LOG_SUFFIXES or "tfevents" in path.name


def _linked_out(path: Path, limits: list[Path] | None) -> bool:
    """A symbolic link whose target lies outside the folders this catalogue may read (or is broken)."""
    return limits is not None and path.is_symlink() and not inside(path, limits)


def _walkable(folder: Path, skipped: set[Path]) -> bool:
    """Hidden folders, package caches, folder links and the caller's skip list are not searched."""
    if folder.name.startswith(".") or folder.name in SKIP_DIRS or folder.is_symlink():
        return False
    return folder not in skipped  # already resolved: the walk starts at a resolved root and follows no link


def _di_engine_event_files(folder: Path) -> list[Path]:
    """Event files anywhere under the experiment's log/ folder (normally log/serial)."""
    log = folder / "log"
    return sorted(p for p in log.rglob("*") if is_event_file(p)) if log.is_dir() else []


def _relative(path: Path, root: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return rel if rel and rel != "." else "."
