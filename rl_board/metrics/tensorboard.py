"""TensorBoard event files, read with TensorBoard's own loader and compat layers.

A folder of `events.out.tfevents.*` files is one run (as in TensorBoard). We
read every record (no reservoir sampling). Old-style `simple_value` scalars
are taken as they are (as TensorBoard's EventAccumulator does: converting
them to tensors costs most of the read time); every other old-style value is
converted by TensorBoard's `data_compat`. Values are sorted into the scalar,
histogram or text table by their plugin; hparams go to `extras["hparams"]`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from tensorboard import data_compat
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
from tensorboard.compat.proto import event_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.plugins.hparams.error import HParamsError
from tensorboard.util import tensor_util

from rl_board.metrics.table import Problem, ReadResult, TableSet
from rl_board.sources.roots import OUTSIDE, inside
from rl_board.sources.sniff import is_event_file

SOURCE = "tensorboard"
RECORD_OVERHEAD = 16
"""Bytes around each record's payload: length (8), length crc (4), data crc (4)."""


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
    for path in paths:
        if allowed_roots is not None and not inside(path, allowed_roots):
            tables.problems.append(Problem(str(path), OUTSIDE))
            continue
        for event in _events(path, tables.problems):
            _add_event(event, run, tables, extras, skipped, plugins)
    extras["skipped_tags"] = sorted(skipped)
    return tables.result(extras)


def _events(path: Path, problems: list[Problem]) -> Any:
    """Yield parsed Events; record a problem for an unreadable or incomplete tail.

    TensorBoard's loader stops quietly at a truncated or damaged record (it
    may be a file still being written); we keep what came before and say
    how many bytes were left unread.
    """
    consumed = 0
    try:
        loader = RawEventFileLoader(str(path))
        for index, record in enumerate(loader.Load()):
            consumed += len(record) + RECORD_OVERHEAD
            try:
                yield event_pb2.Event.FromString(record)
            except DecodeError as err:
                problems.append(Problem(str(path), f"record {index} is not an Event: {err}"))
    except OSError as err:
        problems.append(Problem(str(path), f"cannot read event file: {err}"))
        return
    size = path.stat().st_size
    if consumed < size:
        problems.append(
            Problem(
                str(path),
                f"last {size - consumed} bytes (from byte {consumed}) are an incomplete or damaged "
                "record; everything before it was kept",
            )
        )


def _add_event(
    event: event_pb2.Event,
    run: str,
    tables: TableSet,
    extras: dict[str, Any],
    skipped: set[str],
    plugins: dict[str, str],
) -> None:
    """Sort the values of one event into the tables.

    `plugins` remembers each tag's plugin from its first record: writers
    may send the metadata only once per tag.
    """
    if not event.HasField("summary"):
        return
    for value in event.summary.value:
        where = {
            "run": run,
            "source": SOURCE,
            "tag": value.tag,
            "step": event.step,
            "wall_time": event.wall_time,
        }
        if value.WhichOneof("value") == "simple_value":
            tables.scalars.add(value=value.simple_value, **where)
            continue
        value = data_compat.migrate_value(value)
        plugin = value.metadata.plugin_data.plugin_name or plugins.get(value.tag, "")
        plugins[value.tag] = plugin
        if not value.HasField("tensor"):
            skipped.add(value.tag)
        elif plugin == "scalars":
            tables.scalars.add(value=_scalar(value.tensor), **where)
        elif plugin == "histograms":
            _add_histogram(value.tensor, where, tables)
        elif plugin == "text":
            tables.texts.add(text=_text(value.tensor), **where)
        elif plugin == hparams_metadata.PLUGIN_NAME:
            _add_hparams(value, extras, tables.problems)
        else:
            skipped.add(value.tag)


def _scalar(tensor: Any) -> float:
    """The float in a rank-0 tensor proto (fast paths for the common encodings)."""
    if tensor.float_val:
        return float(tensor.float_val[0])
    if tensor.double_val:
        return float(tensor.double_val[0])
    return float(np.asarray(tensor_util.make_ndarray(tensor)).reshape(-1)[0])


def _add_histogram(tensor: Any, where: dict[str, Any], tables: TableSet) -> None:
    """A [k, 3] tensor of (left, right, count) buckets becomes one histogram row."""
    buckets = np.asarray(tensor_util.make_ndarray(tensor), dtype=float).reshape(-1, 3)
    tables.histograms.add(
        left=buckets[:, 0].tolist(), right=buckets[:, 1].tolist(), count=buckets[:, 2].tolist(), **where
    )


def _text(tensor: Any) -> str:
    """Text summaries are string tensors of any rank; cells are joined by newlines."""
    cells = np.asarray(tensor_util.make_ndarray(tensor)).reshape(-1)
    return "\n".join(c.decode("utf-8", "replace") if isinstance(c, bytes) else str(c) for c in cells)


def _add_hparams(value: Any, extras: dict[str, Any], problems: list[Problem]) -> None:
    """Keep the hparam values of a session-start record; other hparams records carry no values."""
    if value.tag != hparams_metadata.SESSION_START_INFO_TAG:
        return
    try:
        info = hparams_metadata.parse_session_start_info_plugin_data(value.metadata.plugin_data.content)
    except (DecodeError, HParamsError) as err:
        problems.append(Problem("hparams", f"unreadable hparams record: {err}"))
        return
    for name, hp in info.hparams.items():
        kind = hp.WhichOneof("kind")
        extras["hparams"][name] = getattr(hp, kind) if kind else None
