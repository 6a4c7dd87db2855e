"""Files and folders only their owner can open: what rl-board writes is for the user who runs it.

A training cluster's login node is shared: the rollout cache (the samples themselves, as Arrow segments),
the metrics cache and index and the labels database must not be readable by the other users of the machine,
whatever the umask (``umask 000`` included). Every place that creates one goes through here: a folder it
makes is 0700, a file it creates is 0600 from the moment it exists (created with that mode, then set
exactly, since a umask can only take bits away). What already exists is left as it is, except a file
rl-board rewrites in its own cache (``open_file``). ``open_to_others`` tells a folder that others can
already read or write (the server warns at start).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO, Any

FILE_MODE = 0o600
DIR_MODE = 0o700
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def make_dir(path: str | Path) -> Path:
    """``mkdir -p`` whose every folder it creates is 0700 (folders that exist are left alone)."""
    path = Path(path)
    missing: list[Path] = []
    here = path
    while not here.exists() and here != here.parent:
        missing.append(here)
        here = here.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)  # never more than 0700, whatever the umask
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs to keep as it is
        os.chmod(folder, DIR_MODE)  # a umask that took the owner's bits away does not stand either
    if not path.is_dir():
        raise FileExistsError(f"not a folder: {path}")
    return path


def tighten(path: str | Path) -> None:
    """Make a file rl-board has just written 0600 (a folder 0700)."""
    os.chmod(path, DIR_MODE if Path(path).is_dir() else FILE_MODE)


def tighten_tree(path: str | Path) -> None:
    """``tighten`` a folder rl-board has just filled, and everything in it (before it is renamed into
    place)."""
    tighten(path)
    for folder, dirs, files in os.walk(path):
        for name in dirs:
            os.chmod(os.path.join(folder, name), DIR_MODE)
        for name in files:
            os.chmod(os.path.join(folder, name), FILE_MODE)


_FLAGS = {
    "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "a+": os.O_RDWR | os.O_CREAT | os.O_APPEND,
    "w+": os.O_RDWR | os.O_CREAT | os.O_TRUNC,
}


def open_file(path: str | Path, mode: str = "w", **kwargs: Any) -> IO[Any]:
    """``open(path, mode)`` for writing ("w", "a", "a+", "w+", each also with "b") of a file in rl-board's
    own folders: created 0600, and one found with another mode (an older cache) is made 0600 too."""
    flags = _FLAGS[mode.replace("b", "")] | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, FILE_MODE)
    try:
        st = os.fstat(fd)
        if stat.S_IMODE(st.st_mode) != FILE_MODE and st.st_uid == os.getuid():
            os.fchmod(fd, FILE_MODE)
        return os.fdopen(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise


def write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """``Path.write_text`` of a 0600 file."""
    with open_file(path, "w", encoding=encoding) as handle:
        handle.write(text)


def touch(path: str | Path) -> None:
    """``Path.touch`` of a 0600 file (one that exists only gets a new mtime)."""
    if Path(path).exists():
        os.utime(path)
        return
    with open_file(path, "a"):
        pass


def sqlite_file(path: str | Path) -> bool:
    """Make an SQLite database's file before ``sqlite3.connect`` does, 0600 in a 0700 folder; True if it
    was made now.

    SQLite gives its -wal, -shm and -journal files the database file's mode, so they are 0600 too. A
    database that exists is left as it is: a labels file a team shares was made readable on purpose.
    """
    path = Path(path)
    make_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    for suffix in SQLITE_SIDECARS:  # left over from a database deleted without them: SQLite would use them
        with contextlib.suppress(FileNotFoundError):
            os.chmod(f"{path}{suffix}", FILE_MODE)
    return True


def open_to_others(path: str | Path) -> bool:
    """Whether a folder exists and its group or other users may read, write or enter it."""
    try:
        return bool(os.stat(path).st_mode & 0o077)
    except OSError:
        return False
