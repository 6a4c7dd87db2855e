"""Telling what a file holds from its first lines (and why a file is not read)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rl_board import config, formats
from rl_board.formats import fieldmap, tracker_tables
from rl_board.formats.fieldmap import FieldMap

JSON_LINES_SUFFIXES = frozenset({".jsonl", ".ndjson"})
WHOLE_FILE_SUFFIXES = frozenset({".parquet", tracker_tables.SUFFIX})
"""Files read whole, never appended to: Parquet tables and trackers' table documents."""
SETTINGS_FILE = "rl-board.toml"
RL_BOARD = "rl-board"
LINES_TRIED = 20
# Keys that make a JSON line a rollout sample rather than a metrics record.
ROLLOUT_KEYS = frozenset(
    {
        "prompt",
        "response",
        "prompts",
        "responses",
        "completion",
        "reward",
        "ground_truth",
        "response_tokens",
        "logprobs",
        "ref_logprobs",
        "ref_response",
        "token_rewards",
    }
)
STEP_KEYS = ("step", "global_step", "_step", "iteration", "iter", "train_iter", "train/global_step")
_KEY_TEXT = re.compile(r'"([A-Za-z_][\w/.-]{0,63})"\s*:\s*(.)')
_SHAPE_OF = {"[": [], "{": {}, '"': "", "t": True, "f": False, "n": None}
# torch.save writes pickles; slime dumps its rollouts so (rollout_data/{id}.pt). Named only where no run is.
TORCH_PICKLE = "a pickle (slime's rollout dump?): never loaded, unpickling runs code; convert it to JSONL"
_SUFFIX_REASONS = {
    ".md": "a Markdown document, not a log",
    ".gz": "a compressed file: rl-board does not read compressed logs; decompress it (gunzip) to read it",
    ".zst": "a compressed file: rl-board does not read compressed logs; decompress it (zstd -d) to read it",
    ".bz2": "a compressed file: rl-board does not read compressed logs; decompress it (bunzip2) to read it",
    ".xz": "a compressed file: rl-board does not read compressed logs; decompress it (unxz) to read it",
    ".pkl": "a pickle: never loaded (unpickling runs code)",
    ".pt": TORCH_PICKLE,
    ".pth": TORCH_PICKLE,
    ".pickle": "a pickle: never loaded (unpickling runs code)",
    ".json": "a JSON document, not JSON lines",
    ".py": "source code, not a log",
    ".yaml": "a configuration file, not a log",
    ".yml": "a configuration file, not a log",
    ".toml": "a configuration file, not a log",
    ".csv": "a CSV table, not a log rl-board reads",
}


DI_ENGINE_LOGGERS = {
    "collector": "log/collector/collector_logger.txt",
    "evaluator": "log/evaluator/evaluator_logger.txt",
    "learner": "log/learner/learner_logger.txt",
}


def is_event_file(path: Path) -> bool:
    """True for files TensorBoard would read as event files."""
    return path.is_file() and "tfevents" in path.name


def is_di_engine_folder(folder: Path) -> bool:
    """A DI-engine experiment has its text loggers under log/ (or at least its formatted config)."""
    return any((folder / rel).is_file() for rel in DI_ENGINE_LOGGERS.values()) or (
        (folder / "formatted_total_config.py").is_file() and (folder / "log").is_dir()
    )


def reason_for_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    return _SUFFIX_REASONS.get(suffix, f"not a log rl-board reads ({suffix or 'no extension'})")


def json_lines(path: Path, fmap: FieldMap | None = None) -> tuple[str, str, str]:
    """(role, format, reason) of a JSON-lines file from its first lines.

    Lines that are not JSON objects do not decide anything: a file none of
    whose first lines parse stays a rollout file, so its reader can name each
    bad line in the load report.
    """
    try:
        head = _head(path)
    except OSError as err:
        return "rollout", RL_BOARD, f"unreadable ({err.strerror}); named in the run's load report"
    if not head.strip():
        return "rollout", RL_BOARD, "no lines yet"
    records = [fieldmap.apply(r, fmap or {}) for r in _first_objects(head)]
    for record in records:
        fmt = formats.detect(record)
        if fmt is not None:
            return "rollout", fmt.name, fmt.describe()
    if not records:
        if b"\n" not in head:  # one long first line: judge by the keys it starts with
            fmt = formats.detect(_keys_of(head))
            if fmt is not None:
                return "rollout", fmt.name, fmt.describe()
        return "rollout", RL_BOARD, "no line parses yet; its reader reports each one"
    looks_like = sorted({k for r in records for k in ROLLOUT_KEYS & r.keys()})
    if looks_like:
        return (
            "skipped",
            "",
            (
                f"looks like rollout samples ({', '.join(looks_like)}) but matches no known "
                'format: name its keys in rl-board.toml [fields] (e.g. prompt = "question")'
            ),
        )
    if any(_has_step(r) for r in records):
        return "metrics", "jsonl", "JSON-lines metrics"
    keys = sorted({k for r in records for k in r})[:8]
    return "skipped", "", f"JSON lines whose keys ({', '.join(keys)}) match no known rollout or metrics shape"


def parquet(path: Path, fmap: FieldMap | None = None) -> tuple[str, str, str]:
    """(role, format, reason) of a Parquet file from its column names (the data is not read)."""
    import pyarrow as pa  # only for Parquet files: a catalogue of JSON-lines logs loads no pyarrow
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except (OSError, pa.ArrowException) as err:
        return "skipped", "", f"a Parquet file that cannot be opened ({err})"
    columns = fieldmap.apply(dict.fromkeys(names, 0.0), fmap or {})
    fmt = formats.detect(columns)
    if fmt is None or fmt.name == RL_BOARD and not {"prompt", "response"} & set(columns):
        return "skipped", "", f"a Parquet table whose columns ({', '.join(names[:8])}) match no rollout shape"
    return "rollout", fmt.name, fmt.describe()


