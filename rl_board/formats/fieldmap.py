"""Field maps: which of a log's keys holds the prompt, the response, the reward...

A map is ``{rl-board field: key in the log}``. Where maps come from (``[fields]``
in ``rl-board.toml``, ``--field`` on the CLI, the sidebar) is the sources
layer's business (``sources/settings.py``); here is what a map is and how it
is applied to a record, before its format is recognised, so a log of any
shape reads once its prompt, response, reward and step keys are named.

The reward may also be *made* from several columns: ``reward = "accuracy +
0.5*format"`` is a weighted sum (NaN terms skipped, NaN when every term is
NaN, as TRL adds up its reward functions). Such an entry is not a rename: the
columns stay, and the reader composes the reward from them (``reward_terms``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from rl_board.errors import InvalidArgumentError

MAPPABLE = (
    "step",
    "prompt",
    "response",
    "reward",
    "ground_truth",
    "ref_response",
    "ref_reward",
    "response_tokens",
    "logprobs",
    "ref_logprobs",
    "values",
    "token_rewards",
)
FieldMap = dict[str, str]
REWARD = "reward"
_TERM = re.compile(r"^\s*(?:([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*\*\s*)?(\S(?:.*\S)?)\s*$")


def parse_option(text: str) -> tuple[str, str]:
    """``canonical=source`` (the CLI's ``--field``), checked against the fields that can be mapped."""
    canonical, sep, source = text.partition("=")
    canonical, source = canonical.strip(), source.strip()
    if not sep or not canonical or not source:
        raise InvalidArgumentError(f"--field expects field=key, e.g. reward=score; got {text!r}")
    check(canonical)
    if canonical == REWARD and ("+" in source or "*" in source):
        reward_terms(source, strict=True)
    return canonical, source


def check(canonical: str) -> None:
    if canonical not in MAPPABLE:
        raise InvalidArgumentError(
            f"cannot map {canonical!r}; fields that can be mapped: {', '.join(MAPPABLE)}"
        )


def digest(fmap: FieldMap) -> str:
    """A short key that changes with the map (cache keys, manifests)."""
    return hashlib.sha1(json.dumps(sorted(fmap.items())).encode()).hexdigest()[:12] if fmap else ""


def reward_terms(source: str, *, strict: bool = False) -> dict[str, float] | None:
    """``"a + 0.5*b"`` -> ``{"a": 1.0, "b": 0.5}``; None for a plain key (a rename, not a sum).

    With ``strict``, a sum that cannot be read raises InvalidArgumentError (the CLI, the sidebar);
    otherwise it is None and the entry is taken as a key name.
    """
    if "+" not in source and "*" not in source:
        return None
    terms: dict[str, float] = {}
    for part in source.split("+"):
        found = _TERM.match(part)
        weight = float(found.group(1)) if found and found.group(1) else 1.0
        if not found or not math.isfinite(weight) or "*" in found.group(2):
            if strict:
                raise InvalidArgumentError(
                    f"cannot read the reward sum {source!r}: write it as "
                    "'name + 0.5*other' (weights are numbers before '*')"
                )
            return None
        terms[found.group(2)] = terms.get(found.group(2), 0.0) + weight
    return terms


def renames(fmap: FieldMap) -> FieldMap:
    """The entries that rename a key (a reward made from several columns is not one)."""
    return {k: v for k, v in fmap.items() if not (k == REWARD and reward_terms(v) is not None)}


def apply(record: dict[str, Any], fmap: FieldMap) -> dict[str, Any]:
    """The record with mapped keys renamed to rl-board's names; a key they displace is kept as
    ``<key>_logged``."""
    fmap = renames(fmap)
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
