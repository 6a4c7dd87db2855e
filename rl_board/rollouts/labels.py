"""Labels and notes people put on samples ("reward hack", "format bug", "good"), kept with the run.

Where they live: one SQLite file in the user's data folder
(``$XDG_DATA_HOME/rl-board/labels.sqlite``, else ``~/.local/share/...``), or a
file a team shares (``$RL_BOARD_LABELS``, ``serve --labels FILE``). Never in
the cache (clearing it keeps them) and never beside the logs unless that file
is chosen to be there.

What keeps them on their sample: a label is keyed by the run (its resolved
path or URL), the step, the file and line the sample was read from, and a
digest of its prompt and response. A run that grows, new rank files, a rebuilt
cache: none moves a sample's file and line. A log rewritten in another order
is found again by the digest within the step.

Tag and note text is the user's, untrusted like model text: it is stored as
given (bounded: ``MAX_TAG``, ``MAX_NOTE`` characters) and shown as text.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rl_board import private
from rl_board.errors import InvalidArgumentError, RLBoardError

if TYPE_CHECKING:  # imported when a labels file is opened: `rl-board query` opens none
    import sqlite3

MAX_TAG = 64
MAX_NOTE = 4000
SUGGESTED = ("reward hack", "format bug", "loop", "language mixing", "truncated", "good")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS labels (
    run TEXT NOT NULL, step INTEGER NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL, digest TEXT NOT NULL,
    tag TEXT NOT NULL, note TEXT NOT NULL DEFAULT '', created REAL NOT NULL, updated REAL NOT NULL,
    PRIMARY KEY (run, step, file, line, tag)
);
CREATE INDEX IF NOT EXISTS labels_by_digest ON labels (run, step, digest);
"""


@dataclass(frozen=True)
class Label:
    """One tag (with its note) on one sample."""

    run: str
    step: int
    file: str
    line: int
    digest: str
    tag: str
    note: str
    created: float
    updated: float

    def to_dict(self) -> dict:
        return asdict(self)


def digest(prompt: str | None, response: str | None) -> str:
    """What a sample says, in 16 hex digits: finds it again if its log was rewritten in another order."""
    raw = f"{prompt or ''}\x00{response or ''}".encode("utf-8", "surrogatepass")
    return hashlib.sha1(raw).hexdigest()[:16]


def checked_tag(tag: str) -> str:
    """A tag as stored: trimmed, 1 to MAX_TAG characters, no control characters."""
    text = " ".join(str(tag).split())
    if not text:
        raise InvalidArgumentError("a tag needs at least one character")
    if len(text) > MAX_TAG:
        raise InvalidArgumentError(f"a tag is at most {MAX_TAG} characters (this one has {len(text)})")
    return text


def checked_note(note: str | None) -> str:
    text = "" if note is None else str(note).replace("\x00", "")
    if len(text) > MAX_NOTE:
        raise InvalidArgumentError(f"a note is at most {MAX_NOTE} characters (this one has {len(text)})")
    return text


