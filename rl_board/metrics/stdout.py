"""Metrics printed as text: ROLL's stdout tracker, verl's console logger, plain JSONL (verl's file logger too).

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
from rl_board.metrics.table import Problem, ReadResult, TableSet, scalar_value
from rl_board.rollouts.read.records import (
    DEPTH_REASON,
    may_hold_surrogates,
    too_deep,
    too_long_reason,
    without_lone_surrogates,
)
from rl_board.sources.catalogue import NO_METRIC_LINES
from rl_board.sources.sniff import ROLLOUT_KEYS, STEP_KEYS

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
            target.problems.append(Problem(str(path), too_long_reason(size, config.sizes().max_line_bytes), number))
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
    text: str, raw: bytes, number: int, file: str, run: str, tables: TableSet, formats: set[str],
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
