"""The questions a page asks of a run, by name: one registry, asked one generic way.

TensorBoard's plugins read every run through one ``DataProvider``, so a plugin adds no provider method. Here a
page asks ``cached.ask(store, "groups", step=3)`` (``ui/cached.py``: cached per state of the run) and a script
``api.ask(store, "groups", step=3)`` (uncached): each question is a plain function ``(store, **params) ->
answer`` written from the store's public members, registered by name in ``QUESTIONS``. Adding one is one
function here: no store method, no cache wrapper.

Parameters are plain values a cache can key on: numbers, strings, tuples (never lists), None and the
``KLEstimator`` (a frozen dataclass: the estimator travels as the object it is, not as its name). What an
answer depends on besides the run's files and its parameters is the question's ``version`` (the labels file's
state for the run). Nothing here imports Streamlit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rl_board.errors import InvalidArgumentError
from rl_board.rollouts.labels import LabelStore

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from rl_board.formats.fields import KLEstimator
    from rl_board.rollouts.store import RolloutStore

Answer = TypeVar("Answer", bound=Callable[..., Any])


@dataclass(frozen=True)
class Question:
    """One question a page may ask of a run: its name, the function that answers it, and how to cache it."""

    name: str
    answer: Callable[..., Any]  # (store, **params) -> a DataFrame or a value
    keep: int = 64  # how many answers a cache keeps (per-step answers are many, whole-run ones few)
    spinner: str | None = None  # what a page says while a slow answer is worked out (None: nothing)
    version: Callable[..., str] | None = None  # (store, **params) -> what else the answer depends on

    @property
    def doc(self) -> str:
        """The first line of the answering function's docstring."""
        lines = (self.answer.__doc__ or "").strip().splitlines()
        return lines[0] if lines else ""


QUESTIONS: dict[str, Question] = {}


def question(
    *, keep: int = 64, spinner: str | None = None, version: Callable[..., str] | None = None
) -> Callable[[Answer], Answer]:
    """Register the decorated function as the question of its name."""

    def register(answer: Answer) -> Answer:
        name = answer.__name__
        if name in QUESTIONS:
            raise ValueError(f"the question {name!r} is registered twice")
        QUESTIONS[name] = Question(name, answer, keep=keep, spinner=spinner, version=version)
        return answer

    return register


def lookup(name: str) -> Question:
    """The question called ``name``; InvalidArgumentError naming the known ones."""
    found = QUESTIONS.get(name)
    if found is None:
        raise InvalidArgumentError(
            f"no question {name!r} of a run: ask one of {', '.join(sorted(QUESTIONS))}"
        )
    return found


def ask(store: RolloutStore, name: str, **params: Any) -> Any:
    """The answer of the question ``name`` about the run of ``store`` (worked out now: no cache)."""
    return lookup(name).answer(store, **params)


# -- per step, over the whole run ------------------------------------------------------------------------


@question()
def step_summary(store: RolloutStore) -> pd.DataFrame:
    """Per-step statistics of a run (``RolloutStore.step_summary``)."""
    return store.step_summary()


@question()
def column_summary(store: RolloutStore, *, columns: tuple[str, ...]) -> pd.DataFrame:
    """Per-step statistics of some per-sample columns (reward components, turns per trajectory)."""
    return store.column_summary(list(columns))


@question(keep=32)
def mismatch_summary(store: RolloutStore) -> pd.DataFrame:
    """Per-step train-vs-inference mismatch of a run that logs the trainer's log-probs."""
    return store.mismatch_summary()


@question(keep=32)
def length_distribution(store: RolloutStore) -> tuple[pd.DataFrame, np.ndarray, pd.Series]:
    """Length bins per step, their edges and the truncation share (``RolloutStore.length_distribution``)."""
    return store.length_distribution()


# -- one step -------------------------------------------------------------------------------------------


@question()
def step_frame(store: RolloutStore, *, step: int, columns: tuple[str, ...]) -> pd.DataFrame:
    """Per-sample columns of one step that the run has (for the step charts and metrics)."""
    return store.samples(step=step, columns=[c for c in columns if store.has(c)])


# -- groups and prompts ---------------------------------------------------------------------------------


@question()
def reward_threshold(store: RolloutStore) -> float | None:
    """The highest reward of a run: the default threshold for "solved" (None without rewards)."""
    return store.reward_threshold()


@question()
def groups(store: RolloutStore, *, step: int, threshold: float | None = None) -> pd.DataFrame:
    """The groups of one step (a threshold of None: the run's highest reward)."""
    return store.groups(step=step, threshold=threshold)


@question(keep=32)
def group_stats(store: RolloutStore) -> pd.DataFrame:
    """Per step: groups, mean solved share, zero-variance share (the run's highest reward = solved)."""
    return store.group_stats()


@question(keep=32)
def prompts(store: RolloutStore) -> pd.DataFrame:
    """Every prompt of a run across training (the run's highest reward = solved)."""
    return store.prompts()


@question(keep=32)
def prompt_history(store: RolloutStore, *, prompt: str, kl: KLEstimator) -> pd.DataFrame:
    """Every sample of one prompt by step: reward, length and the chosen estimator's per-sample KL."""
    return store.prompt_history(prompt=prompt, kl=kl.mean)


# -- trajectories and tools -----------------------------------------------------------------------------


@question(keep=32)
def trajectory_summary(store: RolloutStore) -> pd.DataFrame:
    """Per step of an agent run: turns and tool calls per trajectory, tool error rate, finish reasons."""
    return store.trajectory_summary()


@question(keep=32)
def tools_summary(store: RolloutStore) -> pd.DataFrame:
    """Per tool and step of an agent run: calls, errors, error rate, trajectories, their mean reward."""
    return store.tools_summary()


@question()
def tool_calls(store: RolloutStore, *, step: int) -> pd.DataFrame:
    """Every tool call of one step, with its arguments and the result that answered it."""
    return store.tool_calls(step=step).to_pandas()


# -- failure patterns (the store memoises the families too) ---------------------------------------------


@question(keep=16, spinner="Finding families of near-identical answers…")
def pattern_families(store: RolloutStore) -> pd.DataFrame:
    """The run's template families, largest first (size, share, first and last step, rewards, an example)."""
    return store.pattern_families()


@question(keep=16)
def family_shares(store: RolloutStore) -> pd.DataFrame:
    """Per step, each template family's share of the step's answers."""
    return store.family_shares()


@question(keep=16)
def signals_by_step(store: RolloutStore) -> pd.DataFrame:
    """Per step: samples, loops and mixed-script answers."""
    return store.signals_by_step()


# -- labels: the answer changes with the labels file too, so its version for the run is part of the key ------


def _labels_version(store: RolloutStore, *, labels_file: str) -> str:
    """The labels file's version for the run: changes with every label added, removed or noted (by any
    process)."""
    return LabelStore(Path(labels_file)).version(store.source)


@question(keep=32, version=_labels_version)
def labels(store: RolloutStore, *, labels_file: str) -> pd.DataFrame:
    """Every label of the run with the sample it is on now (``RolloutStore.labels``)."""
    return store.labels(LabelStore(Path(labels_file)))


@question(keep=32, version=_labels_version)
def tags_by_sample(store: RolloutStore, *, labels_file: str) -> pd.DataFrame:
    """``step, sample, tags`` (comma-joined) of every labelled sample of the run."""
    return store.tags_by_sample(LabelStore(Path(labels_file)))