class LabelStore:
    """The labels of every run, in one SQLite file (opened per call: several servers and the CLI may share
    it)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path).expanduser()

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """A connection in one transaction; a file that cannot be made, opened or written is the user's to fix
        (RLBoardError naming it), not a crash."""
        import sqlite3

        try:
            private.sqlite_file(self.path)  # a new file is 0600 (its journal too); one that exists is kept
            con = sqlite3.connect(self.path, timeout=10)
        except (OSError, sqlite3.Error) as exc:
            raise RLBoardError(f"cannot open the labels file {self.path}: {exc}") from None
        try:
            con.executescript(_SCHEMA)
            with con:
                yield con
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
            raise RLBoardError(f"cannot use the labels file {self.path}: {exc}") from None
        finally:
            con.close()

    def put(
        self,
        *,
        run: str,
        step: int,
        file: str,
        line: int,
        sample_digest: str,
        tag: str,
        note: str | None = None,
    ) -> Label:
        """Tag a sample (a tag it has already gets the new note, when one is given)."""
        tag, text, now = checked_tag(tag), checked_note(note), time.time()
        with self._db() as con:
            con.execute(
                "INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run, step, file, line, "
                "tag) DO UPDATE SET note = CASE WHEN ? THEN excluded.note ELSE note END, digest = "
                "excluded.digest, updated = excluded.updated",
                (run, int(step), file, int(line), sample_digest, tag, text, now, now, note is not None),
            )
        return next(
            x
            for x in self.of_sample(run=run, step=step, file=file, line=line, sample_digest=sample_digest)
            if x.tag == tag
        )

    def put_many(self, keys: list[dict], *, tag: str, note: str | None = None) -> int:
        """Tag several samples at once (each key as ``RolloutStore.label_key`` gives it), in one transaction:
        the step browser's selected rows. Returns how many were tagged."""
        tag, text, now = checked_tag(tag), checked_note(note), time.time()
        rows = [
            (
                k["run"],
                int(k["step"]),
                k["file"],
                int(k["line"]),
                k["sample_digest"],
                tag,
                text,
                now,
                now,
                note is not None,
            )
            for k in keys
        ]
        with self._db() as con:
            con.executemany(
                "INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run, step, file, line, "
                "tag) DO UPDATE SET note = CASE WHEN ? THEN excluded.note ELSE note END, digest = "
                "excluded.digest, updated = excluded.updated",
                rows,
            )
        return len(rows)

    def remove_many(self, keys: list[dict], *, tag: str) -> int:
        """Take a tag off several samples in one transaction; how many had it."""
        tag = checked_tag(tag)
        gone = 0
        with self._db() as con:
            for k in keys:
                gone += con.execute(
                    "DELETE FROM labels WHERE run = ? AND step = ? AND file = ? AND line = ? AND tag = ?",
                    (k["run"], int(k["step"]), k["file"], int(k["line"]), tag),
                ).rowcount
        return gone

    def remove(self, *, run: str, step: int, file: str, line: int, tag: str) -> bool:
        """Take a tag off a sample; False when it did not have it."""
        with self._db() as con:
            gone = con.execute(
                "DELETE FROM labels WHERE run = ? AND step = ? AND file = ? AND line = ? AND tag = ?",
                (run, int(step), file, int(line), checked_tag(tag)),
            ).rowcount
        return gone > 0

    def of_run(self, run: str) -> list[Label]:
        """Every label of a run, by step, file, line and tag."""
        if not self.path.exists():  # reading never makes the file: only a first label does
            return []
        with self._db() as con:
            rows = con.execute(
                "SELECT * FROM labels WHERE run = ? ORDER BY step, file, line, tag", (run,)
            ).fetchall()
        return [Label(*row) for row in rows]

    def of_sample(self, *, run: str, step: int, file: str, line: int, sample_digest: str) -> list[Label]:
        """A sample's labels: by its place, else (its log rewritten) by what it says within its step."""
        if not self.path.exists():
            return []
        with self._db() as con:
            rows = con.execute(
                "SELECT * FROM labels WHERE run = ? AND step = ? AND file = ? AND line = ? ORDER BY tag",
                (run, int(step), file, int(line)),
            ).fetchall()
            if not rows:
                rows = con.execute(
                    "SELECT * FROM labels WHERE run = ? AND step = ? AND digest = ? ORDER BY tag",
                    (run, int(step), sample_digest),
                ).fetchall()
        return [Label(*row) for row in rows]

    def version(self, run: str) -> str:
        """Changes whenever a label of ``run`` is added, removed or given a new note (by any process): what
        views that show tags cache on, so they ask the file once per change, not once per click."""
        if not self.path.exists():
            return "none"
        with self._db() as con:
            count, newest, total = con.execute(
                "SELECT count(*), max(updated), total(updated) FROM labels WHERE run = ?", (run,)
            ).fetchone()
        return f"{count}:{newest!r}:{total!r}"

    def tags(self, run: str | None = None) -> list[str]:
        """Tags in use (of one run, or of all), the suggested ones first."""
        if not self.path.exists():
            return list(SUGGESTED)
        with self._db() as con:
            query = "SELECT DISTINCT tag FROM labels" + (" WHERE run = ?" if run else "")
            used = [r[0] for r in con.execute(query, (run,) if run else ()).fetchall()]
        return list(dict.fromkeys([*SUGGESTED, *sorted(used)]))
