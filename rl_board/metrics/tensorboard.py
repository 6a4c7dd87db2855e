"""TensorBoard event files, read with TensorBoard's own loader and compat layers.

A folder of `events.out.tfevents.*` files is one run (as in TensorBoard). We
read every record (no reservoir sampling). Old-style `simple_value` scalars
are taken as they are (as TensorBoard's EventAccumulator does: converting
them to tensors costs most of the read time); every other old-style value is
converted by TensorBoard's `data_compat`. Values are sorted into the scalar,
histogram or text table by their plugin; hparams go to `extras["hparams"]`.
"""

from __future__ import annotations

import functools
import mmap
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from rl_board.metrics.kind import MetricKind, RunSource
from rl_board.metrics.table import Problem, ReadResult, TableSet
from rl_board.sources.claims import Found
from rl_board.sources.roots import OUTSIDE, inside
from rl_board.sources.sniff import is_event_file

if TYPE_CHECKING:
    from tensorboard.compat.proto import event_pb2

SOURCE = "tensorboard"
RECORD_HEADER = 12
"""Bytes before each record's payload: length (8) and its crc (4); the payload's crc (4) follows it."""
_LENGTH = struct.Struct("<Q")


@functools.lru_cache(maxsize=1)
def _tb() -> SimpleNamespace:
    """TensorBoard's modules, imported on the first read: they take ~0.3 s, which finding runs (and an
    index served from the cache) never needs."""
    import google_crc32c
    from tensorboard import data_compat
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.hparams import metadata as hparams_metadata
    from tensorboard.plugins.hparams.error import HParamsError
    from tensorboard.util import tensor_util

    return SimpleNamespace(
        crc32c=google_crc32c,
        data_compat=data_compat,
        event_pb2=event_pb2,
        hparams=hparams_metadata,
        HParamsError=HParamsError,
        tensor_util=tensor_util,
    )


_CRC = struct.Struct("<I")


class TensorboardKind(MetricKind):
    """A folder of event files is one run (as in TensorBoard); a root that is one event file, a run of it."""

    name = SOURCE
    label = "TensorBoard"

    def claim_folder(
        self, folder: Path, dirs: list[str], files: list[str], allowed: list[Path] | None = None
    ) -> list[Found]:
        events = tuple(folder / f for f in files if is_event_file(folder / f))
        return [Found(folder, events, "TensorBoard event files")] if events else []

    def claim_file(self, path: Path, allowed: list[Path] | None = None) -> list[Found]:
        return (
            [Found(path.parent, (path,), "TensorBoard event file", named_by=path)]
            if is_event_file(path)
            else []
        )

    def read(self, source: RunSource, allowed_roots: list[Path] | None) -> ReadResult:
        return read_event_files(list(source.files), source.run, allowed_roots=allowed_roots)


def event_files(folder: Path) -> list[Path]:
    """The event files directly inside `folder`, oldest name first (as TensorBoard orders them)."""
    return sorted(p for p in folder.iterdir() if is_event_file(p))


def read_event_folder(folder: Path, run: str, *, allowed_roots: list[Path] | None = None) -> ReadResult:
    """Read every event file in `folder` as the run named `run`."""
    return read_event_files(event_files(folder), run, allowed_roots=allowed_roots)


def read_event_files(paths: list[Path], run: str, *, allowed_roots: list[Path] | None = None) -> ReadResult:
    """Read the given event files, in order, as one run.

    With ``allowed_roots``, a file that resolves outside them (a planted
    link) is named as a problem and not opened.
    """
    tables = TableSet()
    plugins: dict[str, str] = {}
    extras: dict[str, Any] = {"hparams": {}, "skipped_tags": []}
    skipped: set[str] = set()
    points = _ScalarPoints()
    for path in paths:
        if allowed_roots is not None and not inside(path, allowed_roots):
            tables.problems.append(Problem(str(path), OUTSIDE))
            continue
        for event in _events(path, tables.problems):
            _add_event(event, run, tables, extras, skipped, plugins, points)
    tables.scalars.extend(
        len(points.values),
        run=run,
        source=SOURCE,
        tag=points.tags,
        step=points.steps,
        value=points.values,
        wall_time=points.walls,
    )
    extras["skipped_tags"] = sorted(skipped)
    return tables.result(extras)


class _ScalarPoints:
    """Scalar points in file order, kept in plain lists: one append per field instead of a row dict
    per value, which was most of the read time of a scalar-only run."""

    __slots__ = ("steps", "tags", "values", "walls")

    def __init__(self) -> None:
        self.tags: list[str] = []
        self.steps: list[int] = []
        self.values: list[float] = []
        self.walls: list[float] = []

    def add(self, tag: str, step: int, value: float, wall_time: float) -> None:
        self.tags.append(tag)
        self.steps.append(step)
        self.values.append(value)
        self.walls.append(wall_time)