def is_whole_file(path: Path) -> bool:
    """A rollout file read as one table, never as growing lines (see ``WHOLE_FILE_SUFFIXES``)."""
    return path.suffix.lower() in WHOLE_FILE_SUFFIXES


def table_document(path: Path, fmap: FieldMap | None = None) -> tuple[str, str, str]:
    """(role, format, reason) of a JSON document that may be a table a trainer logged to a tracker.

    Its rows read as the trainer's own dump does (``formats.tracker_tables``). A table W&B keeps twice
    (TRL logs its last step's completions again) or an earlier state of a cumulative one (verl's
    generations) is named and not read, so no sample counts twice.
    """
    if not tracker_tables.may_be_table(path):
        return "skipped", "", reason_for_suffix(path)
    try:
        limit = config.sizes().max_line_bytes  # a document is read whole, as one line would be
        if path.stat().st_size > limit:
            return "skipped", "", f"a JSON document over the {limit >> 20} MB limit; not read"
        document = tracker_tables.parsed(path.read_bytes())
    except OSError as err:
        return "skipped", "", f"a JSON document that cannot be read ({err.strerror or err})"
    if document is None:
        return "skipped", "", "a JSON document that cannot be read (not valid JSON)"
    rows = tracker_tables.rows_of(document, path.name)
    if rows is None:
        return "skipped", "", reason_for_suffix(path)
    again = _logged_again(path, document)
    if again:
        return "skipped", "", again
    fmt = formats.detect(fieldmap.apply(rows[0], fmap or {})) if rows else None
    if fmt is None:
        keys = ", ".join(sorted(rows[0])[:8]) if rows else "no rows"
        return "skipped", "", f"a table logged to a tracker whose columns ({keys}) match no rollout shape"
    return "rollout", fmt.name, f"{fmt.describe()}, as logged to a tracker"


def _logged_again(path: Path, document: object) -> str:
    """Why a W&B table file is a copy of another beside it ("" when it is not)."""
    mine = tracker_tables.WANDB_TABLE.match(path.name)
    if mine is None:
        return ""
    try:
        names = sorted(p.name for p in path.parent.iterdir())
    except OSError:
        return ""
    others = [m for m in map(tracker_tables.WANDB_TABLE.match, names) if m and m["key"] == mine["key"]]
    columns = document.get("columns") if isinstance(document, dict) else None
    if isinstance(columns, list) and tracker_tables.is_wide([str(c) for c in columns]):
        newest = max(others, key=lambda m: int(m["step"]))
        if newest.group(0) != path.name:
            return (
                f"an earlier state of the cumulative table {mine['key']}: "
                f"{newest.group(0)} holds all its rows"
            )
        return ""
    first = min((m for m in others if m["sha"] == mine["sha"]), key=lambda m: int(m["step"]))
    return f"the same table as {first.group(0)} (logged again)" if first.group(0) != path.name else ""


def _head(path: Path) -> bytes:
    """The first 64 KB, or more when the first line is longer (up to 16 MB: ROLL writes a file as one
    line)."""
    with path.open("rb") as handle:
        sizes = config.sizes()
        head = handle.read(sizes.sniff_bytes)
        while b"\n" not in head and len(head) < sizes.sniff_line_bytes:
            more = handle.read(len(head))
            if not more:
                break
            head += more
    return head


def _keys_of(head: bytes) -> dict[str, Any]:
    """The keys a long first line starts with, each with a value of the right shape (a list, a string...)."""
    found = _KEY_TEXT.findall(head.decode("utf-8", "replace"))
    return {key: _SHAPE_OF.get(first, 0.0) for key, first in found}


def _first_objects(head: bytes) -> list[dict[str, Any]]:
    lines = head.split(b"\n")
    if not head.endswith(b"\n"):
        lines = lines[:-1]  # the last piece may be cut short
    out: list[dict[str, Any]] = []
    parser = _simd_parser()
    for raw in lines:
        raw = raw.strip()
        if not raw:
            continue
        try:
            value = _loads(raw, parser)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            out.append(value)
        if len(out) >= LINES_TRIED:
            break
    return out


def _simd_parser() -> Any | None:
    """A simdjson parser, or None without the package (imported when a file's head is first read, as the
    loads' parsers are imported when there is something to parse)."""
    try:
        import simdjson
    except ImportError:  # pragma: no cover - an optional speed-up (as in rollouts/read/bulk.py)
        return None
    return simdjson.Parser()


def _loads(raw: bytes, parser: Any | None) -> Any:
    """The line's value exactly as ``json`` reads it. simdjson reads a long line of float arrays ~6x
    faster (a cached 10 GB run's 32 first lines: ~33 ms with json alone), and refuses all it reads
    otherwise: NaN and Infinity, integers past 64 bits, lone surrogates, bad UTF-8, UTF-16; those go to
    ``json``."""
    if parser is not None:
        try:
            return parser.parse(raw, True)  # plain Python values: no proxy keeps the parser busy
        except (ValueError, RuntimeError):  # RuntimeError: a big integer, nesting past 1,024 levels
            pass
    return json.loads(raw)


def _has_step(record: dict[str, Any]) -> bool:
    return any(
        isinstance(record.get(k), (int, float)) and not isinstance(record.get(k), bool) for k in STEP_KEYS
    )
