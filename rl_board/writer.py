"""Write rollouts in rl-board's own format from any trainer: one JSON line per sample.

Each sample becomes one whole line handed to the file in a single ``write`` call,
so a dashboard reading a growing file sees either the complete sample or nothing
of it (the reader leaves a last line without its newline for the next look).
Each data-parallel rank appends its own file (``rollout_data_rank_{rank}.jsonl``)
and rl-board merges the files of a run folder by ``step``, so nothing has to be
gathered onto one rank and no two processes ever share a file.

Only the standard library (and rl-board's own message rendering, itself standard library only) is imported;
numpy arrays and torch tensors are recognised by their methods (``tolist``, ``item``, ``detach``, ``cpu``), so
this module never pulls torch in.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from rl_board.formats import conversation  # standard library only, as this module

__all__ = ["RolloutWriter", "TOKEN_FIELDS", "default_rank"]

# Per-token arrays: a mask drops the same positions from each of them.
TOKEN_FIELDS = ("response_tokens", "logprobs", "ref_logprobs", "values", "token_rewards")
_BROADCAST = (str, bytes, int, float, bool)


def default_rank() -> int:
    """This process's data-parallel rank: torch.distributed if already imported and set up, else $RANK, else
    0."""
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch is not None else None
    if dist is not None:
        try:
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except (RuntimeError, ValueError, AttributeError):
            pass
    text = os.environ.get("RANK", "").strip()
    try:
        return int(text) if text else 0
    except ValueError:
        return 0


class RolloutWriter:
    """Append samples to ``<log_dir>/rollout_data_rank_{rank}.jsonl``; one sample per line.

    ``rank`` defaults to :func:`default_rank`. ``filename`` may use ``{rank}``. The
    folder is created if needed; the file is opened for appending (line-buffered,
    UTF-8; lone surrogates in text are written as JSON ``\\uXXXX`` escapes).
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        *,
        rank: int | None = None,
        filename: str = "rollout_data_rank_{rank}.jsonl",
    ) -> None:
        self.rank = default_rank() if rank is None else int(rank)
        directory = Path(log_dir).expanduser()
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / filename.format(rank=self.rank)
        self._file = open(  # noqa: SIM115 - kept open for the writer's lifetime, closed by close()
            self.path, "a", buffering=1, encoding="utf-8", errors="backslashreplace", newline="\n"
        )

    # -- writing -------------------------------------------------------------

    def write(
        self,
        step: Any,
        prompt: str | None,
        response: str | None,
        reward: Any,
        *,
        response_tokens: Any = None,
        logprobs: Any = None,
        ref_logprobs: Any = None,
        values: Any = None,
        token_rewards: Any = None,
        ground_truth: str | None = None,
        ref_response: str | None = None,
        ref_reward: Any = None,
        mask: Any = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
        finish_reason: str | None = None,
        **extra: Any,
    ) -> None:
        """Write one sample as one line.

        Arrays may be lists, numpy arrays or tensors (on any device). ``mask`` is a
        0/1 sequence aligned with the per-token arrays: positions where it is 0
        are dropped from each of them (extra fields are written as given).
        ``messages`` is the whole trajectory as OpenAI-style chat messages (``role``,
        ``content``, an assistant's ``tool_calls``, a tool's ``tool_call_id``...);
        with it, ``prompt`` and ``response`` may be None (they are then the text of
        the turns before the first answer, and of the rest). ``finish_reason`` says
        why the trajectory ended (stop, length, max_turns, timeout, error...).
        Extra keyword arguments become extra columns.
        """
        turns = _as_messages(messages)
        if turns is not None and (prompt is None or response is None):
            head, tail = _halves(turns)
            prompt = head if prompt is None else prompt
            response = tail if response is None else response
        record: dict[str, Any] = {
            "step": _as_int("step", step),
            "prompt": _as_text("prompt", prompt),
            "response": _as_text("response", response),
            "reward": _as_float("reward", reward),
        }
        if turns is not None:
            record["messages"] = turns
        if finish_reason is not None:
            record["finish_reason"] = _as_text("finish_reason", finish_reason)
        keep = None if mask is None else [bool(m) for m in _flat_list("mask", mask)]
        arrays = {
            "response_tokens": response_tokens,
            "logprobs": logprobs,
            "ref_logprobs": ref_logprobs,
            "values": values,
            "token_rewards": token_rewards,
        }
        for name, value in arrays.items():
            if value is None:
                continue
            items = _flat_list(name, value)
            if keep is not None:
                if len(items) != len(keep):
                    raise ValueError(f"'{name}' has {len(items)} positions but the mask has {len(keep)}")
                items = [v for v, k in zip(items, keep, strict=True) if k]
            if name == "response_tokens":
                bad = next((v for v in items if not isinstance(v, str)), None)
                if bad is not None:
                    raise TypeError(
                        "'response_tokens' must be token strings (e.g. "
                        f"tokenizer.convert_ids_to_tokens(ids)), found {type(bad).__name__}"
                    )
            record[name] = items
        for name, value in (("ground_truth", ground_truth), ("ref_response", ref_response)):
            if value is not None:
                record[name] = _as_text(name, value)
        if ref_reward is not None:
            record["ref_reward"] = _as_float("ref_reward", ref_reward)
        for name, value in extra.items():
            record[name] = _plain(value)
        line = json.dumps(record, ensure_ascii=False, allow_nan=True, default=_json_default) + "\n"
        self._file.write(line)

    def write_batch(
        self,
        step: Any,
        prompts: Sequence[str],
        responses: Sequence[str],
        rewards: Any,
        *,
        response_mask: Any = None,
        **per_sample_arrays: Any,
    ) -> int:
        """Write a batch: sample ``i`` gets ``prompts[i]``, ``rewards[i]``, row ``i`` of each array.

        ``per_sample_arrays`` are any :meth:`write` keyword (``logprobs=`` a
        [batch, len] tensor, ``ref_reward=`` a [batch] list, extras...); a plain
        string or number is given to every sample. ``response_mask`` [batch, len]
        marks the real tokens of each row. Returns the number of samples written.
        """
        prompts, responses = list(prompts), list(responses)
        reward_list = _flat_list("rewards", rewards)
        n = len(prompts)
        if len(responses) != n or len(reward_list) != n:
            raise ValueError(
                f"batch sizes differ: {n} prompts, {len(responses)} responses, {len(reward_list)} rewards"
            )
        if response_mask is not None:
            if "mask" in per_sample_arrays:
                raise TypeError("give either response_mask or mask, not both")
            per_sample_arrays["mask"] = response_mask
        columns: dict[str, Any] = {}
        for name, value in per_sample_arrays.items():
            if value is None:
                continue
            if isinstance(value, _BROADCAST):
                columns[name] = [value] * n
                continue
            rows = _plain(value)
            if not isinstance(rows, list) or len(rows) != n:
                size = len(rows) if isinstance(rows, list) else "no"
                raise ValueError(f"'{name}' has {size} rows for a batch of {n}")
            columns[name] = rows
        for i in range(n):
            self.write(
                step,
                prompts[i],
                responses[i],
                reward_list[i],
                **{name: rows[i] for name, rows in columns.items()},
            )
        return n

    # -- file ----------------------------------------------------------------

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def __enter__(self) -> RolloutWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RolloutWriter({str(self.path)!r}, rank={self.rank})"


