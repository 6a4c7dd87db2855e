"""W&B's local run log, read without wandb: ``wandb/run-<time>-<id>/run-<id>.wandb`` (``offline-run-…``).

Every W&B run, online or offline, writes all it logs to this transaction log first (wandb 0.31:
``core/internal/transactionlog``). Layout (``core/pkg/leveldb/record.go``): a 7-byte header (``:W&B``,
uint16 0xBEE1, uint8 version 0), then LevelDB's log framing, as SwanLab's run log has it (read by
``leveldb_log``: 32 KiB blocks of chunks, each checked with zlib's CRC-32, ``CRCAlgoIEEE``). Each record
is a protobuf ``wandb_internal.Record`` (``wandb/proto/wandb_internal.proto``), decoded here with a
private schema of the few fields read: history 2, summary 3, config 5, metric 12, run 17.

A history row is a list of items ``{key 1 | nested_key 2 (repeated), value_json 16}``; wandb 0.31
writes every key as ``nested_key`` and flattens a logged dict into several items, so ``{"a": {"b": 1}}``
is ``a.b`` (as W&B shows it) and a media object (a table, a histogram) is a group of items under its
key, one of them ``<key>._type``. Values are JSON text: NaN and +-inf are the bare tokens ``NaN``,
``Infinity``, ``-Infinity``. (A run set to ``x_history_value_encoding="json,typed"`` also writes a typed
copy, fields 3-8, used here only where ``value_json`` is missing.)

Steps: the trainer's. A run that declares a step metric (``define_metric("*",
step_metric="train/global_step")``, as transformers' callback does for TRL: a MetricRecord with
``glob_name`` "*" and ``step_metric``; a glob is a prefix ending in ``*``) has each point at that
metric's value in the same row; otherwise, or in a row without it, at ``_step`` (the ``step=`` given
to ``log``, or wandb's count of log calls). ``_timestamp`` is the wall time.

Reading is columnar: each history item's bytes are split into key and value with numpy over one
joined buffer, and the values are parsed as numbers by Arrow; only items of another shape (nested
keys, media) go through protobuf one by one.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np
import pyarrow as pa

from rl_board.lazy import pc
from rl_board.metrics.kind import Appended, LoggedTable, MetricKind, RunSource
from rl_board.metrics.leveldb_log import BLOCK as BLOCK  # the framing's block, named here too
from rl_board.metrics.leveldb_log import LogFile, Scan
from rl_board.metrics.protowire import slices
from rl_board.metrics.table import Problem, TableSet
from rl_board.sources.claims import Found
from rl_board.sources.roots import OUTSIDE, inside

# protobuf is imported by what decodes a record: finding W&B runs (the catalogue) needs none of it
if TYPE_CHECKING:
    from google.protobuf.message import Message

SOURCE = "wandb"
HEADER = b":W&B\xe1\xbe"
"""The log's first 6 bytes: ident and magic 0xBEE1 (little-endian); the version byte follows."""
VERSION = 0
INTERNAL = frozenset({"_step", "_runtime", "_timestamp"})
"""Row keys W&B adds itself: the step, seconds since the run started, and the wall time."""
NOT_A_LOG = "not a W&B run log"

_NUMBER_START = np.frombuffer(b"-0123456789NI", dtype=np.uint8)
"""First bytes of JSON text that is a number (W&B writes NaN and +-inf as bare tokens)."""


# ---------------------------------------------------------------- the private protobuf schema


