"""Write TRL GRPO completions as an rl-board rollout log, from a ``TrainerCallback``.

TRL's ``GRPOTrainer`` keeps the completions of its latest generation batch in
``trainer._logs`` (``trainer._textual_logs`` in TRL 0.17-0.19), already gathered
from every process: deques ``"prompt"``, ``"completion"``, ``"advantages"``, a
dict reward-function name -> deque under ``"rewards"`` and, in recent versions,
user columns under ``"extra"``. A callback's ``on_log`` is not handed the
trainer, so attach the callback to it::

    trainer = GRPOTrainer(...)
    RLBoardCallback("rollout_samples/my_run").attach(trainer)
    trainer.train()

At every training log, the main process appends those rows to
``<log_dir>/rollout_data_rank_0.jsonl`` (step = ``state.global_step``; reward =
the weighted sum of the reward functions, NaN ones skipped, as TRL's ``reward``
metric; each function and ``advantage`` as extra columns). Token-level fields
are not in ``_logs``, so this gives sequence-level views; use
:class:`rl_board.writer.RolloutWriter` in your own loop for token views.

This module imports without transformers: ``RLBoardCallback`` then derives
from a small stand-in base class (it can still be driven by hand, as the tests
do), and from ``transformers.TrainerCallback`` whenever transformers is
installed. Odd data never raises into the training loop: bad rows are skipped,
counted in ``problems`` and reported by one warning.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rl_board.writer import RolloutWriter

try:
    from transformers import TrainerCallback as _CallbackBase

    HAVE_TRANSFORMERS = True
except ImportError:
    HAVE_TRANSFORMERS = False

    class _CallbackBase:  # type: ignore[no-redef]  # stand-in for an optional import: mypy wants one definition
        """Stand-in for ``transformers.TrainerCallback`` when transformers is not installed."""


__all__ = ["HAVE_TRANSFORMERS", "RLBoardCallback"]

# Names this callback writes itself (plus rl-board's known fields): user columns with these names are renamed.
_RESERVED = frozenset(
    {
        "step",
        "prompt",
        "response",
        "reward",
        "advantage",
        "response_tokens",
        "logprobs",
        "ref_logprobs",
        "values",
        "token_rewards",
        "ref_response",
        "ref_reward",
        "ground_truth",
        "valid_reward",
        "ref_valid_reward",
    }
)
# What odd data can raise while rows are read and written (never let it reach the training loop).
_DATA_ERRORS = (
    TypeError,
    ValueError,
    KeyError,
    IndexError,
    AttributeError,
    OverflowError,
    UnicodeError,
    OSError,
)


class RLBoardCallback(_CallbackBase):
    """Append each logged GRPO generation batch to an rl-board rollout run folder (``log_dir``)."""

    def __init__(
        self,
        log_dir: str | Path,
        *,
        filename: str = "rollout_data_rank_{rank}.jsonl",
        include_eval: bool = False,
    ) -> None:
        self.log_dir = Path(log_dir)
        self.filename = filename
        self.include_eval = include_eval
        self.trainer: Any = None
        self.samples_written = 0
        self.problems = 0
        self.last_problem: str | None = None
        self._writer: RolloutWriter | None = None
        self._last_step: int | None = None
        self._last_batch: int | None = None
        self._warned = False

    def attach(self, trainer: Any) -> RLBoardCallback:
        """Remember ``trainer`` (to read its ``_logs``) and register with it; returns ``self``."""
        self.trainer = trainer
        trainer.add_callback(self)
        return self

    # -- transformers events -------------------------------------------------

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> None:
        """Write the trainer's latest completions once per step, on the main process only."""
        if not getattr(state, "is_world_process_zero", True):
            return None
        if not self.include_eval and logs and any(str(k).startswith("eval_") for k in logs):
            return None  # evaluation completions would mix into the training step's statistics
        step = getattr(state, "global_step", None)
        if step is None or step == self._last_step:
            return None
        table = self._completion_logs()
        if table is None:
            return None
        try:
            self._write_step(int(step), table)
        except _DATA_ERRORS as exc:
            self._problem(f"step {step}: {type(exc).__name__}: {exc}")
        self._last_step = step
        return None

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Close the log file (a later log reopens it for appending)."""
        self.close()
        return None

    def close(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            try:
                writer.close()
            except OSError as exc:
                self._problem(f"closing {writer.path}: {exc}")

    # -- internals -----------------------------------------------------------

    def _completion_logs(self) -> Mapping[str, Any] | None:
        if self.trainer is None:
            self._problem("no trainer to read completions from: use RLBoardCallback(log_dir).attach(trainer)")
            return None
        for attr in ("_logs", "_textual_logs"):
            table = getattr(self.trainer, attr, None)
            if isinstance(table, Mapping) and "completion" in table:
                return table
        return None

    def _write_step(self, step: int, table: Mapping[str, Any]) -> None:
        completions = list(table.get("completion") or ())
        prompts = list(table.get("prompt") or ())
        n = len(completions)
        if n == 0:
            return
        if len(prompts) != n:
            raise ValueError(f"{len(prompts)} prompts for {n} completions")
        batch = hash((tuple(map(_text, prompts)), tuple(map(_text, completions))))
        if batch == self._last_batch:
            return  # no new generation since the last log (e.g. num_iterations > 1): not a new sample
        rewards = self._columns(table.get("rewards"), n, "reward function")
        weights = self._reward_weights(list(rewards))
        extras = self._columns(table.get("extra"), n, "extra column")
        advantages = _column(table.get("advantages"), n)
        if advantages is None and table.get("advantages"):
            self._problem(f"step {step}: advantages do not match the {n} completions; left out")

        reward_names = {name: _rename(name, _RESERVED, "reward_fn_") for name in rewards}
        extra_names = {
            name: _rename(name, _RESERVED | set(reward_names.values()), "extra_") for name in extras
        }
        if self._writer is None:
            self._writer = RolloutWriter(self.log_dir, filename=self.filename)
        for i in range(n):
            row: dict[str, Any] = {reward_names[name]: values[i] for name, values in rewards.items()}
            row.update({extra_names[name]: values[i] for name, values in extras.items()})
            if advantages is not None:
                row["advantage"] = advantages[i]
            try:
                total = _weighted_sum([(weights[name], values[i]) for name, values in rewards.items()])
                prompt, completion, messages = _turns(prompts[i], completions[i])
                finish = _open_calls_end(completions[i], self._tool_rounds())
                self._writer.write(
                    step, prompt, completion, total, messages=messages, finish_reason=finish, **row
                )
            except (TypeError, ValueError, OverflowError) as exc:
                self._problem(f"step {step}, row {i}: {exc}")
                continue
            self.samples_written += 1
        self._last_batch = batch

    def _tool_rounds(self) -> int | None:
        """The trainer's ``max_tool_calling_iterations`` (None when it has no tool loop or sets no limit)."""
        limit = getattr(self.trainer, "max_tool_calling_iterations", None)
        return limit if isinstance(limit, int) and 0 <= limit < sys.maxsize else None

    def _columns(self, source: Any, n: int, what: str) -> dict[str, list[Any]]:
        """name -> n values; iterates items() so a defaultdict of the trainer gains no keys."""
        out: dict[str, list[Any]] = {}
        if not isinstance(source, Mapping):
            return out
        for name, values in source.items():
            column = _column(values, n)
            if column is None:
                self._problem(f"{what} {name!r} does not match the {n} completions; left out")
            else:
                out[str(name)] = column
        return out

    def _reward_weights(self, names: list[str]) -> dict[str, float]:
        weights = dict.fromkeys(names, 1.0)
        order = getattr(self.trainer, "reward_func_names", None)
        given = getattr(self.trainer, "reward_weights", None)
        if order is None or given is None:
            return weights
        try:
            if hasattr(given, "detach"):
                given = given.detach().cpu()
            values = given.tolist() if hasattr(given, "tolist") else list(given)
            if len(values) == len(order):
                weights.update(
                    {str(k): float(w) for k, w in zip(order, values, strict=True) if str(k) in weights}
                )
        except _DATA_ERRORS as exc:
            self._problem(f"reward_weights not usable ({exc}); summing unweighted")
        return weights

    def _problem(self, message: str) -> None:
        self.problems += 1
        self.last_problem = message
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"rl-board: {message} (further problems are only counted in .problems)",
                RuntimeWarning,
                stacklevel=3,
            )


