"""Field maps: telling rl-board which of a log's keys holds the prompt, the response, the reward...

A map is ``{rl-board field: key in the log}``. It comes from ``[fields]`` in
``rl-board.toml`` (in the run's folder or any folder above it, the nearest
file winning per field) and from the caller (``--field reward=score`` on the
CLI, the sidebar for the open run), which wins over the files. It is applied
to each record before its format is recognised, so a log of any shape reads
once its prompt, response, reward and step keys are named.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from rl_board.errors import InvalidArgumentError

SETTINGS_FILE = "rl-board.toml"
SEARCH_UP = 6
MAPPABLE = ("step", "prompt", "response", "reward", "ground_truth", "ref_response", "ref_reward",
            "response_tokens", "logprobs", "ref_logprobs", "values", "token_rewards")  # fmt: skip
FieldMap = dict[str, str]


def parse_option(text: str) -> tuple[str, str]:
    """``canonical=source`` (the CLI's ``--field``), checked against the fields that can be mapped."""
    canonical, sep, source = text.partition("=")
    canonical, source = canonical.strip(), source.strip()
    if not sep or not canonical or not source:
        raise InvalidArgumentError(f"--field expects field=key, e.g. reward=score; got {text!r}")
    check(canonical)
    return canonical, source


def check(canonical: str) -> None:
    if canonical not in MAPPABLE:
        raise InvalidArgumentError(f"cannot map {canonical!r}; fields that can be mapped: {', '.join(MAPPABLE)}")


def for_file(path: Path, overrides: FieldMap | None = None) -> FieldMap:
    """The effective map of one file: rl-board.toml files above it, then the caller's overrides."""
    merged: FieldMap = {}
    folder = path if path.is_dir() else path.parent
    for parent in reversed([folder, *list(folder.parents)[: SEARCH_UP - 1]]):
        settings = parent / SETTINGS_FILE
        if settings.is_file():
            merged.update(_from_toml(str(settings), settings.stat().st_mtime_ns))
    merged.update(overrides or {})
    return merged


def digest(fmap: FieldMap) -> str:
    """A short key that changes with the map (cache keys, manifests)."""
    return hashlib.sha1(json.dumps(sorted(fmap.items())).encode()).hexdigest()[:12] if fmap else ""


def apply(record: dict[str, Any], fmap: FieldMap) -> dict[str, Any]:
    """The record with mapped keys renamed to rl-board's names; a key they displace is kept as ``<key>_logged``."""
    if not fmap:
        return record
    out = dict(record)
    for canonical, source in fmap.items():
        if source not in record or source == canonical:
            continue
        if canonical in out and canonical not in fmap.values():
            out[f"{canonical}_logged"] = out[canonical]
        out[canonical] = record[source]
        if source not in fmap:  # a key mapped twice stays for the other field
            out.pop(source, None)
    return out


@functools.lru_cache(maxsize=256)
def _from_toml(path: str, mtime_ns: int) -> FieldMap:
    """``[fields]`` of one settings file; a file that does not parse maps nothing (health reports it)."""
    try:
        import tomllib  # Python 3.11+; older Pythons simply have no field maps from files
    except ImportError:
        return {}
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    table = data.get("fields")
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if k in MAPPABLE and isinstance(v, str) and v}
