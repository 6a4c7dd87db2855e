"""DI-engine / LightZero experiment folders: text loggers, config text, checkpoints.

Layout (see the project reference): `log/{collector,evaluator,learner}/*_logger.txt`,
`log/serial/` event files (read by tensorboard.py), `formatted_total_config.py`
(kept as text: never imported or executed) and `ckpt/`.

Steps: learner rows use the "Training Iteration N" header, evaluator rows the
table's `train_iter`, collector blocks carry no iteration so they use
`total_envstep_count` (the x-axis of DI-engine's own `collector_step/*` tags).
Text timestamps have no zone; they are read as UTC.

With ``allowed_roots`` every file and the ckpt/ folder is checked before it
is opened, listed or stat-ed: one that links outside the served folders is a
problem, never read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rl_board.metrics.kind import MetricKind, RunSource
from rl_board.metrics.table import Problem, ReadResult, TableSet, merge_results, scalar_value
from rl_board.metrics.tensorboard import read_event_files
from rl_board.sources.claims import Found
from rl_board.sources.roots import OUTSIDE, inside
from rl_board.sources.sniff import DI_ENGINE_LOGGERS as LOGGERS
from rl_board.sources.sniff import is_di_engine_folder, is_event_file

if TYPE_CHECKING:  # frames are built by what reads; annotations only here
    import pandas as pd

STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\]")
KEY_VALUE = re.compile(r"^([A-Za-z_][\w/.-]*):\s*(.*)$")
EPISODE = re.compile(r"env (\d+) finish episode, final reward: (\S+?),? current episode: (\d+)")
ITERATION = re.compile(r"=== Training Iteration (\d+) Result ===")
CKPT_SAVE = re.compile(r"save ckpt in (\S+)")
CKPT_ITER = re.compile(r"iteration_(\d+)")
CONFIG_FILES = ("formatted_total_config.py", "total_config.py")


class DiEngineKind(MetricKind):
    """An experiment folder is one run: its text loggers, the event files under log/, config text and
    checkpoints; nothing below it is looked at again."""

    name = "di-engine"
    label = "DI-engine"
    logs_copies = True

    def claim_folder(
        self, folder: Path, dirs: list[str], files: list[str], allowed: list[Path] | None = None
    ) -> list[Found]:
        if "log" not in dirs or not is_di_engine_folder(folder):  # no stat for folders without log/
            return []
        log = folder / "log"
        events = tuple(sorted(p for p in log.rglob("*") if is_event_file(p)))
        return [Found(folder, events, "DI-engine experiment folder", whole=True)]

    def read(self, source: RunSource, allowed_roots: list[Path] | None) -> ReadResult:
        events = read_event_files(list(source.files), source.run, allowed_roots=allowed_roots)
        texts = read_di_engine_texts(source.path, source.run, allowed_roots=allowed_roots)
        merged = merge_results([events, texts])
        merged.extras = {**texts.extras, "hparams": events.extras.get("hparams", {})}
        return merged

    def watched(self, source: RunSource) -> list[Path]:
        """The event files and every logger, config and checkpoint file under the folder."""
        extra = {p for p in source.path.rglob("*") if p.suffix in {".txt", ".py", ".tar"}}
        return sorted(set(source.files) | extra)


def read_di_engine_texts(folder: Path, run: str, *, allowed_roots: list[Path] | None = None) -> ReadResult:
    """Read the three text loggers, config text and checkpoint listing of one experiment."""
    parts = [_read_logger(folder, role, run, allowed_roots) for role in LOGGERS]
    problems: list[Problem] = []
    config = _config_text(folder, allowed_roots, problems)
    saves = parts[2].extras.get("logged_saves", [])
    checkpoints = checkpoint_listing(folder, saves, allowed_roots=allowed_roots, problems=problems)
    result = merge_results(parts)
    result.problems.extend(problems)
    result.extras = {
        "files": [p.extras["file"] for p in parts if p.extras.get("file")],
        "network_text": parts[2].extras.get("network_text", ""),
        "config_text": config,
        "checkpoints": checkpoints,
    }
    return result


def _refused(path: Path, allowed_roots: list[Path] | None) -> bool:
    """Whether ``path`` resolves outside the allowed roots (a missing file resolves inside: it is missing)."""
    return allowed_roots is not None and not inside(path, allowed_roots)


def _read_logger(folder: Path, role: str, run: str, allowed_roots: list[Path] | None = None) -> ReadResult:
    """Parse one logger file; a missing file yields an empty result (the listing shows it is absent)."""
    path = folder / LOGGERS[role]
    if _refused(path, allowed_roots):
        tables = TableSet(problems=[Problem(str(path), OUTSIDE)])
        return tables.result({"file": {"role": role, "path": LOGGERS[role], "status": "refused"}})
    if not path.is_file():
        return TableSet().result({"file": {"role": role, "path": LOGGERS[role], "status": "missing"}})
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as err:
        tables = TableSet(problems=[Problem(str(path), f"cannot read: {err}")])
        return tables.result({"file": {"role": role, "path": LOGGERS[role], "status": "unreadable"}})
    parser = _LogParser(role=role, run=run, file=str(path))
    for number, line in enumerate(lines, start=1):
        parser.feed(line, number)
    parser.finish()
    stat = path.stat()
    status = "empty" if stat.st_size == 0 else "ok"
    info = {
        "role": role,
        "path": LOGGERS[role],
        "status": status,
        "size": stat.st_size,
        "mtime": stat.st_mtime,
        "records": parser.records,
    }
    return parser.tables.result(
        {"file": info, "network_text": "\n".join(parser.network), "logged_saves": parser.saves}
    )


@dataclass
class _LogParser:
    """A line-at-a-time state machine shared by the three loggers.

    A record opens at a timestamped header (collect end / Training Iteration
    / evaluator table) and is flushed at the next header or at the end of the
    file; a table whose Value row never came (an aborted run) is left out.
    """

    role: str
    run: str
    file: str
    tables: TableSet = field(default_factory=TableSet)
    record: dict[str, str] = field(default_factory=dict)
    wall_time: float = float("nan")
    iteration: int | None = None
    names: list[str] | None = None
    in_network: bool = False
    network: list[str] = field(default_factory=list)
    episodes: list[tuple[int, int, float]] = field(default_factory=list)
    saves: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0

    def feed(self, line: str, number: int) -> None:
        """Consume one line."""
        stamp = STAMP.match(line)
        if stamp:
            self._header(line, stamp.group(1), number)
        elif self.in_network:
            self.network.append(line)
        elif line.startswith("|"):
            self._table_row(line)
        else:
            pair = KEY_VALUE.match(line.strip())
            if pair and self.role == "collector":
                self.record[pair.group(1)] = pair.group(2).strip()

    def _header(self, line: str, stamp: str, number: int) -> None:
        """A timestamped line: maybe flush the open record, then note what this line says."""
        self.in_network = line.rstrip().endswith("DI-engine DRL Policy")
        episode = EPISODE.search(line)
        if episode:
            if self.record:  # a new evaluation round began: the previous one is complete
                self.flush()
            reward = scalar_value(_float_or_none(episode.group(2)))
            if reward is None:
                self.tables.problems.append(Problem(self.file, "unreadable episode reward", number))
            else:
                self.episodes.append((int(episode.group(1)), int(episode.group(3)), reward))
            return
        save = CKPT_SAVE.search(line)
        if save:
            self.saves.append({"path": save.group(1), "logged_at": stamp})
            return
        self.flush()
        self.wall_time = (
            datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
        )
        iteration = ITERATION.search(line)
        if iteration:
            self.iteration = int(iteration.group(1))

    def _table_row(self, line: str) -> None:
        """`| Name | a | b |` then `| Value | 1 | 2 |`: pair the cells into the open record."""
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "Name":
            self.names = cells[1:]
        elif cells and cells[0] == "Value" and self.names and len(cells) - 1 == len(self.names):
            self.record.update(zip(self.names, cells[1:], strict=True))
            self.names = None

    def flush(self) -> None:
        """Turn the open record into rows, with the step each logger uses."""
        if not self.record:
            return
        step = self._step()
        for name, text in self.record.items():
            where = {
                "run": self.run,
                "source": self.role,
                "tag": f"{self.role}/{name}",
                "step": step,
                "wall_time": self.wall_time,
            }
            value = scalar_value(_float_or_none(text))
            if value is None:
                self.tables.texts.add(text=text, **where)
            else:
                self.tables.scalars.add(value=value, **where)
        for env, episode, reward in self.episodes:
            self.tables.episodes.add(run=self.run, train_iter=step, env=env, episode=episode, reward=reward)
        self.records += 1
        self.record, self.episodes = {}, []

    def _step(self) -> int:
        """Learner: header iteration; evaluator: train_iter; collector: total envsteps."""
        key = {"evaluator": "train_iter", "collector": "total_envstep_count"}.get(self.role)
        value = _float_or_none(self.record.get(key, "")) if key else None
        if value is not None:
            return int(value)
        return self.iteration if self.iteration is not None else self.records

    def finish(self) -> None:
        """End of file: flush what is complete."""
        self.flush()


def _float_or_none(text: str) -> float | None:
    """Parse a logged number; None for words such as a checkpoint name."""
    try:
        return float(text)
    except ValueError:
        return None


def _config_text(
    folder: Path, allowed_roots: list[Path] | None = None, problems: list[Problem] | None = None
) -> str:
    """The formatted config as plain text (never executed or imported); a refused file is a problem."""
    for name in CONFIG_FILES:
        path = folder / name
        if _refused(path, allowed_roots):
            if problems is not None:
                problems.append(Problem(str(path), OUTSIDE))
            continue
        if path.is_file():
            try:
                return path.read_text(encoding="utf-8", errors="replace")
            except OSError as err:
                if problems is not None:
                    problems.append(Problem(str(path), f"cannot read: {err}"))
    return ""


def checkpoint_listing(
    folder: Path,
    logged_saves: list[dict[str, Any]],
    *,
    allowed_roots: list[Path] | None = None,
    problems: list[Problem] | None = None,
) -> list[dict[str, Any]]:
    """Files in ckpt/ plus saves the learner logged, so a missing ckpt/ still shows what was saved.

    With ``allowed_roots``, a ckpt/ folder or checkpoint file that links
    outside them is not listed or stat-ed; it is added to ``problems``.
    """
    rows: dict[str, dict[str, Any]] = {}
    ckpt = folder / "ckpt"
    refused: list[Path] = []
    if _refused(ckpt, allowed_roots):
        refused.append(ckpt)
    elif ckpt.is_dir():
        for path in sorted(ckpt.iterdir()):
            if _refused(path, allowed_roots):
                refused.append(path)
                continue
            try:
                if not path.is_file():
                    continue
                stat = path.stat()
            except OSError:
                continue
            rows[path.name] = {
                "name": path.name,
                "size": stat.st_size,
                "mtime": stat.st_mtime,
                "exists": True,
            }
    if problems is not None:
        problems.extend(Problem(str(path), OUTSIDE) for path in refused)
    for save in logged_saves:
        name = Path(save["path"]).name
        row = rows.setdefault(name, {"name": name, "size": None, "mtime": None, "exists": False})
        row.setdefault("logged_at", [])
        row["logged_at"].append(save["logged_at"])
    for row in rows.values():
        row.setdefault("logged_at", [])
        found = CKPT_ITER.search(row["name"])
        row["kind"] = "best" if "best" in row["name"] else ("iteration" if found else "other")
        row["iteration"] = int(found.group(1)) if found else None
    return sorted(rows.values(), key=lambda r: (r["kind"] != "best", r["iteration"] or 0, r["name"]))


def evaluation_summary(episodes: pd.DataFrame) -> pd.DataFrame:
    """Per evaluation (``train_iter``): mean, min, max and count of finite episode rewards."""
    finite = episodes[np.isfinite(episodes["reward"].to_numpy(dtype=float))]
    stats = finite.groupby("train_iter", sort=True)["reward"].agg(["mean", "min", "max", "size"])
    return stats.reset_index()