def _column(values: Any, n: int) -> list[Any] | None:
    if values is None:
        return None
    try:
        items = list(values)
    except TypeError:
        return None
    return items if len(items) == n else None


def _weighted_sum(pairs: list[tuple[float, Any]]) -> float:
    """Sum of weight * value over the numbers that are not NaN; NaN if there are none."""
    total, seen = 0.0, False
    for weight, value in pairs:
        if value is None or isinstance(value, (str, bytes)):
            continue
        number = float(value)
        if math.isnan(number):
            continue
        total += weight * number
        seen = True
    return total if seen else math.nan


def _text(value: Any) -> str:
    """Prompt / completion as text; chat-style message lists become their JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _turns(prompt: Any, completion: Any) -> tuple[str | None, str | None, list[Any] | None]:
    """A conversational row (message lists, TRL's usual dataset format) as its messages, its texts left to the
    writer; a plain row as its two texts."""
    if isinstance(prompt, str) and isinstance(completion, str):
        return prompt, completion, None
    lists = [
        v if isinstance(v, list) else [{"role": role, "content": _text(v)}]
        for v, role in ((prompt, "user"), (completion, "assistant"))
    ]
    return None, None, [dict(m) for part in lists for m in part if isinstance(m, Mapping)]


def _open_calls_end(completion: Any, rounds: int | None) -> str | None:
    """Why TRL's tool loop left a completion ending on calls it never ran: it had used its
    ``max_tool_calling_iterations`` (one answered round per assistant turn before the last), else the tool
    results would have run past ``max_completion_length`` and were rolled back. None when it does not end
    so."""
    if not isinstance(completion, list) or not completion or not isinstance(completion[-1], Mapping):
        return None
    last = completion[-1]
    if last.get("role") != "assistant" or not last.get("tool_calls"):
        return None
    answered = sum(1 for m in completion[:-1] if isinstance(m, Mapping) and m.get("role") == "assistant")
    return "max_tool_calling_iterations" if rounds is not None and answered >= rounds else "length"


def _rename(name: str, taken: frozenset[str] | set[str], prefix: str) -> str:
    while name in taken:
        name = prefix + name
    return name
