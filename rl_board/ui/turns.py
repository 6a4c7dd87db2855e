"""A trajectory's turns for the sample view: which turns call tools or failed, where each turn's tokens lie in
the response's token arrays, which tokens the loss skips, each turn's KL, and where the jumps go. Pure.

Messages are in the data layer's one shape (``formats.trajectory``): ``role``,
``content``, an assistant's ``tool_calls``, a tool's ``error``, and where
known ``tokens`` (a ``[start, end)`` span in the response's token arrays) and
``trained``. Without spans, a logged loss mask (``token_loss_mask``) still
cuts the tokens into turns: each run of trained or untrained tokens is one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np
import pandas as pd

from rl_board.api import tool_result

RESPONSE_SIDE = ("assistant", "tool", "environment")


@dataclass(frozen=True)
class Segment:
    """One turn's tokens: positions ``[start, end)`` of the response's token arrays."""

    turn: int  # index of its message; -1 when only a loss mask says where it lies
    role: str
    start: int
    end: int
    trained: bool | None  # None: not known

    @property
    def label(self) -> str:
        who = f"turn {self.turn} · {self.role}" if self.turn >= 0 else self.role
        return who + ("" if self.trained is not False else " · not trained")


def is_trajectory(messages: list[dict[str, Any]] | None) -> TypeGuard[list[dict[str, Any]]]:
    """Whether a sample's messages are more than a prompt and one answer: a tool call or result, several
    answers, reasoning kept apart, or turns with token spans. A single-turn sample keeps today's view."""
    if not messages:
        return False
    roles = [m.get("role") for m in messages]
    return (
        any(m.get("tool_calls") or m.get("reasoning") for m in messages)
        or "tool" in roles
        or "environment" in roles
        or roles.count("assistant") > 1
        or any(span(m) is not None for m in messages)
    )


def span(message: dict[str, Any]) -> tuple[int, int] | None:
    tokens = message.get("tokens")
    if (
        isinstance(tokens, list)
        and len(tokens) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in tokens)
        and 0 <= tokens[0] <= tokens[1]
    ):
        return int(tokens[0]), int(tokens[1])
    return None


def segments(
    messages: list[dict[str, Any]], n_tokens: int, loss_mask: np.ndarray | None = None
) -> list[Segment]:
    """The turns' token spans, in token order: from the messages' spans, else from the loss mask's runs (named
    after the response-side turns when there are as many of them as runs)."""
    found = []
    for k, m in enumerate(messages):
        s = span(m)
        if s is not None and s[0] < n_tokens:
            trained = m.get("trained")
            found.append(
                Segment(
                    k,
                    str(m.get("role") or "?"),
                    s[0],
                    min(s[1], n_tokens),
                    trained if isinstance(trained, bool) else None,
                )
            )
    if found:
        return sorted(found, key=lambda g: g.start)
    if loss_mask is None or not len(loss_mask):
        return []
    return _mask_runs(messages, np.asarray(loss_mask[:n_tokens], dtype=np.float64))


def _mask_runs(messages: list[dict[str, Any]], mask: np.ndarray) -> list[Segment]:
    trained = mask > 0
    cuts = np.flatnonzero(np.diff(trained.astype(np.int8))) + 1
    starts, ends = np.concatenate([[0], cuts]), np.concatenate([cuts, [len(mask)]])
    first = next((k for k, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
    side = [k for k in range(first, len(messages)) if messages[k].get("role") in RESPONSE_SIDE]
    named = len(side) == len(starts)
    return [
        Segment(
            side[j] if named else -1,
            str(messages[side[j]].get("role")) if named else ("trained" if trained[s] else "masked"),
            int(s),
            int(e),
            bool(trained[s]),
        )
        for j, (s, e) in enumerate(zip(starts, ends, strict=True))
    ]


def untrained(tokens: pd.DataFrame, parts: list[Segment]) -> np.ndarray:
    """Per token (row of ``tokens``, indexed by position): whether the loss skips it (mask 0, or its turn's
    ``trained`` is false)."""
    if "loss_mask" in tokens.columns:
        return tokens["loss_mask"].to_numpy(dtype=np.float64) == 0.0
    out = np.zeros(len(tokens), dtype=bool)
    positions = tokens.index.to_numpy()
    for g in parts:
        if g.trained is False:
            out |= (positions >= g.start) & (positions < g.end)
    return out


def segment_of(positions: np.ndarray, parts: list[Segment]) -> np.ndarray:
    """For each token position, the index of its segment in ``parts`` (-1 outside every turn)."""
    out = np.full(len(positions), -1, dtype=np.int64)
    for k, g in enumerate(parts):
        out[(positions >= g.start) & (positions < g.end)] = k
    return out


def turn_kl(tokens: pd.DataFrame, parts: list[Segment], column: str) -> dict[int, float]:
    """Mean ``column`` (a token KL) over each turn's tokens, for turns the loss counts; {} when none has
    one."""
    if column not in tokens.columns:
        return {}
    positions, values = tokens.index.to_numpy(), tokens[column].to_numpy(dtype=np.float64)
    out = {}
    for g in parts:
        if g.turn < 0 or g.trained is False:
            continue
        inside = values[(positions >= g.start) & (positions < g.end)]
        inside = inside[np.isfinite(inside)]
        if len(inside):
            out[g.turn] = float(inside.mean())
    return out


def call_turns(messages: list[dict[str, Any]]) -> list[int]:
    return [k for k, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls")]


def error_turns(messages: list[dict[str, Any]]) -> list[int]:
    return [k for k, m in enumerate(messages) if m.get("role") == "tool" and m.get("error")]


def next_after(turns: list[int], current: int | None) -> int | None:
    """The first of ``turns`` after ``current`` (wrapping around to the first); None when there is none."""
    if not turns:
        return None
    return next((t for t in turns if current is None or t > current), turns[0])


def answered_by(messages: list[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Tool message index -> (assistant turn, call index) of the call it answers (the data layer's
    matching)."""
    where = {id(m): k for k, m in enumerate(messages)}
    out: dict[int, tuple[int, int]] = {}
    for turn in call_turns(messages):
        for k in range(len(messages[turn].get("tool_calls") or ())):
            result = tool_result(messages, turn, k)
            if result is not None:
                out[where[id(result)]] = (turn, k)
    return out


def groups(tokens: pd.DataFrame, parts: list[Segment]) -> list[tuple[str, int, int]]:
    """The rows of ``tokens`` (indexed by position) cut at turn boundaries: (label, first row, end row)."""
    if not parts or tokens.empty:
        return []
    seg = segment_of(tokens.index.to_numpy(), parts)
    cuts = np.flatnonzero(seg[1:] != seg[:-1]) + 1
    starts, ends = np.concatenate([[0], cuts]), np.concatenate([cuts, [len(seg)]])
    return [
        (parts[seg[s]].label if seg[s] >= 0 else "outside the turns", int(s), int(e))
        for s, e in zip(starts, ends, strict=True)
    ]


def of_sample(messages: list[dict[str, Any]] | None, tokens: pd.DataFrame) -> list[Segment]:
    """A trajectory's turn spans over its token table ([] for a single-turn sample: it is shown as before)."""
    if not is_trajectory(messages):
        return []
    mask = tokens["loss_mask"].to_numpy() if "loss_mask" in tokens.columns else None
    return segments(messages or [], len(tokens), mask)
