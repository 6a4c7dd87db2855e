"""Reading SQLite stores (Trackio's and MLflow's databases) without ever writing beside them.

A user's database may be live: a trainer may be writing it in WAL mode. A
read-only open of such a file still creates ``-wal``/``-shm`` files beside it,
so a database with side files is copied (with them) to a temporary folder and
the copy is read; one without is opened immutable. Nothing here raises for a
bad file but ``SqliteUnreadable``, whose message is safe to show.

A read that goes on from where the last one stopped checks that the row it resumes after is unchanged
(``row_digest``); a database whose files have not changed since (``files_state``) is not opened again
(``still_current``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from rl_board.sources.claims import Found
from rl_board.sources.roots import inside

SQLITE_MAGIC = b"SQLite format 3\x00"
SIDE_FILES = ("-wal", "-journal")


class SqliteUnreadable(Exception):
    """A SQLite file that could not be opened or queried; the message says why, in words."""


def is_sqlite_file(path: Path) -> bool:
    """Whether ``path`` is a regular file starting with SQLite's 16-byte header (a pipe is never opened)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as handle:
            return handle.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def side_files(path: Path, allowed: list[Path] | None = None) -> tuple[list[Path], list[Path]]:
    """The non-empty ``-wal`` / ``-journal`` files beside a database, and those refused (outside
    ``allowed``)."""
    present: list[Path] = []
    refused: list[Path] = []
    for suffix in SIDE_FILES:
        side = Path(f"{path}{suffix}")
        try:
            if side.stat().st_size == 0:
                continue
        except OSError:
            continue
        (refused if allowed is not None and not inside(side, allowed) else present).append(side)
    return present, refused


@contextmanager
def open_sqlite_readonly(path: Path, sides: list[Path] | None = None) -> Iterator[sqlite3.Connection]:
    """A read-only connection that never writes beside ``path``; SqliteUnreadable when it cannot be had.

    Without side files: ``mode=ro&immutable=1`` (no lock, no -shm). With them (``sides``, default: those
    present): the database and its side files are copied to a temporary folder and the copy is opened,
    where SQLite replays the WAL (or rolls a hot journal back) on the copy only.
    """
    sides = side_files(path)[0] if sides is None else sides
    try:
        if not sides:
            conn = _connect(f"file:{quote(str(path))}?mode=ro&immutable=1")
            try:
                yield conn
            finally:
                conn.close()
            return
        with tempfile.TemporaryDirectory(prefix="rl-board-sqlite-") as tmp:
            copy = _copy_with_sides(path, sides, Path(tmp))
            conn = _connect(f"file:{quote(str(copy))}")
            try:
                conn.execute("PRAGMA query_only = ON")
                yield conn
            finally:
                conn.close()
    except (sqlite3.Error, OSError) as err:
        raise SqliteUnreadable(f"cannot read this SQLite file: {err}") from err


def _connect(uri: str) -> sqlite3.Connection:
    return sqlite3.connect(uri, uri=True, timeout=0.5, check_same_thread=False)


def _copy_with_sides(path: Path, sides: list[Path], folder: Path) -> Path:
    """Copy the database and its side files, again (up to three times) while a writer changes them."""
    files = [path, *sides]
    for _ in range(3):
        before = [file_signature(p) for p in files]
        for p in files:
            shutil.copyfile(p, folder / p.name)
        if [file_signature(p) for p in files] == before:
            break
    return folder / path.name


def file_signature(path: Path) -> tuple[int, int]:
    """(size, mtime in ns) of a file; (-1, -1) when it cannot be stat-ed."""
    try:
        st = path.stat()
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def table_columns(conn: sqlite3.Connection, tables: tuple[str, ...]) -> dict[str, set[str]]:
    """The columns of those of ``tables`` the database has."""
    present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return {t: {row[1] for row in conn.execute(f'PRAGMA table_info("{t}")')} for t in tables if t in present}


Runs = list[tuple[str, str]] | str
_CLAIMS: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
Answer = TypeVar("Answer")
_CLAIMS_LOCK = threading.Lock()


