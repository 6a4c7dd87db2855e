"""RolloutStore: the one interface between rollout logs and everything that shows them."""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from rl_board import columns
from rl_board.errors import InvalidArgumentError
from rl_board.formats import fields
from rl_board.formats import schema as S
from rl_board.formats.fieldmap import FieldMap
from rl_board.lazy import pc, pd
from rl_board.rollouts import derive, patterns
from rl_board.rollouts.cache import sync as cache
from rl_board.rollouts.opening import OpenedRun, list_runs
from rl_board.rollouts.report import LoadReport
from rl_board.rollouts.runview import FILE_COL, INDEX_COL, LINE_COL, STEP_COL, RunView

# What only some questions use is imported by them (a command that opens a cached run and summarises it
# imports none of it; tests/unit/test_cli_startup.py holds that).
if TYPE_CHECKING:
    import pyarrow.dataset as pads

    from rl_board.rollouts import labels as labels_mod
    from rl_board.rollouts.filters import SampleFilter
    from rl_board.rollouts.tokens import TokenText
    from rl_board.sources.remote import MirrorResult

log = logging.getLogger(__name__)
TOKEN_IDS = "response_token_ids"
REMOTE_EVERY = 10.0  # seconds between listings of a remote run while a page checks it for new data

__all__ = ["RolloutStore", "SampleDetail", "STEP_COL", "INDEX_COL", "FILE_COL", "LINE_COL"]


@dataclass
class SampleDetail:
    """One sample: every field (known and extra), its source, and its tokens."""

    step: int
    index: int
    file: str
    line: int
    fields: dict[str, Any]
    tokens: pd.DataFrame
    n_tokens: int | None
    n_logprobs: int | None
    tokens_from: str = "log"  # "log" (token strings), "tokenizer" (ids decoded), "ids" (ids shown as ids)

    @property
    def length_mismatch(self) -> bool:
        return self.n_tokens is not None and self.n_logprobs is not None and self.n_tokens != self.n_logprobs


