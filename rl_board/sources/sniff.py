"""Telling what a file holds from its first lines (and why a file is not read)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rl_board import config, formats
from rl_board.formats import fieldmap
from rl_board.formats.fieldmap import FieldMap

JSON_LINES_SUFFIXES = frozenset({".jsonl", ".ndjson"})
SETTINGS_FILE = "rl-board.toml"
RL_BOARD = "rl-board"
LINES_TRIED = 20
# Keys that make a JSON line a rollout sample rather than a metrics record.
ROLLOUT_KEYS = frozenset({"prompt", "response", "prompts", "responses", "completion", "reward", "ground_truth",
                          "response_tokens", "logprobs", "ref_logprobs", "ref_response", "token_rewards"})
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


DI_ENGINE_LOGGERS = {"collector": "log/collector/collector_logger.txt",
                     "evaluator": "log/evaluator/evaluator_logger.txt",
                     "learner": "log/learner/learner_logger.txt"}  # fmt: skip


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
        return "skipped", "", (f"looks like rollout samples ({', '.join(looks_like)}) but matches no known "
                               "format: name its keys in rl-board.toml [fields] (e.g. prompt = \"question\")")
    if any(_has_step(r) for r in records):
        return "metrics", "jsonl", "JSON-lines metrics"
    keys = sorted({k for r in records for k in r})[:8]
    return "skipped", "", f"JSON lines whose keys ({', '.join(keys)}) match no known rollout or metrics shape"


def parquet(path: Path, fmap: FieldMap | None = None) -> tuple[str, str, str]:
    """(role, format, reason) of a Parquet file from its column names (the data is not read)."""
    try:
        names = pq.read_schema(path).names
    except (OSError, pa.ArrowException) as err:
        return "skipped", "", f"a Parquet file that cannot be opened ({err})"
    columns = fieldmap.apply(dict.fromkeys(names, 0.0), fmap or {})
    fmt = formats.detect(columns)
    if fmt is None or fmt.name == RL_BOARD and not {"prompt", "response"} & set(columns):
        return "skipped", "", f"a Parquet table whose columns ({', '.join(names[:8])}) match no rollout shape"
    return "rollout", fmt.name, fmt.describe()


def _head(path: Path) -> bytes:
    """The first 64 KB, or more when the first line is longer (up to 16 MB: ROLL writes a file as one line)."""
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
    for raw in lines:
        raw = raw.strip()
        if not raw:
            continue
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            out.append(value)
        if len(out) >= LINES_TRIED:
            break
    return out


def _has_step(record: dict[str, Any]) -> bool:
    return any(isinstance(record.get(k), (int, float)) and not isinstance(record.get(k), bool) for k in STEP_KEYS)