def remembered_runs(
    path: Path, sides: list[Path], kind: str, find: Callable[[Path, list[Path]], Answer]
) -> Answer:
    """``find(path, sides)`` (the runs a store holds), remembered while the file and its side files keep
    their size and mtime: every walk of a root asks again, and a live db would be copied each time."""
    key = (kind, str(path), *(file_signature(p) for p in (path, *sides)))
    with _CLAIMS_LOCK:
        if key in _CLAIMS:
            return _CLAIMS[key]
    runs = find(path, sides)
    with _CLAIMS_LOCK:
        _CLAIMS[key] = runs
        while len(_CLAIMS) > 256:
            _CLAIMS.popitem(last=False)
    return runs


def row_digest(row: tuple[Any, ...]) -> str:
    """A digest of one row's values, exact (floats by ``repr``, text and bytes as stored): a resumed read
    checks that the row it resumes after is still the same row, or the database was rewritten."""
    return hashlib.sha256(repr(tuple(row)).encode()).hexdigest()[:32]


def files_state(paths: list[Path]) -> list[list[int]]:
    """[size, mtime in ns, inode] of each file ([-1, -1, -1] when it cannot be stat-ed)."""
    out = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            out.append([-1, -1, -1])
            continue
        out.append([st.st_size, st.st_mtime_ns, st.st_ino])
    return out


RACY_NS = 2_000_000_000
"""A file changed this recently may change again within the same mtime tick, unseen: it is not memoised."""
_CURRENT: OrderedDict[tuple[Any, ...], tuple[list[list[int]], str, Any]] = OrderedDict()
_CURRENT_LOCK = threading.Lock()


def run_key(kind: str, path: Path, part: str, allowed: list[Path] | None) -> tuple[Any, ...]:
    """What ``still_current`` knows one run of a database by (the served roots decide the side files read)."""
    return (kind, str(path), part, None if allowed is None else tuple(map(str, allowed)))


def still_current(key: tuple[Any, ...], state: list[list[int]], resume: dict[str, Any] | None) -> Any:
    """What ``note_current`` kept for ``key`` when the files are as they were then (``state``) and the
    read resumes where that one stopped; None otherwise. A dashboard following runs asks every few
    seconds, for each run of a project database: an unchanged database is then neither copied nor opened."""
    if not isinstance(resume, dict):
        return None
    with _CURRENT_LOCK:
        known = _CURRENT.get(key)
    if known is None or known[0] != state or known[1] != json.dumps(resume, sort_keys=True, default=str):
        return None
    return copy.deepcopy(known[2])


def note_current(
    key: tuple[Any, ...], state: list[list[int]], taken_ns: int, resume: dict[str, Any], payload: Any
) -> None:
    """Remember that with the files at ``state`` (stat-ed at ``taken_ns``, before the read), a read resuming
    at ``resume`` finds nothing new, and what else it gives (``payload``: the run's facts, the file's
    standing problems). Not when a file changed less than ``RACY_NS`` before: a write in the same mtime
    tick, after the read, would leave the same size and mtime."""
    if any(mtime > taken_ns - RACY_NS for _, mtime, _ in state):
        return
    with _CURRENT_LOCK:
        _CURRENT[key] = (state, json.dumps(resume, sort_keys=True, default=str), copy.deepcopy(payload))
        _CURRENT.move_to_end(key)
        while len(_CURRENT) > 1024:
            _CURRENT.popitem(last=False)


def database_claims(
    path: Path, allowed: list[Path] | None, kind: str, find: Callable[[Path, list[Path]], Runs], what: str
) -> list[Found]:
    """The runs a database of one kind holds, as claims (``find`` names them; a reason when the file is the
    kind's but cannot be read; "" when it is another program's). Nothing outside ``allowed`` is opened."""
    if (allowed is not None and not inside(path, allowed)) or not is_sqlite_file(path):
        return []
    sides, _ = side_files(path, allowed)
    runs = remembered_runs(path, sides, kind, find)
    if isinstance(runs, str):
        return [Found(path, skipped=runs)] if runs else []
    return [Found(path, (path, *sides), what, part=part, label=label) for part, label in runs]


def database_files(path: Path) -> list[Path]:
    """A database and the side files a writer keeps beside it: what decides whether a read is fresh."""
    return [path, *side_files(path)[0]]