def _events(path: Path, problems: list[Problem]) -> Iterator[event_pb2.Event]:
    """Yield parsed Events; record a problem for an unreadable or incomplete tail.

    Like TensorBoard's loader we stop at a truncated or damaged record (it
    may be a file still being written) and keep what came before, saying how
    many bytes were left unread.
    """
    from google.protobuf.message import DecodeError

    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except (OSError, ValueError) as err:
        problems.append(Problem(str(path), f"cannot read event file: {err}"))
        return
    consumed = 0
    for index, (record, end) in enumerate(records(data)):
        consumed = end
        try:
            yield _tb().event_pb2.Event.FromString(record)
        except DecodeError as err:
            problems.append(Problem(str(path), f"record {index} is not an Event: {err}"))
    if isinstance(data, mmap.mmap):
        data.close()
    if consumed < size:
        problems.append(
            Problem(
                str(path),
                f"last {size - consumed} bytes (from byte {consumed}) are an incomplete or damaged "
                "record; everything before it was kept",
            )
        )


def records(data: bytes | mmap.mmap) -> Iterator[tuple[bytes, int]]:
    """The payloads of a TFRecord file and the offset after each, up to the first bad record.

    Both checksums are verified (masked CRC32C, as TensorFlow writes them) with
    google-crc32c's C code: TensorBoard's fallback without TensorFlow checks
    them in pure Python, which costs more than decoding the events.
    """
    offset, size = 0, len(data)
    while offset + RECORD_HEADER <= size:
        header = data[offset : offset + 8]
        (length,) = _LENGTH.unpack(header)
        (length_crc,) = _CRC.unpack_from(data, offset + 8)
        end = offset + RECORD_HEADER + length + 4
        if _masked_crc(header) != length_crc or end > size:
            return
        payload = data[offset + RECORD_HEADER : end - 4]
        (payload_crc,) = _CRC.unpack_from(data, end - 4)
        if _masked_crc(payload) != payload_crc:
            return
        yield payload, end
        offset = end


def _masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC32C of `data`."""
    crc = _tb().crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _add_event(
    event: event_pb2.Event,
    run: str,
    tables: TableSet,
    extras: dict[str, Any],
    skipped: set[str],
    plugins: dict[str, str],
    points: _ScalarPoints,
) -> None:
    """Sort the values of one event into the tables.

    `plugins` remembers each tag's plugin from its first record: writers
    may send the metadata only once per tag.
    """
    if not event.HasField("summary"):
        return
    step, wall_time = event.step, event.wall_time
    tags, steps, values, walls = points.tags, points.steps, points.values, points.walls
    for value in event.summary.value:
        if value.WhichOneof("value") == "simple_value":  # the common case, inlined: most of a run's read time
            tags.append(value.tag)
            steps.append(step)
            values.append(value.simple_value)
            walls.append(wall_time)
            continue
        where = {"run": run, "source": SOURCE, "tag": value.tag, "step": step, "wall_time": wall_time}
        value = _tb().data_compat.migrate_value(value)
        plugin = value.metadata.plugin_data.plugin_name or plugins.get(value.tag, "")
        plugins[value.tag] = plugin
        if not value.HasField("tensor"):
            skipped.add(value.tag)
        elif plugin == "scalars":
            points.add(value.tag, step, _scalar(value.tensor), wall_time)
        elif plugin == "histograms":
            _add_histogram(value.tensor, where, tables)
        elif plugin == "text":
            tables.texts.add(text=_text(value.tensor), **where)
        elif plugin == _tb().hparams.PLUGIN_NAME:
            _add_hparams(value, extras, tables.problems)
        else:
            skipped.add(value.tag)


def _scalar(tensor: Any) -> float:
    """The float in a rank-0 tensor proto (fast paths for the common encodings)."""
    if tensor.float_val:
        return float(tensor.float_val[0])
    if tensor.double_val:
        return float(tensor.double_val[0])
    return float(np.asarray(_tb().tensor_util.make_ndarray(tensor)).reshape(-1)[0])


def _add_histogram(tensor: Any, where: dict[str, Any], tables: TableSet) -> None:
    """A [k, 3] tensor of (left, right, count) buckets becomes one histogram row."""
    buckets = np.asarray(_tb().tensor_util.make_ndarray(tensor), dtype=float).reshape(-1, 3)
    tables.histograms.add(
        left=buckets[:, 0].tolist(), right=buckets[:, 1].tolist(), count=buckets[:, 2].tolist(), **where
    )


def _text(tensor: Any) -> str:
    """Text summaries are string tensors of any rank; cells are joined by newlines."""
    cells = np.asarray(_tb().tensor_util.make_ndarray(tensor)).reshape(-1)
    return "\n".join(c.decode("utf-8", "replace") if isinstance(c, bytes) else str(c) for c in cells)


def _add_hparams(value: Any, extras: dict[str, Any], problems: list[Problem]) -> None:
    """Keep the hparam values of a session-start record; other hparams records carry no values."""
    from google.protobuf.message import DecodeError

    if value.tag != _tb().hparams.SESSION_START_INFO_TAG:
        return
    try:
        info = _tb().hparams.parse_session_start_info_plugin_data(value.metadata.plugin_data.content)
    except (DecodeError, _tb().HParamsError) as err:
        problems.append(Problem("hparams", f"unreadable hparams record: {err}"))
        return
    for name, hp in info.hparams.items():
        kind = hp.WhichOneof("kind")
        extras["hparams"][name] = getattr(hp, kind) if kind else None