@functools.cache
def _pb() -> dict[str, type[Message]]:
    """Message classes for the few fields of ``wandb_internal.proto`` read here, in a pool of our own
    (so nothing clashes with wandb's classes when both are imported). Field numbers: wandb 0.31."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field_type = descriptor_pb2.FieldDescriptorProto
    types = {
        "bytes": field_type.TYPE_BYTES,
        "string": field_type.TYPE_STRING,
        "int64": field_type.TYPE_INT64,
        "int32": field_type.TYPE_INT32,
        "bool": field_type.TYPE_BOOL,
        "sint64": field_type.TYPE_SINT64,
        "double": field_type.TYPE_DOUBLE,
    }
    package = "rl_board.wandb_log"
    proto = descriptor_pb2.FileDescriptorProto(
        name="rl_board/wandb_log.proto", package=package, syntax="proto3"
    )

    def message(name: str, *fields: str, oneof: str = "") -> None:
        """``fields``: "[repeated ]type name number[ oneof]"; a capitalised type is a message."""
        spec = proto.message_type.add(name=name)
        if oneof:
            spec.oneof_decl.add(name=oneof)
        for text in fields:
            words = text.split()
            repeated = words[0] == "repeated"
            kind, fname, number = words[1:4] if repeated else words[:3]
            entry = spec.field.add(name=fname, number=int(number))
            entry.label = field_type.LABEL_REPEATED if repeated else field_type.LABEL_OPTIONAL
            if kind[0].isupper():
                entry.type, entry.type_name = field_type.TYPE_MESSAGE, f".{package}.{kind}"
            else:
                entry.type = types[kind]
            if words[-1] == "oneof":
                entry.oneof_index = 0

    # Record: the record types read, each kept as its bytes or as a shallow view of its items.
    message(
        "Record",
        "History history 2 oneof",
        "Updates summary 3 oneof",
        "Updates config 5 oneof",
        "bytes metric 12 oneof",
        "bytes run 17 oneof",
        oneof="record_type",
    )
    message("History", "repeated bytes item 1", "Step step 2")  # HistoryRecord: items left as bytes
    message("Step", "int64 num 1")
    message("Updates", "repeated bytes update 1", "repeated bytes remove 2")  # SummaryRecord, ConfigRecord
    # HistoryItem / SummaryItem / ConfigItem (the typed value, fields 3-8, only in HistoryItem).
    message(
        "Item",
        "string key 1",
        "repeated string nested_key 2",
        "int32 none 3 oneof",
        "bool boolean 4 oneof",
        "sint64 integer 5 oneof",
        "double number 6 oneof",
        "string text 7 oneof",
        "string json 8 oneof",
        "string value_json 16",
        oneof="value",
    )
    message("Metric", "string name 1", "string glob_name 2", "string step_metric 4", "Control control 9")
    message("Control", "bool overwrite 1")
    message(
        "Run",
        "string run_id 1",
        "string entity 2",
        "string project 3",
        "bytes config 4",
        "bytes summary 5",
        "string display_name 8",
        "Timestamp start_time 17",
    )
    message("Timestamp", "int64 seconds 1", "int32 nanos 2")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {
        spec.name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{spec.name}"))
        for spec in proto.message_type
    }


# ---------------------------------------------------------------- the kind


class WandbKind(MetricKind):
    """A W&B run folder (``run-*`` online, ``offline-run-*`` offline) holding its ``run-<id>.wandb`` log."""

    name = "wandb"
    label = "W&B"
    appends = True

    def claim_folder(
        self, folder: Path, dirs: list[str], files: list[str], allowed: list[Path] | None = None
    ) -> list[Found]:
        """A run folder is one run, claimed whole; ``wandb/`` itself and its ``latest-run`` link are not."""
        mode = run_folder_mode(folder.name)
        log = _log_name(folder.name, files) if mode else None
        if log is None:
            return []
        return [Found(path=folder, files=(folder / log,), reason=f"W&B run ({mode})", whole=True)]

    def may_claim(self, path: Path) -> bool:
        """A ``run-<id>.wandb`` file, by its name."""
        return path.name.startswith("run-") and path.name.endswith(".wandb")

    def watched(self, source: RunSource) -> list[Path]:
        """The run's log: the only file a read opens."""
        return [run_log(source)]

    def read_from(
        self, source: RunSource, resume: dict[str, Any] | None, allowed_roots: list[Path] | None
    ) -> Appended:
        """The run's points from ``resume`` on: complete records are committed; a record still being
        written is left for the next read (``resume["offset"]`` is where it starts)."""
        path = run_log(source)
        state = _State.from_resume(resume)
        tables, tail = TableSet(), TableSet()
        if allowed_roots is not None and not inside(path, allowed_roots):
            tables.problems.append(Problem(str(path), OUTSIDE))
        else:
            _read_log(path, source.run, state, tables, tail)
        return Appended(committed=tables.result(state.extras()), tail=tail.result(), resume=state.resume())


def run_folder_mode(name: str) -> str:
    """What a folder's name says it is: an "offline" or "online" W&B run folder, or "" (not one)."""
    if name.startswith("offline-run-"):
        return "offline"
    return "online" if name.startswith("run-") else ""