# -- conversion ----------------------------------------------------------------


def _host(value: Any) -> Any:
    """A tensor detached and on the CPU; anything else as it is."""
    if hasattr(value, "detach"):
        value = value.detach()
    if hasattr(value, "cpu"):
        value = value.cpu()
    return value


def _plain(value: Any) -> Any:
    """Tensors / numpy arrays / numpy scalars -> Python lists and numbers (recursively in containers)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    value = _host(value)
    if hasattr(value, "tolist"):
        return value.tolist()  # numpy scalars and 0-d arrays give a Python number here
    if hasattr(value, "item"):
        return value.item()
    return value


def _flat_list(name: str, value: Any) -> list[Any]:
    items = _plain(value)
    if isinstance(items, (str, bytes)) or not isinstance(items, list):
        raise TypeError(f"'{name}' must be a 1-D sequence, not {type(value).__name__}")
    if any(isinstance(v, list) for v in items):
        raise ValueError(f"'{name}' must be 1-D (one value per position), got nested lists")
    return items


def _scalar(name: str, value: Any) -> Any:
    value = _plain(value)
    if isinstance(value, list) and len(value) == 1:  # a one-element array, e.g. reward[i:i+1]
        value = value[0]
    if isinstance(value, list):
        raise TypeError(f"'{name}' must be a single number, got {len(value)} values")
    return value


def _as_float(name: str, value: Any) -> float:
    value = _scalar(name, value)
    if value is None:
        return math.nan
    if isinstance(value, (str, bytes)):
        raise TypeError(f"'{name}' must be a number, not text")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"'{name}' must be a number, not {type(value).__name__}") from None


def _as_int(name: str, value: Any) -> int:
    value = _scalar(name, value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"'{name}' must be an integer, not {value!r}")
    return value


def _as_text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    raise TypeError(f"'{name}' must be text, not {type(value).__name__}")


def _json_default(value: Any) -> Any:
    """What json cannot write itself: array-likes and numpy/torch scalars; anything else as text."""
    converted = _plain(value)
    if converted is value:
        return str(value)
    return converted


def _as_messages(messages: Any) -> list[dict[str, Any]] | None:
    """Chat messages as plain dicts (each needs a ``role``); TypeError for anything else."""
    if messages is None:
        return None
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError(f"'messages' must be a list of chat messages, not {type(messages).__name__}")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise TypeError(f"'messages[{i}]' must be a dict with a 'role'")
        out.append(_plain(dict(message)))
    return out


def _halves(messages: list[dict[str, Any]]) -> tuple[str, str]:
    """The text of the turns before the first answer, and of the rest (as rl-board renders messages)."""
    first = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
    head, tail = messages[:first], messages[first:]
    return (conversation.as_text(head) if head else ""), (conversation.as_text(tail) if tail else "")