class RolloutStore:
    """A rollout run opened through its columnar cache. Pages code against this.

    Open with ``RolloutStore.open(run_dir, cache_dir=..., progress=...)``: the
    first open parses the run's ``*.jsonl`` files into the cache; later opens
    read only the cache (memory-mapped) plus any bytes appended since.

    Questions it answers (all keyword-only, plain return types):

    - ``list_runs(root, cache_dir=None) -> DataFrame`` (static): runs under a
      root with ``run`` (relative path), ``path``, ``files``, ``bytes``,
      ``modified``, and ``samples`` / ``steps`` when the run has been cached.
    - ``report`` -> :class:`LoadReport`: files, counts, bad lines (file, line,
      reason), repaired lines, timing, ``from_cache``.
    - ``steps`` -> sorted list of step numbers; ``num_samples``; ``fields`` ->
      sorted names of the log fields present (known and extra).
    - ``step_summary() -> DataFrame``: one row per step, sorted numerically, with
      ``step``, ``samples`` and ``{reward, ref_reward, valid_reward,
      ref_valid_reward, kl, kl_k2, log_ratio, length, length_chars,
      ref_length_chars}_{mean, std, min, max, count}`` for the fields present
      (std is the population std; NaN values are skipped).
    - ``run_summary() -> dict``: what ``rl-board summary`` prints of the samples (steps, counts, fields,
      per-step reward, KL and length), kept in the cache for the files as they are.
    - ``samples(step=None, columns=None, sort_by=None, descending=False,
      filters=None, offset=0, limit=None) -> DataFrame``: per-sample rows of
      one step (or of all steps), always with ``step``, ``sample`` (index
      within its step: files in natural order, then line order), ``file`` and
      ``line``; token arrays are never included. Sort by any column; nulls and
      NaN sort last.
    - ``count(step=None, filters=None) -> int``: how many samples match.
    - ``sample(step=, index=) -> SampleDetail``: every field plus the per-token
      table (token, token_reward, log_ratio, kl, kl_k2, value, logp, ref_logp,
      prob, ref_prob); its KL columns come from the cached float64-taken
      ``token_log_ratio``, so they add up to the sample's ``kl_sum`` etc.
    - ``refresh(progress=None) -> bool``: ingest bytes appended since the last
      look; True when anything changed. ``signature`` changes exactly then.

    Bad input never raises: it is in ``report``. ``NotFoundError`` is raised
    for a missing run folder, ``InvalidArgumentError`` for bad arguments.

    Opening and keeping the run current is ``opening.OpenedRun``'s; this class
    only asks the view it holds questions.
    """

    def __init__(self, run: OpenedRun) -> None:
        self._run = run
        self._mismatch: tuple[str, pd.DataFrame] | None = None
        self._memo: dict[
            tuple[str, int | None], tuple[str, Any]
        ] = {}  # what -> (signature it was built at, it)

    @classmethod
    def open(
        cls,
        run_dir: str | Path,
        *,
        cache_dir: str | Path | None = None,
        progress: cache.Progress | None = None,
        allowed_roots: list[Path] | None = None,
        fields: FieldMap | None = None,
    ) -> RolloutStore:
        """Open a run (a folder, a file, a URL or a Parquet dataset; see ``OpenedRun.open``)."""
        return cls(
            OpenedRun.open(
                run_dir, cache_dir=cache_dir, progress=progress, allowed_roots=allowed_roots, fields=fields
            )
        )

    list_runs = staticmethod(list_runs)

    # -- the opened run ----------------------------------------------------

    @property
    def _view(self) -> RunView:
        return self._run.view

    @property
    def _lock(self) -> threading.Lock:
        return self._run.lock

    @property
    def report(self) -> LoadReport:
        return self._run.report

    @property
    def signature(self) -> str:
        """Changes exactly when the run's data changed."""
        return self._run.signature

    @property
    def run_dir(self) -> Path:
        return self._run.run_dir

    @property
    def source(self) -> str:
        """The run as the user named it: its URL for a remote run, else its path."""
        return self._run.source

    @property
    def url(self) -> str | None:
        return self._run.url

    @property
    def remote(self) -> MirrorResult | None:
        return self._run.remote

    @property
    def allowed(self) -> list[Path] | None:
        return self._run.allowed

    @property
    def cache_root(self) -> Path:
        return self._run.cache_root

    @property
    def read_in_place(self) -> bool:
        """Whether the run is a Parquet dataset read where it lies (no cache)."""
        return self._run.dataset is not None

    @property
    def fields_map(self) -> FieldMap:
        return self._run.fields_map

    def refresh(self, *, progress: cache.Progress | None = None) -> bool:
        """Pick up appended or changed files; True when anything changed."""
        return self._run.refresh(progress=progress)

    def stale(self) -> bool:
        """Whether the files changed since the last load (cheap: for every page rerun)."""
        return self._run.stale()

    # -- questions ---------------------------------------------------------

    @property
    def steps(self) -> list[int]:
        return [int(s) for s in self._view.steps]

    @property
    def num_samples(self) -> int:
        return self._view.table.num_rows

    @property
    def fields(self) -> list[str]:
        """Log fields that hold at least one value (derived columns excluded)."""
        derived = set(S.DERIVED_SAMPLE_FIELDS) | set(S.DERIVED_TOKEN_LISTS) | {S.LINE, patterns.TEMPLATE}
        v = self._view
        return sorted(n for n in v.names if n not in derived and v.has(n))

    @property
    def extra_fields(self) -> list[str]:
        return [f for f in self.fields if f not in S.KNOWN_FIELDS]

    def has(self, name: str) -> bool:
        """Whether a field or derived column holds at least one value."""
        return self._view.has(name)

    @property
    def numeric_extras(self) -> list[str]:
        """The log's own columns (not rl-board fields) that hold numbers: sortable and range-filterable."""
        schema = self._view.schema
        return [name for name in self.extra_fields if _numeric(schema.field(name).type) and self.has(name)]

    @property
    def reward_components(self) -> list[str]:
        """The columns the reward is made of, when the reader made it (TRL's reward functions, a field map's
        sum); else the number columns named like parts of a reward (verl's acc, prime-rl's reward/<name>)."""
        made = self._view.reward_parts
        if made is not None:
            return [name for name in made[0] if self.has(name)]
        return [name for name in self.numeric_extras if fields.is_reward_component(name)]

    @property
    def reward_weights(self) -> dict[str, float]:
        """Each reward component's weight in the reward (1 unless the reader weighted it)."""
        made = self._view.reward_parts
        return {name: made[0][name] if made else 1.0 for name in self.reward_components}

    @property
    def reward_made_by(self) -> str:
        """How rl-board knows which columns make the reward ("" when it did not make it)."""
        made = self._view.reward_parts
        return made[1] if made else ""

    def column_summary(self, columns: list[str]) -> pd.DataFrame:
        """Per-step count, mean, std, min and max of numeric per-sample columns (``{name}_mean``, ...)."""
        present = [c for c in columns if self.has(c)]
        frame = self.samples(columns=present)
        return derive.step_summary(frame, {c: c for c in present})

    def groups(self, *, step: int | None = None, threshold: float | None = None) -> pd.DataFrame:
        """GRPO groups of one step (or all steps): see ``groups.group_table``.

        The default threshold for "solved" is the highest reward of the whole
        run, so it does not change from one step to the next.
        """
        from rl_board.rollouts import groups

        wanted = [S.PROMPT, S.REWARD, groups.GROUP, groups.ADVANTAGE]
        frame = self.samples(step=step, columns=[c for c in wanted if self.has(c)])
        return groups.group_table(
            frame, threshold=self.reward_threshold() if threshold is None else threshold
        )

    def reward_threshold(self) -> float | None:
        """The reward that counts as solved unless the user sets one: the run's highest (None without
        rewards)."""
        from rl_board.rollouts import groups

        if not self.has(S.REWARD):
            return None
        best = groups.default_threshold(self._view.table.column(S.REWARD).to_pandas().astype("float64"))
        return None if np.isnan(best) else best

    def prompts(self, *, threshold: float | None = None) -> pd.DataFrame:
        """Every prompt over the run: steps seen, first step solved, regressions, status (see
        ``prompts.py``)."""
        from rl_board.rollouts import prompts

        if not (self.has(S.PROMPT) and self.has(S.REWARD)):
            return prompts.prompt_table(pd.DataFrame(columns=[S.STEP, S.PROMPT, S.REWARD]), 0.0)
        frame = self.samples(columns=[S.PROMPT, S.REWARD])
        if threshold is None:
            threshold = self.reward_threshold()
        # no finite reward (threshold None): NaN, which no reward reaches, as None did before
        return prompts.prompt_table(frame, float("nan") if threshold is None else threshold)

    def prompt_history(self, *, prompt: str, kl: str = S.KL_MEAN) -> pd.DataFrame:
        """Every sample of one prompt, by step: reward, length and KL (the per-sample column ``kl``, k3's
        mean unless another estimator's is named) where the run has them."""
        wanted = [S.PROMPT, S.REWARD, S.N_TOKENS, S.RESPONSE_CHARS, kl]
        frame = self.samples(columns=[c for c in wanted if self.has(c)])
        if S.PROMPT not in frame.columns:
            return frame.iloc[0:0]
        return frame[frame[S.PROMPT] == prompt].drop(columns=[S.PROMPT]).reset_index(drop=True)

    def prompt_rewards(self, *, step: int | None = None) -> pd.DataFrame:
        """Per prompt of one step (or all steps): samples, mean reward, where its best answer is."""
        from rl_board.rollouts import matchup

        if not (self.has(S.PROMPT) and self.has(S.REWARD)):
            return matchup.prompt_rewards(pd.DataFrame(columns=[S.STEP, "sample", S.PROMPT, S.REWARD]))
        return matchup.prompt_rewards(self.samples(step=step, columns=[S.PROMPT, S.REWARD]))

    def versus(
        self, other: RolloutStore, *, step: int | None = None, other_step: int | None = None
    ) -> pd.DataFrame:
        """The prompts this run (at ``step``) and ``other`` (at ``other_step``) share: rewards and
        gain (other − this)."""
        from rl_board.rollouts import matchup

        return matchup.match(self.prompt_rewards(step=step), other.prompt_rewards(step=other_step))

    def mismatch(self) -> pd.DataFrame:
        """Per sample: mean and max train-vs-inference k3 mismatch (``mismatch.py``); empty without trainer
        log-probs."""
        from rl_board.rollouts import mismatch

        if not self.has(mismatch.TRAIN_LOGPROBS):
            return pd.DataFrame(columns=[S.STEP, "sample", mismatch.MEAN, mismatch.MAX])
        with self._lock:  # computed once per state of the files
            if self._mismatch is None or self._mismatch[0] != self.signature:
                v = self._view
                parts = [
                    mismatch.per_sample(piece) for piece in v.pieces([S.LOGPROBS, mismatch.TRAIN_LOGPROBS])
                ]
                mean, top = (np.concatenate([p[i] for p in parts]) for i in (0, 1))
                frame = v.frame(v.order, [])
                frame[mismatch.MEAN] = mean[v.order]
                frame[mismatch.MAX] = top[v.order]
                self._mismatch = (self.signature, frame[[S.STEP, "sample", mismatch.MEAN, mismatch.MAX]])
            return self._mismatch[1].copy()

    def mismatch_summary(self) -> pd.DataFrame:
        """Per step: ``mismatch_{mean,std,min,max,count}`` and ``mismatch_max_{...}`` of the per-sample
        values."""
        from rl_board.rollouts import mismatch

        return derive.step_summary(self.mismatch(), {"mismatch": mismatch.MEAN, "mismatch_max": mismatch.MAX})

    def length_column(self) -> str | None:
        """How the run's response lengths are counted: tokens when it has them, else characters."""
        return next((c for c in (S.N_TOKENS, S.RESPONSE_CHARS) if self.has(c)), None)

    def length_distribution(self) -> tuple[pd.DataFrame, np.ndarray, pd.Series]:
        """Per step: sample counts per length bin (step × bin), the bin edges, and the truncation share."""
        from rl_board.rollouts import lengths

        column = self.length_column()
        if column is None:
            return pd.DataFrame(), np.array([]), pd.Series(dtype="float64")
        frame = self.samples(columns=[column])
        counts, edges = lengths.length_table(frame, column)
        return counts, edges, lengths.truncation_share(frame, column)

    # -- failure patterns ------------------------------------------------------

    def find_templates(self) -> None:
        """Work out each answer's template family over the whole run (``patterns.py``), once per state of the
        run, and add it as the ``template`` column (0 for none; a family's number is its size rank)."""
        with self._lock:
            view = self._run.view
            if patterns.TEMPLATE in view.names or not self.has(S.RESPONSE):
                return
            signature = self.signature
        responses = view.frame(np.arange(view.table.num_rows), [S.RESPONSE])[S.RESPONSE].tolist()
        ids = patterns.template_ids(responses)
        with self._lock:
            if self.signature == signature and self._run.view is view:  # not replaced by a refresh meanwhile
                self._run.view = view.with_column(patterns.TEMPLATE, pa.array(ids, pa.int64()))

    def pattern_families(self) -> pd.DataFrame:
        """The run's template families, largest first (``patterns.FAMILY_COLUMNS``)."""
        self.find_templates()
        wanted = [c for c in (patterns.TEMPLATE, S.REWARD, S.RESPONSE) if c in self._view.names]
        return (
            patterns.families(self.samples(columns=wanted))
            if patterns.TEMPLATE in wanted
            else patterns.families(pd.DataFrame(columns=[S.STEP, "sample", patterns.TEMPLATE]))
        )

    def signal_counts(self) -> dict[str, int]:
        """How many answers loop (``repetition`` at or above ``patterns.LOOP``) and mix scripts."""
        frame = self.samples(columns=[c for c in (S.REPETITION, S.SCRIPTS) if self.has(c)])
        loops = int((frame[S.REPETITION] >= patterns.LOOP).sum()) if S.REPETITION in frame.columns else 0
        mixed = (
            int(frame[S.SCRIPTS].str.contains("+", regex=False).sum()) if S.SCRIPTS in frame.columns else 0
        )
        return {"loops": loops, "mixed_scripts": mixed}

    def signals_by_step(self) -> pd.DataFrame:
        """Per step: ``samples``, ``loops`` (``repetition`` at or above ``patterns.LOOP``) and
        ``mixed_scripts`` (answers in two or more scripts): where in training those failures start."""
        frame = self.samples(columns=[c for c in (S.REPETITION, S.SCRIPTS) if self.has(c)])
        loops = frame[S.REPETITION] >= patterns.LOOP if S.REPETITION in frame.columns else False
        mixed = (
            frame[S.SCRIPTS].str.contains("+", regex=False).fillna(False).astype(bool)
            if S.SCRIPTS in frame.columns
            else False
        )
        marks = pd.DataFrame({S.STEP: frame[S.STEP], "loops": loops, "mixed_scripts": mixed}).astype(
            {"loops": "int64", "mixed_scripts": "int64"}
        )
        out = marks.groupby(S.STEP, sort=True).agg(
            samples=("loops", "size"), loops=("loops", "sum"), mixed_scripts=("mixed_scripts", "sum")
        )
        return out.reset_index()

    def family_shares(self) -> pd.DataFrame:
        """Per step, each family's share of the step's answers."""
        self.find_templates()
        if patterns.TEMPLATE not in self._view.names:
            return pd.DataFrame(columns=[S.STEP])
        return patterns.shares_by_step(self.samples(columns=[patterns.TEMPLATE]))

    # -- labels ----------------------------------------------------------------

    def label_key(self, *, step: int, index: int) -> dict[str, Any]:
        """What keeps a label on this sample: the run, its step, file and line, and a digest of its text."""
        from rl_board.rollouts import labels as labels_mod

        v = self._view
        rows = v.rows(step)
        if not 0 <= index < len(rows):
            raise InvalidArgumentError(f"step {step} has samples 0..{len(rows) - 1}, not {index}")
        row = int(rows[index])
        texts = v.frame(np.array([row]), [c for c in (S.PROMPT, S.RESPONSE) if c in v.names])
        prompt = texts[S.PROMPT].iloc[0] if S.PROMPT in texts.columns else None
        response = texts[S.RESPONSE].iloc[0] if S.RESPONSE in texts.columns else None
        return {
            "run": self.source,
            "step": int(step),
            "file": v.files[v.file_idx[row]],
            "line": int(v.line_of[row]),
            "sample_digest": labels_mod.digest(prompt, response),
        }

    def labels(self, store: labels_mod.LabelStore) -> pd.DataFrame:
        """Every label of this run with the sample it is on now:
        ``step, sample, file, line, tag, note, created, updated``; a label whose sample is gone (its log
        rewritten without it) has no ``sample``."""
        found = store.of_run(self.source)
        columns = ["step", "sample", "file", "line", "tag", "note", "created", "updated"]
        if not found:
            return pd.DataFrame(columns=columns)
        v = self._view
        frame = pd.DataFrame(
            [(x.step, x.file, x.line, x.tag, x.note, x.created, x.updated) for x in found],
            columns=[c for c in columns if c != "sample"],
        )
        # where each label's (step, file, line) is now, over every row at once (a run has many rows, few
        # labels)
        files = pd.Series(range(len(v.files)), index=list(v.files), dtype="int64")
        frame_file = frame["file"].map(files).fillna(-1).astype("int64")
        here = pd.DataFrame(
            {
                "step": v.step_of.astype("int64"),
                "file_idx": v.file_idx.astype("int64"),
                "line": v.line_of.astype("int64"),
                "sample": v.within.astype("int64"),
            }
        )
        keys = pd.DataFrame(
            {
                "step": frame["step"].astype("int64"),
                "file_idx": frame_file,
                "line": frame["line"].astype("int64"),
            }
        )
        placed = keys.merge(
            here.drop_duplicates(["step", "file_idx", "line"]), how="left", on=["step", "file_idx", "line"]
        )
        frame.insert(1, "sample", placed["sample"].astype("Int64").to_numpy())
        return frame[columns]

    def with_tags(self, table: pa.Table, store: labels_mod.LabelStore) -> pa.Table:
        """``table`` (step and sample columns) with a ``tags`` column: each sample's tags, comma-joined."""
        tags = self.tags_by_sample(store)
        lookup = {
            (int(s), int(i)): t for s, i, t in zip(tags["step"], tags["sample"], tags["tags"], strict=True)
        }
        steps, samples = table.column(STEP_COL).to_pylist(), table.column(INDEX_COL).to_pylist()
        values = [lookup.get((s, i)) for s, i in zip(steps, samples, strict=True)]
        return table.append_column("tags", pa.array(values, pa.string()))

    def tagged(self, store: labels_mod.LabelStore, tag: str) -> list[tuple[int, int]]:
        """The (step, sample) of every sample of the run carrying ``tag`` (for
        ``SampleFilter.build(only=...)``)."""
        frame = self.labels(store).dropna(subset=["sample"])
        frame = frame[frame["tag"] == tag]
        return [(int(s), int(i)) for s, i in zip(frame["step"], frame["sample"], strict=True)]

    def tags_by_sample(self, store: labels_mod.LabelStore) -> pd.DataFrame:
        """``step, sample, tags`` (sorted, comma-joined) for every labelled sample of the run."""
        frame = self.labels(store).dropna(subset=["sample"])
        if frame.empty:
            return pd.DataFrame(columns=["step", "sample", "tags"])
        grouped = frame.groupby(["step", "sample"])["tag"].agg(lambda t: ", ".join(sorted(set(t))))
        return grouped.rename("tags").reset_index()

    # -- trajectories ------------------------------------------------------

    @property
    def multi_turn(self) -> bool:
        """Whether any sample is more than a prompt and one answer (it keeps its turns as messages): it called
        a tool, or it has more turns than a system prompt, a question and an answer."""
        if not (self.has(S.MESSAGES) and self.has(S.TURNS)):
            return False
        table = self._view.table
        n_calls = pc.max(table.column(S.TOOL_CALLS)).as_py() if self.has(S.TOOL_CALLS) else 0
        return (n_calls or 0) > 0 or (pc.max(table.column(S.TURNS)).as_py() or 0) > 3

    def turns(self, *, step: int | None = None) -> pa.Table:
        """One row per message: ``step, sample, turn`` (0-based) ``, role, content, tool_name, tool_call_id,
        n_tool_calls, error, reward, tokens, trained`` (see ``trajectories.TURN_COLUMNS``)."""
        from rl_board.rollouts import trajectories

        return self._cached("turns", step, lambda: trajectories.turn_table(self._trajectories(step)))

    def tool_calls(self, *, step: int | None = None) -> pa.Table:
        """One row per tool call:
        ``step, sample, turn, call, name, arguments, id, answered, error, result``."""
        from rl_board.rollouts import trajectories

        return self._cached("tool_calls", step, lambda: trajectories.call_table(self._messages(step)))

    def tool_usage(self, *, step: int | None = None) -> pa.Table:
        """Per trajectory and tool it used: ``step, sample, tool, calls, errors`` (errors: the tool's results
        that say the call failed). Read for every trajectory at once (``calls.py``), far faster than
        ``tool_calls``."""
        return self._cached("tool_usage", step, lambda: self._tool_usage(step))

    def _tool_usage(self, step: int | None) -> pa.Table:
        """Calls in turns (read by DuckDB) and calls logged without turns (``tool_call_log``), together."""
        from rl_board.rollouts import calls

        usage = calls.usage_table(self._message_table(step))
        if not self.has(S.TOOL_CALL_LOG):
            return usage
        logs = self.samples(step=step, columns=[S.TOOL_CALL_LOG])
        return calls.with_logged(usage, logs[S.STEP], logs["sample"], logs[S.TOOL_CALL_LOG])

    def trajectory_summary(self) -> pd.DataFrame:
        """Per step: turns and tool calls per trajectory, tool error rate, finish-reason shares."""
        from rl_board.rollouts import trajectories

        wanted = [c for c in (*S.TRAJECTORY_FIELDS, S.FINISH_REASON) if c in self._view.names]
        return trajectories.step_table(self.samples(columns=wanted))

    def tools_summary(self) -> pd.DataFrame:
        """Per tool and step: calls, errors, error rate, trajectories that used it and their mean reward."""
        from rl_board.rollouts import trajectories

        rewards = self.samples(columns=[S.REWARD] if self.has(S.REWARD) else [])
        return trajectories.tool_table(
            self.tool_usage(), rewards[[c for c in (S.STEP, "sample", S.REWARD) if c in rewards.columns]]
        )

    def _messages(self, step: int | None) -> pd.DataFrame:
        """The samples with turns (``messages``) or with tool calls logged without turns
        (``tool_call_log``)."""
        wanted = [c for c in (S.MESSAGES, S.TOOL_CALL_LOG) if self.has(c)]
        frame = self.samples(step=step, columns=wanted)
        if S.MESSAGES not in frame.columns:
            frame[S.MESSAGES] = pd.Series([None] * len(frame), dtype=object)
        present = frame[S.MESSAGES].notna()
        if S.TOOL_CALL_LOG in frame.columns:
            present |= frame[S.TOOL_CALL_LOG].notna()
        return frame[present]

    def _trajectories(self, step: int | None) -> pd.DataFrame:
        """Every sample's messages, and the prompt and answer of those kept as text (their turns)."""
        wanted = [c for c in (S.MESSAGES, S.PROMPT, S.RESPONSE) if self.has(c)]
        frame = self.samples(step=step, columns=wanted)
        for name in (S.MESSAGES, S.PROMPT, S.RESPONSE):
            if name not in frame.columns:
                frame[name] = pd.Series([None] * len(frame), dtype=object)
        return frame

    def _message_table(self, step: int | None) -> pa.Table:
        """step, sample, messages of the samples that keep messages, as Arrow (no frame of 10,000 JSON
        texts)."""
        v = self._view
        rows = v.rows(step)
        if not self.has(S.MESSAGES):
            rows = rows[:0]
        table = (
            v.take([S.MESSAGES], rows)
            if S.MESSAGES in v.names
            else pa.table({S.MESSAGES: pa.nulls(0, pa.string())})
        )
        table = pa.table(
            {
                S.STEP: pa.array(v.step_of[rows], pa.int64()),
                "sample": pa.array(v.within[rows], pa.int64()),
                S.MESSAGES: pc.cast(table.column(S.MESSAGES), pa.string()),
            }
        )
        return table.filter(pc.is_valid(table.column(S.MESSAGES)))

    def _cached(self, what: str, step: int | None, build: Any) -> Any:
        """``build()`` once per state of the run (and step): reading every trajectory's JSON is not free."""
        key = (what, step)
        with self._lock:
            known = self._memo.get(key)
            if known is not None and known[0] == self.signature:
                return known[1]
        value = build()
        with self._lock:
            self._memo[key] = (self.signature, value)
        return value

    def group_stats(self) -> pd.DataFrame:
        """Per step: how many groups, their mean solved share and the share with zero reward variance."""
        from rl_board.rollouts import groups

        return groups.step_group_stats(self.groups())

    def arrow_samples(self) -> pa.Table | pads.Dataset:
        """Every sample as one Arrow table over the memory-mapped cache (no copy), for SQL engines.

        Columns: ``step``, ``sample`` (index within its step), ``file``, ``line`` and every logged and
        derived column, token arrays included as list columns. Rows are in cache order, not step order.
        """
        in_place = self._run.dataset
        if in_place is not None:  # a Parquet dataset read in place: the engine reads its files itself
            from rl_board.rollouts import lazy  # pyarrow.dataset: for datasets only

            if not isinstance(self._view, lazy.LazyRunView):
                raise TypeError(f"a dataset read in place has a lazy view, not {type(self._view).__name__}")
            return lazy.as_arrow_dataset(in_place, self._view.heavy.paths)
        v = self._view
        table = v.table.drop_columns(
            [c for c in (S.STEP, S.LINE, INDEX_COL, FILE_COL, LINE_COL) if c in v.table.column_names]
        )
        files = pa.DictionaryArray.from_arrays(
            columns.from_numpy(v.file_idx, pa.int32()), columns.strings(v.files or [])
        )
        head = [
            (STEP_COL, columns.from_numpy(v.step_of, pa.int64())),
            (INDEX_COL, columns.from_numpy(v.within, pa.int64())),
            (FILE_COL, files),
            (LINE_COL, columns.from_numpy(v.line_of, pa.int64())),
        ]
        for k, (name, column) in enumerate(head):
            table = table.add_column(k, name, column)
        return table

    def samples_per_step(self) -> dict[int, int]:
        v = self._view
        return {int(s): int(c) for s, c in zip(v.steps, v.counts, strict=True)}

    def step_summary(self) -> pd.DataFrame:
        """Per-step statistics; computed once per change of the run."""
        return self._view.summary().copy()

    def run_summary(self) -> dict[str, Any]:
        """The run's samples in numbers, as ``rl-board summary`` prints them: ``samples``, ``steps``,
        ``samples_per_step`` (step as a string key), ``fields``, ``length_mismatches`` and ``step_stats``
        (per step: samples, reward mean and std, and k3 KL, reference reward and length means where present;
        NaN as None). Kept in the run's cache for the files as they are, so that a later look at the
        unchanged run answers it without opening the run (``opening.summary_kept``)."""
        signature = self.signature
        stats = self.step_summary()
        for column in ("reward_mean", "reward_std"):
            if column not in stats.columns:
                stats[column] = float("nan")  # no sample has a reward: the keys stay, as null
        keep = [c for c in STEP_STATS if c in stats.columns]
        summary = {
            "samples": self.num_samples,
            "steps": self.steps,
            "samples_per_step": {str(k): v for k, v in self.samples_per_step().items()},
            "fields": self.fields,
            "length_mismatches": self.report.length_mismatches,
            "step_stats": [{k: _plain(v) for k, v in row.items()} for row in stats[keep].to_dict("records")],
        }
        if self.signature == signature:  # not refreshed meanwhile
            self._run.keep_summary(summary, signature)
        return summary

    def count(self, *, step: int | None = None, filters: SampleFilter | None = None) -> int:
        """Number of samples of ``step`` (or all steps) passing ``filters``."""
        return len(self._view.matching(step, filters))

    def samples(
        self,
        *,
        step: int | None = None,
        columns: list[str] | None = None,
        sort_by: str | None = None,
        descending: bool = False,
        filters: SampleFilter | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> pd.DataFrame:
        """Per-sample rows (see the class docstring)."""
        v = self._view
        rows = v.matching(step, filters)
        if sort_by is not None:
            rows = rows[v.sort_order(rows, sort_by, descending)]
        rows = rows[offset : None if limit is None else offset + limit]
        return v.frame(rows, v.columns(columns))

    def sample(self, *, step: int, index: int, tokenizer: TokenText | None = None) -> SampleDetail:
        """One sample by its step and index within the step (token ids decoded with ``tokenizer`` if
        given)."""
        v = self._view
        rows = v.rows(step)
        if not 0 <= index < len(rows):
            raise InvalidArgumentError(f"step {step} has samples 0..{len(rows) - 1}, not {index}")
        row = int(rows[index])
        record = v.record(row)
        strings, tokens_from = _token_strings(record, tokenizer)
        tokens = derive.token_frame(
            tokens=strings,
            logprobs=_floats(record.get(S.LOGPROBS)),
            ref_logprobs=_floats(record.get(S.REF_LOGPROBS)),
            values=_floats(record.get(S.VALUES)),
            token_rewards=_floats(record.get(S.TOKEN_REWARDS)),
            log_ratios=_floats(record.get(S.TOKEN_LOG_RATIO)),
        )
        _add_mismatch(tokens, record)
        _add_token_signals(tokens, record)
        n_tok, n_lp = strings, record.get(S.LOGPROBS)
        return SampleDetail(
            step=step,
            index=index,
            file=v.files[v.file_idx[row]],
            line=int(record[S.LINE]),
            fields={k: val for k, val in record.items() if k not in (S.LINE, *S.DERIVED_TOKEN_LISTS)},
            tokens=tokens,
            n_tokens=None if n_tok is None else len(n_tok),
            n_logprobs=None if n_lp is None else len(n_lp),
            tokens_from=tokens_from,
        )


# The per-step statistics a run's summary gives, in its order (reward's mean and std even without rewards).
STEP_STATS = ("step", "samples", "reward_mean", "reward_std", "kl_mean", "ref_reward_mean", "length_mean")


def _plain(value: Any) -> Any:
    """A number as JSON holds it: numpy scalars unwrapped, NaN and infinities as None."""
    if hasattr(value, "item"):
        value = value.item()
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _add_mismatch(tokens: pd.DataFrame, record: dict[str, Any]) -> None:
    """Trainer log-probs beside the engine's, and their per-token mismatch, when the log has both."""
    from rl_board.rollouts import mismatch

    train = _floats(record.get(mismatch.TRAIN_LOGPROBS))
    if train is None or len(train) < len(tokens) or not len(tokens):
        return
    tokens["train_logp"] = train[: len(tokens)]
    tokens["mismatch"] = mismatch.k3(
        tokens["logp"].to_numpy(dtype=np.float64), tokens["train_logp"].to_numpy()
    )


def _add_token_signals(tokens: pd.DataFrame, record: dict[str, Any]) -> None:
    """Per-token advantage and entropy, when the log has them for every token (NeMo-RL, prime-rl)."""
    for name in ("advantage", "entropy", "loss_mask"):
        values = _floats(record.get(f"token_{name}"))
        if values is not None and len(values) >= len(tokens) and len(tokens):
            tokens[name] = values[: len(tokens)]


def _token_strings(record: dict[str, Any], tokenizer: TokenText | None) -> tuple[list[str] | None, str]:
    """The response's token strings, from the log or from its token ids."""
    from rl_board.rollouts.tokens import as_ids

    if record.get(S.RESPONSE_TOKENS) is not None:
        return record[S.RESPONSE_TOKENS], "log"
    ids = record.get(TOKEN_IDS)
    if not ids:
        return None, "log"
    return (tokenizer.pieces(ids), "tokenizer") if tokenizer is not None else (as_ids(ids), "ids")


def _numeric(kind: pa.DataType) -> bool:
    return pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_boolean(kind)


def _floats(values: list | None) -> np.ndarray | None:
    if values is None:
        return None
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