def _log_name(folder_name: str, files: list[str]) -> str | None:
    """The run's log among the folder's files: ``run-<id>.wandb``, the id ending the folder's name."""
    own = f"run-{folder_name.rsplit('-', 1)[-1]}.wandb"
    if own in files:
        return own
    logs = [name for name in files if name.startswith("run-") and name.endswith(".wandb")]
    return logs[0] if len(logs) == 1 else None


def run_log(source: RunSource) -> Path:
    """The ``.wandb`` file of a run source (its claimed file, or the one in its folder)."""
    if source.files:
        return source.files[0]
    if source.path.suffix == ".wandb":
        return source.path
    try:
        files = [entry.name for entry in os.scandir(source.path)]
    except OSError:
        files = []
    return source.path / (_log_name(source.path.name, files) or f"run-{source.path.name}.wandb")


# ---------------------------------------------------------------- what a read carries to the next one


@dataclass
class _State:
    """What the records read so far declared, carried in ``resume`` so a resumed read knows it."""

    offset: int = 0
    rows: int = 0
    names: dict[str, str] = field(default_factory=dict)
    """Metrics defined by name -> their step metric ("" for none)."""
    globs: dict[str, str] = field(default_factory=dict)
    """Metrics defined by a glob (a prefix ending in ``*``) -> their step metric."""
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    stepped: dict[str, int] = field(default_factory=dict)
    """Points placed at each declared step metric's value."""
    fallback: int = 0
    """Points whose row lacked their declared step metric (placed at ``_step``)."""
    own: int = 0
    """Points of series that declare no step metric (placed at ``_step``)."""

    @classmethod
    def from_resume(cls, resume: dict[str, Any] | None) -> _State:
        known = {name: value for name, value in (resume or {}).items() if name in cls.__dataclass_fields__}
        return cls(**known)

    def resume(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def define(self, metric: Message) -> None:
        """A MetricRecord: later ones update earlier ones (``overwrite`` replaces), as wandb's core does."""
        table, key = (self.names, metric.name) if metric.name else (self.globs, metric.glob_name)
        if not key:
            return
        if metric.control.overwrite or key not in table:
            table[key] = ""
        if metric.step_metric:
            table[key] = metric.step_metric

    def step_metric(self, name: str) -> str:
        """The step metric of a series ("" for ``_step``): its own definition, else the longest glob
        that matches it (wandb expands globs only for names not starting with ``_``)."""
        if name in self.names:
            return self.names[name]
        if name.startswith("_"):
            return ""
        matches = [glob for glob in self.globs if name.startswith(glob[:-1] if glob.endswith("*") else glob)]
        return self.globs[max(matches, key=len)] if matches else ""

    def extras(self) -> dict[str, Any]:
        config = {key: value for key, value in self.config.items() if key != "_wandb"}
        return {
            "config_text": json.dumps(config, indent=2, ensure_ascii=False) if config else "",
            "hparams": _flat(config),
            "summary": _collapse_media(self.summary),
            "step_source": self.step_source(),
            "wandb_run": dict(self.run),
        }

    def step_source(self) -> str:
        """Which step the points are at, in words."""
        own = "_step (W&B's step: the step= given to log, or its count of log calls)"
        if not self.stepped:
            return own
        named = ", ".join(sorted(self.stepped))
        text = f"{named} (the run's declared step metric)"
        if self.own:
            text += f" for the series that declare it, {own} for the other {self.own} points"
        if self.fallback:
            text += f"; {self.fallback} points logged in rows without it are at _step"
        return text


def _flat(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Config as flat ``a.b`` -> scalar or text (W&B shows nested config keys joined with dots)."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{name}."))
        elif isinstance(value, (bool, int, float, str)):
            out[name] = value
        else:
            out[name] = json.dumps(value, ensure_ascii=False)
    return out


