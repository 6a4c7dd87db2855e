"""Metrics printed as text: ROLL's stdout tracker, verl's console logger, plain JSONL (verl's file logger
too).

The three share one line-by-line pass so a log holding several formats is
read once. Reading can start at a byte offset, which lets the cache append
what a growing log gained instead of reading it again. A last line without
its newline is "not written yet": it is parsed but never committed to the
offset, so the next read sees it again, whole.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rl_board import config
from rl_board.metrics.kind import NOT_METRICS, RUN_KIND, Appended, MetricKind, RunSource
from rl_board.metrics.table import Problem, ReadResult, TableSet, scalar_value
from rl_board.rollouts.read.records import (
    DEPTH_REASON,
    may_hold_surrogates,
    too_deep,
    too_long_reason,
    without_lone_surrogates,
)
from rl_board.sources.catalogue import NO_METRIC_LINES, TEXT_LOG_SUFFIXES, remembered
from rl_board.sources.claims import Found
from rl_board.sources.sniff import JSON_LINES_SUFFIXES, ROLLOUT_KEYS, STEP_KEYS

ROLL_SOURCE = "roll-stdout"
VERL_SOURCE = "verl-console"
JSONL_SOURCE = "jsonl"

ROLL_MARKER = b"metrics_tag:"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
VERL_STEP = re.compile(r"(?:^|[\s|)\]>:])step:\s*(\d+)\s+-\s+(.*)$")
WRAPPED_NUMBER = re.compile(r"^(?:np\.)?(?:float|int)\d*\((.*)\)$")
REDUCER_SUFFIX = re.compile(r"@[A-Za-z_]+$")
TIME_KEYS = ("wall_time", "_timestamp", "timestamp", "time")


@dataclass
class TextProgress:
    """Where a previous read stopped: committed byte offset and line count."""

    offset: int = 0
    lines: int = 0


@dataclass
class TextRead:
    """The result of reading a text log from some offset."""

    committed: ReadResult
    tail: ReadResult
    progress: TextProgress
    formats: set[str] = field(default_factory=set)
    rollout_file: bool = False


class TextLogKind(MetricKind):
    """A text log (``.log .txt .out .err``) or a JSON-lines file that holds metric lines: ROLL's stdout
    tracker, verl's console and file loggers, plain JSONL. It is read from where the last read stopped."""

    name = "text-log"
    label = "text log"
    variants = {"stdout": "text log", JSONL_SOURCE: "JSONL"}
    appends = True

    def may_claim(self, path: Path) -> bool:
        return path.suffix.lower() in TEXT_LOG_SUFFIXES

    def claim_file(self, path: Path, allowed: list[Path] | None = None) -> list[Found]:
        suffix = path.suffix.lower()
        if suffix not in TEXT_LOG_SUFFIXES and suffix not in JSON_LINES_SUFFIXES:
            return []
        why_not = remembered(path, "metric lines", lambda: _why_not_read(path), UNREADABLE)
        if why_not and suffix in JSON_LINES_SUFFIXES and why_not != UNREADABLE:
            return []  # JSON lines without metric lines: what the catalogue's sniff found in them says more
        if why_not:
            return [Found(path, skipped=why_not)]
        return [Found(path, (path,), "text log (read for metric lines)")]

    def read_from(
        self, source: RunSource, resume: dict[str, Any] | None, allowed_roots: list[Path] | None
    ) -> Appended:
        start = TextProgress(int((resume or {}).get("offset", 0)), int((resume or {}).get("lines", 0)))
        read = read_text_metrics(source.path, source.run, start=start)
        extras: dict[str, Any] = {"formats": sorted(read.formats)}
        if read.rollout_file:
            extras[NOT_METRICS] = "rollout samples, not metric lines"
        read.committed.extras = extras
        return Appended(
            read.committed, read.tail, {"offset": read.progress.offset, "lines": read.progress.lines}
        )

    def merge_extras(self, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        """The line formats seen so far decide what the log is (``stdout`` or ``jsonl``)."""
        formats = sorted(set(old.get("formats", [])) | set(new.get("formats", [])))
        out: dict[str, Any] = {"formats": formats}
        if new.get(NOT_METRICS) or not formats:
            out[NOT_METRICS] = new.get(NOT_METRICS) or NO_METRIC_LINES
        else:
            out[RUN_KIND] = JSONL_SOURCE if formats == [JSONL_SOURCE] else "stdout"
        return out


UNREADABLE = "a broken or looping symbolic link, or a file that cannot be looked at; never opened"


def _why_not_read(path: Path) -> str:
    """Why a text file is not a metric source ("" when it is): a pipe or device named like a log is never
    opened (it could wait forever); a file without a metric line the reader knows is named as such."""
    if not path.is_file():
        return "not a regular file; never opened"
    return why_no_metric_lines(path)


def read_text_metrics(path: Path, run: str, *, start: TextProgress | None = None) -> TextRead:
    """Read ROLL / verl / JSONL metric lines from `path`, beginning at `start`."""
    progress = TextProgress(**vars(start or TextProgress()))
    committed, tail = TableSet(), TableSet()
    formats: set[str] = set()
    jsonl = _JsonlState(path.suffix.lower() in {".jsonl", ".ndjson"})
    for raw, complete, size in _lines(path, progress.offset, committed.problems):
        number = progress.lines + 1
        target = committed if complete else tail
        if raw is None:
            target.problems.append(
                Problem(str(path), too_long_reason(size, config.sizes().max_line_bytes), number)
            )
        else:
            _parse_line(raw, number, str(path), run, target, formats, jsonl)
        if jsonl.rollouts:
            return TextRead(committed.result(), tail.result(), progress, formats, rollout_file=True)
        if complete:
            progress.offset += size
            progress.lines = number
    tail.problems.clear()  # an unfinished last line is "not written yet", not damage
    return TextRead(committed.result(), tail.result(), progress, formats)


def why_no_metric_lines(path: Path) -> str:
    """The catalogue's text-log check: "" when the file holds a metric line, else why it is not read."""
    if has_metric_lines(path):
        return ""
    try:
        longer = path.stat().st_size > config.sizes().text_sniff_bytes
    except OSError:
        longer = False
    return NO_METRIC_LINES + (f" in its first {config.sizes().text_sniff_bytes >> 20} MB" if longer else "")


def has_metric_lines(path: Path, *, limit: int | None = None) -> bool:
    """Whether the first ``limit`` bytes of a text file hold a line this module reads as metrics.

    The catalogue's test for ``.log`` / ``.txt`` / ``.out`` / ``.err`` files: the same line parser as
    ``read_text_metrics``, so a file listed as a metric source is one the reader finds metrics in. A file
    that cannot be read counts as one (the reader then names why). Lines that cannot be metric lines (no
    ``metrics_tag:``, no ``step:``, not an object) are passed over unparsed.
    """
    limit = config.sizes().text_sniff_bytes if limit is None else limit
    tables, formats, unreadable = TableSet(), set[str](), list[Problem]()
    jsonl = _JsonlState(path.suffix.lower() in {".jsonl", ".ndjson"})
    seen = 0
    for raw, _, size in _lines(path, 0, unreadable):
        if raw is not None and (ROLL_MARKER in raw or b"step:" in raw or raw.lstrip().startswith(b"{")):
            _parse_line(raw, 0, str(path), "", tables, formats, jsonl)
            if jsonl.rollouts or formats:
                return not jsonl.rollouts
        seen += size
        if seen >= limit:
            break
    return bool(unreadable)


def _lines(path: Path, offset: int, problems: list[Problem]) -> Iterator[tuple[bytes | None, bool, int]]:
    """``(line, complete, bytes)`` from `offset` on; complete = ends with a newline. A line longer than
    ``Sizes.max_line_bytes`` comes as None: it is skipped in ``Sizes.scan_bytes`` reads, never held whole."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            longest = config.sizes().max_line_bytes
            while raw := handle.readline(longest + 1):
                if len(raw) <= longest:
                    yield raw, raw.endswith(b"\n"), len(raw)
                    continue
                size, complete = len(raw), raw.endswith(b"\n")
                del raw
                while not complete and (chunk := handle.read(config.sizes().scan_bytes)):
                    cut = chunk.find(b"\n")
                    complete = cut >= 0
                    if complete:
                        handle.seek(cut + 1 - len(chunk), 1)  # back to just after the newline
                    size += cut + 1 if complete else len(chunk)
                yield None, complete, size
    except OSError as err:
        problems.append(Problem(str(path), f"cannot read: {err}"))


@dataclass
class _JsonlState:
    """What a pass has learnt about plain JSON lines in this file."""

    expect_json: bool
    rollouts: bool = False


def _parse_line(
    raw: bytes, number: int, file: str, run: str, tables: TableSet, formats: set[str], jsonl: _JsonlState
) -> None:
    """Dispatch one line to the format it looks like; other lines are log noise."""
    if ROLL_MARKER in raw:
        _parse_roll(raw, number, file, run, tables, formats)
        return
    text = raw.decode("utf-8", "replace").strip()
    if text.startswith("{"):
        if too_deep(raw):  # json.loads and _flatten recurse
            if jsonl.expect_json:
                tables.problems.append(Problem(file, DEPTH_REASON, number))
            return
        _parse_jsonl(text, raw, number, file, run, tables, formats, jsonl)
        return
    if "step:" in text:
        _parse_verl(ANSI.sub("", text), run, tables, formats)
    elif jsonl.expect_json and text:
        tables.problems.append(Problem(file, "not a JSON object", number))


def _parse_roll(raw: bytes, number: int, file: str, run: str, tables: TableSet, formats: set[str]) -> None:
    """`<prefix> metrics_tag: {"step": N, "metrics": {...}}`."""
    data = raw.split(ROLL_MARKER, 1)[1]
    if too_deep(data):  # json.loads and _flatten recurse
        tables.problems.append(Problem(file, f"metrics_tag line is {DEPTH_REASON}", number))
        return
    payload = data.decode("utf-8", "replace").strip()
    try:
        record = _loaded(payload, data)
        step = int(record["step"])
        metrics = record["metrics"]
    except (ValueError, KeyError, TypeError) as err:
        tables.problems.append(Problem(file, f"metrics_tag line is not step/metrics JSON: {err}", number))
        return
    if not isinstance(metrics, dict):
        tables.problems.append(Problem(file, "metrics_tag 'metrics' is not an object", number))
        return
    formats.add(ROLL_SOURCE)
    for name, raw_value in _flatten(metrics):
        _add_value(tables, run, ROLL_SOURCE, REDUCER_SUFFIX.sub("", name), step, raw_value, keep_text=True)


def _parse_verl(text: str, run: str, tables: TableSet, formats: set[str]) -> None:
    """`<prefix> step:N - name:value - name:value ...` (names may contain ':' only before the value)."""
    match = VERL_STEP.search(text)
    if not match:
        return
    step = int(match.group(1))
    found = False
    for piece in match.group(2).split(" - "):
        name, sep, raw_value = piece.strip().rpartition(":")
        value = _number(raw_value) if sep and name else None
        if value is not None:
            tables.scalars.add(run=run, source=VERL_SOURCE, tag=name.strip(), step=step, value=value)
            found = True
    if found:
        formats.add(VERL_SOURCE)


def _number(text: str) -> float | None:
    """Parse a printed number, unwrapping numpy reprs like `np.float64(0.5)`."""
    text = text.strip()
    wrapped = WRAPPED_NUMBER.match(text)
    if wrapped:
        text = wrapped.group(1)
    try:
        return float(text)
    except ValueError:
        return scalar_value(text)


def _loaded(text: str, raw: bytes) -> Any:
    """json.loads, with lone surrogates (``\\ud83d`` alone) replaced: no Arrow string can hold one."""
    value = json.loads(text)
    return without_lone_surrogates(value)[0] if may_hold_surrogates(raw) else value


def _parse_jsonl(
    text: str,
    raw: bytes,
    number: int,
    file: str,
    run: str,
    tables: TableSet,
    formats: set[str],
    jsonl: _JsonlState,
) -> None:
    """A plain JSON object with a step and scalar fields; rollout records end the file's reading."""
    try:
        record = _loaded(text, raw)
    except ValueError as err:
        if jsonl.expect_json:
            tables.problems.append(Problem(file, f"invalid JSON: {err}", number))
        return
    if not isinstance(record, dict):
        return
    if ROLLOUT_KEYS & record.keys():
        jsonl.rollouts = True
        return
    step = _step_of(record)
    if step is None:
        if jsonl.expect_json:
            tables.problems.append(Problem(file, "JSON line has no step field", number))
        return
    wall_time = _wall_time_of(record)
    formats.add(JSONL_SOURCE)
    skip = {*STEP_KEYS, *TIME_KEYS}
    for name, raw_value in _flatten(_metrics_of(record)):
        if name not in skip:
            _add_value(tables, run, JSONL_SOURCE, name, step, raw_value, wall_time=wall_time)


def _metrics_of(record: dict[str, Any]) -> dict[str, Any]:
    """The metrics of a JSON line: verl's file logger wraps them as ``{"step": N, "data": {...}}``, and
    ``data``'s keys are verl's metric names themselves (``actor/kl_loss``), which the glossary and the
    health rules know; any other record is its own metrics."""
    data = record.get("data")
    if isinstance(data, dict) and record.keys() - {"data"} <= {*STEP_KEYS, *TIME_KEYS}:
        return data
    return record


def _step_of(record: dict[str, Any]) -> int | None:
    """The first integer-like step field of a record."""
    for key in STEP_KEYS:
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return int(value)
    return None


def _wall_time_of(record: dict[str, Any]) -> float:
    """A numeric time field in seconds, NaN when there is none."""
    for key in TIME_KEYS:
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return math.nan


def _flatten(mapping: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Nested dicts become slash-joined names, as trackers name grouped metrics."""
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _flatten(value, f"{name}/")
        else:
            yield name, value


def _add_value(
    tables: TableSet,
    run: str,
    source: str,
    tag: str,
    step: int,
    raw: Any,
    *,
    keep_text: bool = False,
    wall_time: float = math.nan,
) -> None:
    """Numbers go to scalars; strings to texts when the format logs text; the rest is dropped."""
    value = scalar_value(raw)
    where = {"run": run, "source": source, "tag": tag, "step": step, "wall_time": wall_time}
    if value is not None:
        tables.scalars.add(value=value, **where)
    elif keep_text and isinstance(raw, str):
        tables.texts.add(text=raw, **where)
