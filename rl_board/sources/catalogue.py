"""The catalogue of what is under a logs root: every file classified once.

Each file is a rollout source (and of which format), a metric source (and of
which kind), or skipped with a reason. Rollout pages, the Metrics page, the
Health page and every CLI command ask this module, so no file is read as two
things and nothing is dropped without a word. Classifying a JSON-lines file
reads its first lines, and a text file (``.log``, ``.txt``, ``.out``,
``.err``) is a metric source only when its first lines (up to 4 MB) hold a
metric line the metrics reader knows; each answer is remembered by path,
size and mtime.

Metric sources are found by the metric kinds the caller hands in (the
metrics layer's registry, ``rl_board.metrics.kinds``): at each folder every
kind may claim the folder (a W&B run folder, a DI-engine experiment: below
it only rollouts, the tables a trainer logged, are looked for) or some of its files (event files); a file no
folder claim took and no rollout format reads is offered to each kind in
turn (a text log, a tracker's database). Without kinds, only rollouts are
found.

The walk skips hidden folders, package caches, the caller's skip list (the
cache folder) and anything deeper than ``MAX_DEPTH``; folder links are not
followed.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from rl_board import formats
from rl_board.formats import Reading, fieldmap, tracker_tables
from rl_board.formats.base import HIVE_STEP
from rl_board.formats.fieldmap import FieldMap
from rl_board.sources import companions, members, settings, sniff
from rl_board.sources.claims import Found, MetricClaims
from rl_board.sources.remote import IN_PLACE
from rl_board.sources.roots import OUTSIDE, inside

MAX_DEPTH = 6
# _rl_board: a dataset's index; _temporary: a Spark/Hadoop job's uncommitted output (moved into place at its
# commit)
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "_rl_board", "_temporary"})
ROLLOUT, METRICS, SKIPPED = "rollout", "metrics", "skipped"
ROLLOUT_SUFFIXES = frozenset({".jsonl", ".ndjson", ".parquet"})
TEXT_LOG_SUFFIXES = frozenset({".log", ".txt", ".out", ".err"})
STEP_FOLDER = re.compile(r"^(?:global_)?step[_=-]?\d+(?:_evals?)?$", re.I)  # step=N: a Hive partition
QUIET_SUFFIXES = frozenset({".pt", ".pth", ".bin", ".safetensors", ".ckpt", ".lock", ".pyc"})
QUIET = "quiet"  # passed over without a word (checkpoints beside runs, locks, hidden files)
PICKLE_SUFFIXES = frozenset({".pt", ".pth"})  # torch pickles: named, never loaded
NO_METRIC_LINES = "a text file with no metric lines rl-board knows"
BROKEN_LINK = "a broken or looping symbolic link; not followed"


@dataclass(frozen=True)
class Source:
    """One classified path. ``folder`` is the run it belongs to (relative to the root, "." for the root)."""

    path: Path
    folder: str
    role: str  # rollout | metrics | skipped
    format: str = ""  # rollout: its format; metrics: the name of the metric kind that claimed it
    reason: str = ""  # why a file is skipped, or what a source is, in words
    files: tuple[Path, ...] = ()  # a metric source's files (event files of a TensorBoard run)
    reading: Reading | None = (
        None  # a rollout file: how it is read (format, field map, options found beside it)
    )
    part: str = ""  # a metric run inside a store holding several (see ``claims.Found``)
    label: str = ""  # that run's name after its store's path
    named_by: Path | None = None  # the path a metric run is named for, when not ``path``


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
        """Changes when any rollout run gains, loses or changes a file (sizes and newest mtimes; no
        reading)."""
        parts = [(f.relative, f.files, f.bytes, f.modified) for f in self.rollout_folders()]
        return hashlib.sha1(repr(parts).encode()).hexdigest()[:16]

    def rollout_folders(self) -> list[RolloutFolder]:
        """Rollout runs: folders holding rollout files, with their sizes and newest mtime."""
        by_folder: dict[str, list[Source]] = {}
        for s in self.of_role(ROLLOUT):
            by_folder.setdefault(run_of(s), []).append(s)
        out = []
        for name, sources in sorted(by_folder.items()):
            sizes, newest = 0, 0.0
            for s in sources:
                inside_store = members.split(s.path)
                try:
                    size, mtime_ns = members.state(inside_store[0]) if inside_store else _size_mtime(s.path)
                except OSError:
                    continue
                sizes += size
                newest = max(newest, mtime_ns / 1e9)
            formats = sorted({s.format for s in sources})
            path = self.root if name == "." else self.root / name
            out.append(RolloutFolder(path, name, len(sources), sizes, newest, "+".join(formats)))
        return out


def _size_mtime(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def run_of(source: Source) -> str:
    """The run a rollout file belongs to: its folder, or the folder above its step folders.

    Trainers that write a folder per step (``step_12/``, ``global_step_12_evals/``,
    AReaL's ``rollout/12/``) make one run of all of them, as do Spark's partitions
    (``step=-1/``, ``step=3.0/``, ``step=__HIVE_DEFAULT_PARTITION__/``).
    """
    parts = [] if source.folder == "." else source.folder.split("/")
    if source.path.suffix.lower() == tracker_tables.SUFFIX:  # a table in a tracker's run folder
        home = tracker_tables.run_folder(parts)
        if home is not None:
            return "/".join(parts[:home]) or "."
    for k in range(len(parts) - 1, -1, -1):
        if (
            STEP_FOLDER.match(parts[k])
            or HIVE_STEP.match(parts[k])
            or (parts[k].isdigit() and formats.by_name(source.format).numbered_step_folders)
        ):
            return "/".join(parts[:k]) or "."
    return source.folder


def catalogue(
    root: Path,
    *,
    skip: tuple[Path, ...] = (),
    fields: FieldMap | None = None,
    allowed: list[Path] | None = None,
    metric_kinds: Sequence[MetricClaims] = (),
) -> Catalogue:
    """Classify everything under ``root`` (a folder, or one file); ``fields`` adds to rl-board.toml field
    maps.

    With ``allowed`` (a server's served roots), a file linked from outside them is named as such and never
    opened, so not even its keys or columns are shown. ``metric_kinds`` (the metrics layer's registry, see
    ``metrics.reader.metric_catalogue``) find the metric sources; without them only rollouts are found.
    """
    root = Path(root).expanduser().resolve()
    limits = None if allowed is None else list(allowed)
    if root.is_file():
        look = _FolderOptions(root.parent, limits, metric_kinds, root=root, fields=fields)
        one = Catalogue(root, _classify_file(root, root.name, fields, options=look))
        return _without_quiet(one)
    found = Catalogue(root)
    skipped = {p.expanduser().resolve() for p in skip}
    base = len(root.parts)
    looked: dict[str, int] = {}
    whole_runs: list[
        Path
    ] = []  # metric runs claimed whole: below them, only rollouts (their tables) are found
    for current, dirs, files in os.walk(root, followlinks=False):
        here = Path(current)
        depth = len(here.parts) - base
        folder = _relative(here, root)
        entries = list(dirs)
        dirs[:] = sorted(d for d in dirs if _walkable(here / d, skipped)) if depth < MAX_DEPTH else []
        if IN_PLACE in files:  # the mirror of a bucket's Parquet dataset: one run, read in the bucket
            found.sources.append(
                Source(
                    here,
                    folder,
                    ROLLOUT,
                    "rl-board-parquet",
                    "Parquet dataset read in place from object storage",
                )
            )
            dirs[:] = []
            continue
        in_run = any(here.is_relative_to(c) for c in whole_runs)
        claimed, whole = (
            ([], False) if in_run else _folder_claims(here, folder, entries, files, metric_kinds, limits)
        )
        found.sources.extend(claimed)
        if whole:
            whole_runs.append(here)
            in_run = True
        taken = {f for s in claimed for f in s.files}
        fmap = settings.for_file(here, fields, seen=looked)  # one look per folder (and its parents once)
        options = _FolderOptions(  # one look beside it per format
            here, limits, () if in_run else metric_kinds, root=root, fields=fields
        )
        for path in (here / f for f in sorted(files)):
            if path in taken or (in_run and not _may_be_rollout(path)):
                continue
            if _linked_out(path, limits):
                found.sources.append(Source(path, folder, SKIPPED, "", OUTSIDE))
            else:
                found.sources.extend(
                    s
                    for s in _classify_file(path, folder, fields, fmap, options)
                    if not in_run or s.role == ROLLOUT or tracker_tables.may_be_table(path)
                )
    return _without_quiet(found)


def _may_be_rollout(path: Path) -> bool:
    """A file inside a metric run claimed whole is looked at only if it may be rollouts (a tracker's
    table)."""
    suffix = path.suffix.lower()
    return suffix in sniff.JSON_LINES_SUFFIXES or sniff.is_whole_file(path)


def _folder_claims(
    here: Path,
    folder: str,
    dirs: list[str],
    files: list[str],
    kinds: Sequence[MetricClaims],
    allowed: list[Path] | None,
) -> tuple[list[Source], bool]:
    """The metric runs the kinds find in one folder, and whether one of them took the folder whole."""
    out: list[Source] = []
    whole = False
    for kind in kinds:
        for claim in kind.claim_folder(here, dirs, files, allowed):
            out.append(_claimed(claim, folder, kind.name))
            whole = whole or claim.whole
    return out, whole


def _claimed(claim: Found, folder: str, kind: str) -> Source:
    """A kind's claim as a catalogue entry: a metric source, or a file of its shape named as skipped."""
    if claim.quiet:
        return Source(claim.path, folder, QUIET)
    if claim.skipped:
        return Source(claim.path, folder, SKIPPED, "", claim.skipped)
    return Source(
        claim.path,
        folder,
        METRICS,
        kind,
        claim.reason,
        claim.files,
        part=claim.part,
        label=claim.label,
        named_by=claim.named_by,
    )


def _without_quiet(found: Catalogue) -> Catalogue:
    """Drop the quiet files; but torch pickles are named, beside runs too (slime writes its rollouts as
    ``.pt``): they may be the very run the user expected to see."""
    kept = []
    for s in found.sources:
        if s.role != QUIET:
            kept.append(s)
        elif s.path.suffix.lower() in PICKLE_SUFFIXES:
            kept.append(Source(s.path, s.folder, SKIPPED, "", sniff.reason_for_suffix(s.path)))
    found.sources = kept
    return found


class _FolderOptions:
    """What a look at one folder needs: its files' options per format, looked up once (see ``companions``),
    never outside ``allowed`` (the served roots; None: anywhere), and the caller's metric kinds."""

    def __init__(
        self,
        folder: Path,
        allowed: list[Path] | None,
        kinds: Sequence[MetricClaims] = (),
        root: Path | None = None,
        fields: FieldMap | None = None,
    ) -> None:
        self.folder, self.allowed, self.kinds = folder, allowed, kinds
        self.root = folder if root is None else root  # runs inside a store are named relative to it
        self.fields = fields
        self.found: dict[str, dict[str, Any]] = {}

    def __call__(self, fmt: str) -> dict:
        if fmt not in self.found:
            self.found[fmt] = companions.options_for(self.folder, fmt, self.allowed)
        return self.found[fmt]


def classify(path: Path, fields: FieldMap | None = None, allowed: list[Path] | None = None) -> Source:
    """One file on its own, as rollouts (the folder is its parent's name); nothing outside ``allowed``
    is looked at."""
    return _classify_file(path, path.parent.name, fields, options=_FolderOptions(path.parent, allowed))[0]


def _classify_file(
    path: Path,
    folder: str,
    fields: FieldMap | None = None,
    fmap: FieldMap | None = None,
    options: _FolderOptions | None = None,
) -> list[Source]:
    """What one file is: a rollout file, the metric runs a kind finds in it, or skipped (with why).

    ``fmap``: the folder's effective field map when the caller already knows it.
    """
    suffix = path.suffix.lower()
    sniffed: Source | None = None
    if suffix in sniff.JSON_LINES_SUFFIXES or sniff.is_whole_file(path):
        fmap = settings.for_file(path, fields) if fmap is None else fmap
        role, fmt, reason = _sniffed(path, fmap)
        aside = formats.by_name(fmt).aside(path, companions.ConfinedProbe(None)) if role == ROLLOUT else ""
        if aside:  # the format knows this file is not part of its run (a copy, an unfinished step, ...)
            return [Source(path, folder, SKIPPED, fmt, aside)]
        if role == ROLLOUT:
            found = (options or _FolderOptions(path.parent, [path.parent]))(fmt)
            return [
                Source(path, folder, role, fmt, reason, reading=Reading(fmt or formats.NATIVE, fmap, found))
            ]
        sniffed = Source(path, folder, SKIPPED, "", reason)
    claims = _file_claims(path, folder, options)
    if claims:
        return claims
    if sniffed is not None:  # JSON lines no kind knows: the sniff says what they hold
        return [sniffed]
    if path.name.startswith(".") or suffix in QUIET_SUFFIXES or path.name == sniff.SETTINGS_FILE:
        return [Source(path, folder, QUIET)]
    if path.is_symlink() and not path.exists():  # a W&B folder copied off its machine keeps such links
        return [Source(path, folder, SKIPPED, "", BROKEN_LINK)]
    return [Source(path, folder, SKIPPED, "", sniff.reason_for_suffix(path))]


def _file_claims(path: Path, folder: str, options: _FolderOptions | None) -> list[Source]:
    """The first kind's runs in one file; a kind that only names the file as skipped yields to a later
    kind that reads it (two kinds may share a suffix: Trackio's and MLflow's ``.db``)."""
    if options is None:
        return []
    fallback: list[Source] = []
    for kind in options.kinds:
        found = kind.claim_file(path, options.allowed)
        claims = [_claimed(c, folder, kind.name) for c in found]
        if any(s.role != SKIPPED for s in claims):
            return claims + [_member(c, kind.name, options) for c in found if c.rollout_head is not None]
        fallback = fallback or claims
    return fallback


def _member(claim: Found, kind: str, options: _FolderOptions) -> Source:
    """The rollout run a metric run keeps inside its store (``members``): named as a folder below the
    store file, read by its kind (the ``Reading`` options say which, and which part)."""
    path = members.member_path(claim.path, claim.label.rsplit("/", 1)[-1] or claim.part)
    fmap = settings.for_file(claim.path, options.fields)
    head = dict(claim.rollout_head or {})
    fmt = formats.detect(fieldmap.apply(head, fmap))
    folder = _relative(path, options.root)
    if fmt is None:
        keys = ", ".join(sorted(head)[:8])
        return Source(
            path,
            folder,
            SKIPPED,
            "",
            f"tables logged to a tracker whose columns ({keys}) match no rollout shape",
        )
    found = {**options(fmt.name), members.MEMBER_OF: kind, members.MEMBER: claim.part}
    reason = f"{fmt.describe()}, as logged to a tracker (run {claim.label})"
    return Source(path, folder, ROLLOUT, fmt.name, reason, reading=Reading(fmt.name, fmap, found))


_CACHE: OrderedDict[tuple[str, int, int, str], Any] = OrderedDict()
_CACHE_LIMIT = 8192
_CACHE_LOCK = threading.Lock()


def _sniffed(path: Path, fmap: FieldMap) -> tuple[str, str, str]:
    """(role, format, reason) of a JSON-lines or Parquet file, remembered by path, size, mtime and field
    map."""
    if path.suffix.lower() == tracker_tables.SUFFIX:  # its answer also depends on the tables beside it
        try:
            beside = str(path.parent.stat().st_mtime_ns)
        except OSError:
            beside = ""
        how = f"{fieldmap.digest(fmap)}|{beside}"
        return _remembered(path, how, lambda: sniff.table_document(path, fmap), (SKIPPED, "", BROKEN_LINK))
    reader = sniff.parquet if path.suffix.lower() == ".parquet" else sniff.json_lines
    unreadable = (ROLLOUT, sniff.RL_BOARD, "unreadable (named in the run's load report)")
    return _remembered(path, fieldmap.digest(fmap), lambda: reader(path, fmap), unreadable)


Answer = TypeVar("Answer")


def remembered(path: Path, how: str, classify: Callable[[], Answer], unreadable: Answer) -> Answer:
    """``classify()``'s answer for a file, remembered by path, size, mtime and ``how`` it was classified
    (a metric kind's look inside a file, a JSON-lines sniff); ``unreadable`` when the file cannot be
    stat-ed."""
    return _remembered(path, how, classify, unreadable)


def _remembered(path: Path, how: str, classify: Callable[[], Any], unreadable: Any) -> Any:
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


def _linked_out(path: Path, limits: list[Path] | None) -> bool:
    """A symbolic link whose target lies outside the folders this catalogue may read (or is broken)."""
    return limits is not None and path.is_symlink() and not inside(path, limits)


def _walkable(folder: Path, skipped: set[Path]) -> bool:
    """Hidden folders, package caches, folder links and the caller's skip list are not searched."""
    if folder.name.startswith(".") or folder.name in SKIP_DIRS or folder.is_symlink():
        return False
    return folder not in skipped  # already resolved: the walk starts at a resolved root and follows no link


def _relative(path: Path, root: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return rel if rel and rel != "." else "."