def _collapse_media(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary by W&B's dotted names, a media object's items (``k._type``, ``k.path``...) as one dict
    under ``k``; W&B's own ``_wandb`` entries left out."""
    media = {name[: -len("._type")] for name in summary if name.endswith("._type")}
    out: dict[str, Any] = {}
    for name, value in summary.items():
        if name == "_wandb" or name.startswith("_wandb."):
            continue
        owner = next((m for m in media if name.startswith(m + ".")), None)
        if owner is None:
            out[name] = value
        else:
            out.setdefault(owner, {})[name[len(owner) + 1 :]] = value
    return out


# ---------------------------------------------------------------- the framing


def _records(data: bytes | LogFile, scan: Scan, file: str) -> Iterator[tuple[int, bytes]]:
    """(offset, payload) of each complete record from ``scan.offset`` on, framed by ``leveldb_log``: a
    damaged chunk is a problem in ``scan.problems`` (``scan.tail`` when the scan has not got past it when
    the file ends), and ``scan.offset`` is left where the next read starts."""
    scan.file = file
    for frames in scan.batches(data):
        yield from frames.payloads()


def _read_log(path: Path, run: str, state: _State, tables: TableSet, tail: TableSet) -> None:
    """Frame and decode the log from ``state.offset``, batch by batch, into ``tables``."""
    file = str(path)
    scan = Scan(state.offset, file, len(HEADER) + 1, _bad_header)
    try:
        with LogFile(path) as log:
            for frames in scan.batches(log):  # a long run's log is never all in memory
                _Batch(state, file).decode(list(frames.payloads()), run, tables)
    except OSError as err:
        tables.problems.append(Problem(file, f"cannot read the W&B run log: {err}"))
        return
    if scan.refused:
        tables.problems.append(Problem(file, scan.refused))
        return
    tables.problems.extend(scan.problems)
    tail.problems.extend(scan.tail)
    state.offset = scan.offset


def _bad_header(head: bytes) -> str:
    """Why the log's first bytes are not a W&B header ("" when they are, or are a header still being
    written)."""
    if not (HEADER + bytes([VERSION])).startswith(head[: len(HEADER)]):
        return f"{NOT_A_LOG} (it does not start with the :W&B header)"
    if len(head) > len(HEADER) and head[len(HEADER)] != VERSION:
        return f"W&B run log format version {head[len(HEADER)]}: this reader knows version {VERSION}"
    return ""


# ---------------------------------------------------------------- decoding


_Segment = tuple[int, dict[str, str], dict[str, str]]
"""A stretch of history rows with the same metric definitions: its first row, the names and the globs."""


@dataclass
class _Items:
    """Many history (or summary) items as columns: which row each is in, its name, its JSON text.

    The first ``len(begin)`` items' texts are ``blob[begin:end]``; the others' are in ``slow``. ``order``
    is each item's place in the records (the split puts the items read by protobuf last).
    """

    row: np.ndarray
    key: np.ndarray
    order: np.ndarray
    names: list[str]
    blob: bytes
    begin: np.ndarray
    end: np.ndarray
    slow: list[str]

    def text(self, index: int) -> str:
        if index < len(self.begin):
            return _text(self.blob[self.begin[index] : self.end[index]])
        return self.slow[index - len(self.begin)]

    def numbers(self) -> tuple[np.ndarray, np.ndarray]:
        """Each item's number (true/false as 1/0; NaN for anything else) and whether it is one. A JSON
        number is told by its first byte; Arrow parses them all at once."""
        fast = len(self.begin)
        values = np.full(len(self.row), np.nan)
        first = np.frombuffer(self.blob, dtype=np.uint8)[self.begin] if fast else np.zeros(0, dtype=np.uint8)
        first = np.concatenate([first, np.array([ord(t[:1] or " ") for t in self.slow], dtype=np.uint8)])
        length = np.concatenate(
            [self.end - self.begin, np.array([len(t) for t in self.slow], dtype=np.int64)]
        )
        number = np.isin(first, _NUMBER_START)
        fast_numbers = np.flatnonzero(number[:fast])
        slow_numbers = [self.slow[i] for i in np.flatnonzero(number[fast:])]
        fast_texts = slices(self.blob, self.begin[fast_numbers], self.end[fast_numbers])
        texts = pa.concat_arrays([_strings(fast_texts), pa.array(slow_numbers, pa.large_string())])
        chosen = np.flatnonzero(number)
        try:
            values[chosen] = pc.cast(texts, pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:  # a text that only looks like a number: parse them one by one
            parsed = [_loads(text) for text in texts.to_pylist()]
            good = np.array(
                [isinstance(v, (int, float)) and not isinstance(v, bool) for v in parsed], dtype=bool
            )
            values[chosen[good]] = [float(v) for v, ok in zip(parsed, good, strict=True) if ok]
            number[chosen[~good]] = False
        true = (first == ord("t")) & (length == 4)
        false = (first == ord("f")) & (length == 5)
        values[true], values[false] = 1.0, 0.0
        return values, number | true | false


class _Batch:
    """Decodes one batch of records into points, updating the run's state."""

    def __init__(self, state: _State, file: str) -> None:
        self.state = state
        self.file = file
        self.problems: list[Problem] = []
        self.names: dict[str, int] = {}

    def problem(self, offset: int, reason: str) -> None:
        self.problems.append(Problem(self.file, f"the record at byte {offset} {reason}"))

    def decode(self, records: list[tuple[int, bytes]], run: str, tables: TableSet) -> None:
        from google.protobuf.message import DecodeError

        rows: list[Sequence[bytes]] = []  # history rows: their items' bytes
        row_steps: list[float] = []  # HistoryRecord.step (``_step`` when the row has no item for it)
        row_at: list[int] = []
        segments: list[_Segment] = [(0, dict(self.state.names), dict(self.state.globs))]
        updates: list[Sequence[bytes]] = []  # summary records: their items' bytes
        removed: dict[str, int] = {}
        for offset, payload in records:
            try:
                record = _pb()["Record"].FromString(payload)
                kind = record.WhichOneof("record_type")
                if kind == "history":
                    rows.append(record.history.item)
                    row_steps.append(record.history.step.num if record.history.HasField("step") else math.nan)
                    row_at.append(offset)
                elif kind == "summary":
                    updates.append(record.summary.update)
                    for item in record.summary.remove:
                        removed[_name(_pb()["Item"].FromString(item))] = len(updates) - 1
                elif kind == "config":
                    self.configure(record.config)
                elif kind == "metric":
                    self.state.define(_pb()["Metric"].FromString(record.metric))
                    segments.append((len(rows), dict(self.state.names), dict(self.state.globs)))
                elif kind == "run":
                    self.run(_pb()["Run"].FromString(record.run))
            except DecodeError as err:
                self.problem(offset, f"does not decode as a W&B record ({err})")
        if rows:
            self.points(self.items(rows, row_at), row_steps, segments, run, tables)
        if updates or removed:
            self.summarise(self.items(updates, None), removed)
        self.state.rows += len(rows)
        tables.problems.extend(self.problems)

    # -- items

    def items(self, groups: list[Sequence[bytes]], offsets: list[int] | None) -> _Items:
        """Split every item into (name, JSON text); most items have one key part and a short value, and
        are split with numpy over the joined bytes; the others are decoded with protobuf."""
        from google.protobuf.message import DecodeError

        flat: list[bytes] = list(chain.from_iterable(groups))
        counts = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
        row = np.repeat(np.arange(len(groups), dtype=np.int64), counts)
        blob = b"".join(flat)
        lengths = np.fromiter(map(len, flat), dtype=np.int64, count=len(flat))
        ends = np.cumsum(lengths)
        starts = ends - lengths
        simple = _simple_items(np.frombuffer(blob, dtype=np.uint8), starts, ends)
        fast = np.flatnonzero(simple)
        key_len = (
            np.frombuffer(blob, dtype=np.uint8)[starts[fast] + 1].astype(np.int64) if len(fast) else fast
        )
        keys = slices(blob, starts[fast] + 2, starts[fast] + 2 + key_len)
        encoded = keys.dictionary_encode()
        lookup = np.array([self.key(_text(k)) for k in encoded.dictionary.to_pylist()], dtype=np.int64)
        key = lookup[encoded.indices.to_numpy(zero_copy_only=False)] if len(lookup) else fast
        slow_rows, slow_keys, slow_texts, slow_order = [], [], [], []
        for index in np.flatnonzero(~simple).tolist():
            try:
                item = _pb()["Item"].FromString(flat[index])
            except DecodeError as err:
                if offsets is not None:
                    self.problem(offsets[row[index]], f"holds an item that does not decode ({err})")
                continue
            text = _value_text(item)
            if text is not None:
                slow_rows.append(row[index])
                slow_keys.append(self.key(_name(item)))
                slow_texts.append(text)
                slow_order.append(index)
        return _Items(
            row=np.concatenate([row[fast], np.array(slow_rows, dtype=np.int64)]),
            key=np.concatenate([key, np.array(slow_keys, dtype=np.int64)]),
            names=list(self.names),
            order=np.concatenate([fast, np.array(slow_order, dtype=np.int64)]),
            blob=blob,
            begin=starts[fast] + 5 + key_len,
            end=ends[fast],
            slow=slow_texts,
        )

    def key(self, name: str) -> int:
        return self.names.setdefault(name, len(self.names))

    # -- points

    def points(
        self, items: _Items, row_steps: list[float], segments: list[_Segment], run: str, tables: TableSet
    ) -> None:
        """Each numeric item of each row as a point at its step (see the module's docstring)."""
        state, names = self.state, items.names
        nrows = len(row_steps)
        values, numeric = items.numbers()
        by_name = {name: index for index, name in enumerate(names)}

        def per_row(name: str) -> np.ndarray:
            out = np.full(nrows, np.nan)
            if name in by_name:
                chosen = numeric & (items.key == by_name[name])
                out[items.row[chosen]] = values[chosen]
            return out

        own = per_row("_step")
        given = np.array(row_steps, dtype=np.float64)
        own = np.where(np.isnan(own), given, own)
        own = np.where(_whole(own), own, state.rows + np.arange(nrows))  # no step at all: the row's place
        walls = per_row("_timestamp")
        media = {name[: -len("._type")] for name in names if name.endswith("._type")}
        hidden = INTERNAL | {step for _, n, g in segments for step in (*n.values(), *g.values()) if step}
        shown = np.array(
            [
                not (
                    name in hidden
                    or name == "_wandb"
                    or name.startswith("_wandb.")
                    or any(name.startswith(m + ".") for m in media)
                )
                for name in names
            ],
            dtype=bool,
        )
        keep = numeric & shown[items.key] if len(names) else numeric
        # the step metric of each point: per stretch of rows between two MetricRecords
        bounds = [first for first, _, _ in segments] + [nrows]
        segment = np.searchsorted(np.array(bounds[1:-1], dtype=np.int64), items.row, side="right")
        metric = np.full(len(items.row), -1, dtype=np.int64)
        steppers: list[str] = []
        for index, (_, defined, globs) in enumerate(segments):
            probe = _State(names=defined, globs=globs)
            lookup = np.array(
                [_index_of(steppers, probe.step_metric(name)) for name in names], dtype=np.int64
            )
            chosen = segment == index
            metric[chosen] = lookup[items.key[chosen]] if len(names) else -1
        steps = own[items.row]
        state.own += int((keep & (metric < 0)).sum())
        for index, stepper in enumerate(steppers):
            chosen = metric == index
            at = per_row(stepper)[items.row[chosen]]
            good = _whole(at)
            steps[np.flatnonzero(chosen)[good]] = at[good]
            counted = keep[chosen]
            state.stepped[stepper] = state.stepped.get(stepper, 0) + int((good & counted).sum())
            state.fallback += int((~good & counted).sum())
        kept = np.flatnonzero(keep)
        kept = kept[np.argsort(items.order[kept], kind="stable")]  # in file order (two sorted runs: cheap)
        tags = np.array(names, dtype=object)[items.key[kept]].tolist() if len(names) else []
        tables.scalars.extend(
            len(kept),
            run=run,
            source=SOURCE,
            tag=tags,
            step=steps[kept].astype(np.int64).tolist(),
            value=values[kept].tolist(),
            wall_time=walls[items.row[kept]].tolist(),
        )
        self.histograms(items, media, steps, walls, run, tables)

    def histograms(
        self, items: _Items, media: set[str], steps: np.ndarray, walls: np.ndarray, run: str, tables: TableSet
    ) -> None:
        """``wandb.Histogram``s (``k._type`` "histogram", ``k.bins`` edges, ``k.values`` counts) into the
        histogram table, at the step of their row's ``_type`` item."""
        wanted = {f"{m}.{part}": (m, part) for m in media for part in ("_type", "bins", "values")}
        ids = [index for index, name in enumerate(items.names) if name in wanted]
        if not ids:
            return
        found: dict[tuple[int, str], dict[str, Any]] = {}
        for index in np.flatnonzero(np.isin(items.key, ids)).tolist():
            owner, part = wanted[items.names[items.key[index]]]
            at = found.setdefault((int(items.row[index]), owner), {"index": index})
            at[part] = _loads(items.text(index))
            if part == "_type":
                at["index"] = index
        for (row, owner), parts in found.items():
            bins, counts = parts.get("bins"), parts.get("values")
            if (
                parts.get("_type") != "histogram"
                or not isinstance(bins, list)
                or not isinstance(counts, list)
            ):
                continue
            if len(bins) != len(counts) + 1:
                continue
            tables.histograms.add(
                run=run,
                source=SOURCE,
                tag=owner,
                step=int(steps[parts["index"]]),
                wall_time=float(walls[row]),
                left=[float(b) for b in bins[:-1]],
                right=[float(b) for b in bins[1:]],
                count=[float(c) for c in counts],
            )

    # -- config, summary, run

    def configure(self, config: Message) -> None:
        """A ConfigRecord: an update sets a (nested) key, a remove drops it."""
        for raw, removing in [(raw, False) for raw in config.update] + [(raw, True) for raw in config.remove]:
            item = _pb()["Item"].FromString(raw)
            parts = list(item.nested_key) or [item.key]
            target = self.state.config
            for part in parts[:-1]:
                if not isinstance(target.get(part), dict):
                    target[part] = {}
                target = target[part]
            if removing:
                target.pop(parts[-1], None)
            else:
                target[parts[-1]] = _loads(item.value_json)

    def run(self, run: Message) -> None:
        """The RunRecord: the run's names, and the config it started with."""
        info = {"id": run.run_id, "name": run.display_name, "project": run.project, "entity": run.entity}
        self.state.run.update({key: value for key, value in info.items() if value})
        if run.HasField("start_time"):
            self.state.run["start_time"] = run.start_time.seconds + run.start_time.nanos / 1e9
        if run.config:
            self.configure(_pb()["Updates"].FromString(run.config))
        if run.summary:
            self.summarise(self.items([_pb()["Updates"].FromString(run.summary).update], None), {})

    def summarise(self, items: _Items, removed: dict[str, int]) -> None:
        """The summary after these records: each name's last update, unless a later record removed it.
        Only the last update of each name is parsed (wandb writes the whole row again every step)."""
        latest = np.argsort(items.row, kind="stable")[::-1]
        _, first = np.unique(items.key[latest], return_index=True)
        last = {items.names[items.key[i]]: i for i in latest[first].tolist()}
        for name, at in removed.items():
            if name not in last or items.row[last[name]] <= at:
                last.pop(name, None)
                for key in [k for k in self.state.summary if k == name or k.startswith(name + ".")]:
                    del self.state.summary[key]
        for name, index in last.items():
            self.state.summary[name] = _loads(items.text(index))


def _simple_items(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which items are ``key (field 1 or 2), value_json (16)`` alone, with both lengths under 128:
    then the key is at start+2 and the value from start+5+key length to the end."""
    if not len(buf):
        return np.zeros(len(starts), dtype=bool)
    top = len(buf) - 1

    def at(index: np.ndarray) -> np.ndarray:
        return buf[np.minimum(index, top)].astype(np.int64)

    key_len = at(starts + 1)
    value_at = starts + 2 + key_len
    value_len = at(value_at + 2)
    return (
        ((at(starts) == 0x12) | (at(starts) == 0x0A))
        & (key_len < 0x80)
        & (ends - starts >= 5)
        & (at(value_at) == 0x82)
        & (at(value_at + 1) == 0x01)
        & (value_len > 0)
        & (value_len < 0x80)
        & (value_at + 3 + value_len == ends)
    )


def _strings(texts: pa.Array) -> pa.Array:
    """Binary JSON texts as strings (bytes that are not UTF-8 replaced)."""
    try:
        return texts.cast(pa.large_string())
    except pa.ArrowInvalid:
        return pa.array([_text(t) for t in texts.to_pylist()], pa.large_string())


def _whole(values: np.ndarray) -> np.ndarray:
    """Which values can be a step: finite whole numbers in int64's range."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(values) & (np.floor(values) == values) & (np.abs(values) < 2.0**63)


def _index_of(names: list[str], name: str) -> int:
    if not name:
        return -1
    if name not in names:
        names.append(name)
    return names.index(name)


def _name(item: Message) -> str:
    """An item's name as W&B shows it: its key parts joined with dots."""
    return ".".join(item.nested_key) if item.nested_key else item.key


def _value_text(item: Message) -> str | None:
    """An item's value as JSON text: ``value_json``, else its typed value."""
    if item.value_json:
        return item.value_json
    kind = item.WhichOneof("value")
    if kind is None:
        return None
    if kind == "none":
        return "null"
    if kind == "json":
        return item.json
    return json.dumps(getattr(item, kind))


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _loads(text: str | None) -> Any:
    """JSON text as a value (NaN and +-Infinity included); text that is not JSON is kept as it is."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


# ---------------------------------------------------------------- logged tables


_TableRef = tuple[str, int | None, dict[str, Any]]
"""A table a history row refers to: its key, the row's step, and the reference (``path``, ``sha256``...)."""


def logged_tables(run_folder: Path, allowed_roots: list[Path] | None = None) -> list[LoggedTable]:
    """The tables the run logged (``wandb.Table``: TRL's completions, verl's ``val/generations``), each at
    its row's step, read from ``files/media/table/*.table.json``; the same table logged twice at one step
    (same sha256) is given once. A table whose file is missing or unreadable is given with no rows and
    the reason in ``where``."""
    source = RunSource(run=run_folder.name, kind=SOURCE, path=run_folder)
    path = run_log(source)
    if allowed_roots is not None and not inside(path, allowed_roots):
        return []
    refs = _table_refs(path)
    out: list[LoggedTable] = []
    seen: set[tuple[str, int | None, str]] = set()
    for key, step, ref in refs:
        identity = (key, step, str(ref.get("sha256") or ref.get("path")))
        if identity in seen:
            continue
        seen.add(identity)
        out.append(_load_table(run_folder, key, step, ref, allowed_roots))
    return out


def _table_refs(path: Path) -> list[_TableRef]:
    """(key, step, reference) of each table a history row holds, in log order."""
    state = _State()
    refs: list[_TableRef] = []
    scan = Scan(0, header=len(HEADER) + 1, check=_bad_header)
    try:
        with LogFile(path) as log:
            for _, payload in _records(log, scan, str(path)):
                refs.extend(_refs_in_record(payload, state))
    except OSError:
        return []
    return refs


def _refs_in_record(payload: bytes, state: _State) -> list[_TableRef]:
    """The table references of one record (a MetricRecord updates ``state``); none when it does not
    decode."""
    from google.protobuf.message import DecodeError

    try:
        record = _pb()["Record"].FromString(payload)
        kind = record.WhichOneof("record_type")
        if kind == "metric":
            state.define(_pb()["Metric"].FromString(record.metric))
        if kind != "history" or b"table-file" not in payload:
            return []
        step = record.history.step.num if record.history.HasField("step") else None
        row = {}
        for raw in record.history.item:
            item = _pb()["Item"].FromString(raw)
            row[_name(item)] = _loads(_value_text(item))
    except DecodeError:
        return []
    return _refs_in_row(row, state, step)


def _refs_in_row(row: dict[str, Any], state: _State, step: int | None) -> list[_TableRef]:
    """The table references of one history row, with the step its scalars would have."""
    found: dict[str, dict[str, Any]] = {}
    for name, value in row.items():
        if isinstance(value, dict) and value.get("_type") == "table-file":  # an old log: one item, a dict
            found[name] = value
    for name, value in row.items():
        if name.endswith("._type") and value == "table-file":
            owner = name[: -len("._type")]
            found[owner] = {k[len(owner) + 1 :]: v for k, v in row.items() if k.startswith(owner + ".")}
    out = []
    for key, ref in found.items():
        own = row.get("_step", step)
        stepper = state.step_metric(key)
        at = row.get(stepper) if stepper else None
        chosen = at if _is_step(at) else own
        out.append((key, int(chosen) if _is_step(chosen) else None, ref))
    return out


def _is_step(value: Any) -> TypeGuard[int | float]:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and float(value).is_integer()
    )


def _load_table(
    run_folder: Path, key: str, step: int | None, ref: dict[str, Any], allowed_roots: list[Path] | None
) -> LoggedTable:
    """One referenced table file, or the table with no rows and why in ``where``."""
    files = run_folder / "files"
    target = files / str(ref.get("path", ""))
    where = str(target)

    def missing(reason: str) -> LoggedTable:
        return LoggedTable(key=key, step=step, columns=[], rows=[], where=f"{where} ({reason})")

    if not ref.get("path") or not inside(target, [files]):
        return missing("the table's path is not under the run's files folder")
    if allowed_roots is not None and not inside(target, allowed_roots):
        return missing(OUTSIDE)
    try:
        table = json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return missing("missing")
    except (OSError, UnicodeDecodeError) as err:
        return missing(f"unreadable: {err}")
    except ValueError as err:
        return missing(f"not JSON: {err}")
    columns, rows = (table.get("columns"), table.get("data")) if isinstance(table, dict) else (None, None)
    if not isinstance(columns, list) or not isinstance(rows, list):
        return missing("not a W&B table (no columns and data)")
    return LoggedTable(
        key=key,
        step=step,
        columns=[str(c) for c in columns],
        rows=[list(r) if isinstance(r, list) else [r] for r in rows],
        where=where,
    )
