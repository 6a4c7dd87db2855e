"""What a trainer writes beside its rollout dumps that says how to read them.

TRL's completions tables do not say which columns are reward functions; the
metrics TRL logs do (``rewards/<fn>/mean``). They are in
``checkpoint-*/trainer_state.json`` beside ``completions/`` once a checkpoint
is saved. prime-rl's ``all/traces.jsonl`` does not say which episodes were
trained on; ``effective/traces.jsonl`` beside it holds those, so their ids
tell. What is found here becomes part of a file's ``Reading`` (its
``options``), so a change (a first checkpoint, the trained-on episodes of a
step written) makes the file read again.

Nothing outside the folders a server serves is looked at: a served root of
``out/completions`` never reads ``out/checkpoint-*`` (the command line, which
serves nothing, looks beside the run wherever it is).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from rl_board.formats.prime import EFFECTIVE
from rl_board.formats.trl import FUNCTIONS_OPTION
from rl_board.sources.roots import inside

TRAINER_STATE = "trainer_state.json"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_REWARD_MEAN = re.compile(r"^(?:train/)?rewards/(.+)/mean$")
PRIME_TRACES = "traces.jsonl"
_LEADING_ID = re.compile(rb'^\s*\{\s*"id"\s*:\s*"((?:[^"\\]|\\.)*)"')  # Episode.to_record writes its id first


def options_for(folder: Path, fmt: str, allowed: list[Path] | None) -> dict[str, Any]:
    """The options of the files of format ``fmt`` in ``folder``, looking only inside ``allowed`` (if
    given)."""
    if fmt == "prime-rl":
        return _prime_options(folder, allowed)
    if fmt != "trl":
        return {}
    base = folder.parent if folder.name == "completions" else folder
    state = newest_trainer_state(base, allowed)
    if state is None:
        return {}
    names = reward_function_names(str(state), state.stat().st_mtime_ns)
    return {FUNCTIONS_OPTION: list(names)} if names else {}


def newest_trainer_state(base: Path, allowed: list[Path] | None) -> Path | None:
    """``checkpoint-N/trainer_state.json`` of the highest N under ``base``, when it lies inside
    ``allowed``."""
    if allowed is not None and not inside(base, allowed):
        return None
    found: list[tuple[int, Path]] = []
    try:
        for entry in base.iterdir():
            match = _CHECKPOINT.match(entry.name)
            if match and (entry / TRAINER_STATE).is_file():
                found.append((int(match.group(1)), entry / TRAINER_STATE))
    except OSError:
        return None
    for _, path in sorted(found, reverse=True):
        if allowed is None or inside(path, allowed):
            return path
    return None


@functools.lru_cache(maxsize=64)
def reward_function_names(path: str, mtime_ns: int) -> tuple[str, ...]:
    """The reward functions TRL logged a mean for, in the order it logged them."""
    try:
        history = json.loads(Path(path).read_text(encoding="utf-8")).get("log_history") or []
    except (OSError, ValueError, AttributeError):
        return ()
    names: dict[str, None] = {}
    for entry in history:
        for key in entry if isinstance(entry, dict) else ():
            match = _REWARD_MEAN.match(str(key))
            if match:
                names.setdefault(match.group(1))
    return tuple(names)


def _prime_options(folder: Path, allowed: list[Path] | None) -> dict[str, Any]:
    """For an ``all/`` folder of prime-rl episodes: the ids of the trained-on ones in ``effective/`` beside it
    (no option while that file is not written: whether an episode was kept is then not known)."""
    if folder.name != "all":
        return {}
    path = folder.parent / "effective" / PRIME_TRACES
    if allowed is not None and not inside(path, allowed):
        return {}
    try:
        st = path.stat()
    except OSError:
        return {}
    return {EFFECTIVE: list(effective_ids(str(path), st.st_size, st.st_mtime_ns))}


@functools.lru_cache(maxsize=256)
def effective_ids(path: str, size: int, mtime_ns: int) -> tuple[str, ...]:
    """The episode ids of a prime-rl traces file, in order: from each line's start when it begins with its id
    (as prime-rl writes it), else from the parsed line; a line not yet ended or not an episode gives none."""
    found: list[str] = []
    try:
        with open(path, "rb") as handle:
            for line in handle:
                if not line.endswith(b"\n"):  # still being written
                    break
                episode = _episode_id(line)
                if episode is not None:
                    found.append(episode)
    except OSError:
        return ()
    return tuple(found)


def _episode_id(line: bytes) -> str | None:
    match = _LEADING_ID.match(line)
    if match is not None:
        try:
            return json.loads(b'"' + match.group(1) + b'"')
        except ValueError:
            return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    episode = record.get("id") if isinstance(record, dict) else None
    return str(episode) if isinstance(episode, (str, int)) and not isinstance(episode, bool) else None
