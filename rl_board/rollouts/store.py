"""RolloutStore: the one interface between rollout logs and everything that shows them."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from rl_board import formats
from rl_board.errors import InvalidArgumentError, NotFoundError, RLBoardError
from rl_board.formats import Format, fieldmap, fields
from rl_board.formats import schema as S
from rl_board.formats.fieldmap import FieldMap
from rl_board.rollouts import derive, groups, lazy, lengths, matchup, mismatch, prompts
from rl_board.rollouts.cache import sync as cache
from rl_board.rollouts.filters import SampleFilter
from rl_board.rollouts.report import FileReport, LoadReport, build_report
from rl_board.rollouts.runview import FILE_COL, INDEX_COL, LINE_COL, STEP_COL, RunView
from rl_board.rollouts.tokens import TokenText, as_ids
from rl_board.sources import remote, settings
from rl_board.sources.catalogue import catalogue
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
    """

    def __init__(self, run_dir: Path, cache_root: Path, allowed: list[Path] | None = None,
                 fields: FieldMap | None = None) -> None:
        self.run_dir = run_dir
        self.fields_map: FieldMap = dict(fields or {})  # the caller's field map (rl-board.toml adds to it)
        self.cache_root = cache_root
        self.allowed = allowed
        self.report = LoadReport(run=str(run_dir))
        self.url: str | None = None  # the remote URL this run is a mirror of (s3://..., gs://...), if any
        self.remote: MirrorResult | None = None  # what the last look at the store fetched
        self._listed_at = 0.0
        self.signature = ""
        self._view = RunView.from_parts([], [])
        self._lock = threading.Lock()
        self._mapped: dict[str, pa.Table] = {}  # segment name -> its memory-mapped table
        self._mismatch: tuple[str, pd.DataFrame] | None = None
        self._dataset: lazy.Located | None = None  # a Parquet dataset read in place (no cache)

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
        """Open a run folder, building or updating its cache as needed.

        With ``allowed_roots``, files that link outside those folders are
        reported and not read (the server passes its served roots). A URL
        (``s3://bucket/run``, ``gs://...``, ``hf://...``) is first brought into
        the local mirror (``sources/remote.py``): only new bytes are fetched.
        An rl-board Parquet dataset (``step=N/`` folders, from ``rl-board export``)
        is read where it lies, locally or in a bucket, with no cache (``lazy.py``).
        """
        root = Path(cache_dir).expanduser() if cache_dir else cache.default_cache_dir()
        url = str(run_dir).strip() if remote.is_url(str(run_dir)) else None
        for canonical in fields or {}:
            fieldmap.check(canonical)
        local = None if url else Path(run_dir).expanduser()
        in_bucket = remote.in_place_url(local, root) if local is not None else None
        copy_of = remote.url_of(local, root) if local is not None and not in_bucket else None
        if copy_of:  # this cache's copy of a bucket's run (a served remote root): completed from the bucket
            url, found, mirrored = copy_of, None, _completed(copy_of, root, progress)
        else:  # a URL, a local path, or the copy of a bucket's Parquet dataset (read in the bucket)
            url = url or in_bucket
            found = _in_place(url or local, fields)
            mirrored = remote.mirror(url, root, progress=progress) if url and found is None else None
        path = mirrored.local if mirrored else remote.local_path(url, root) if url else Path(run_dir).expanduser()
        if found is None and not path.exists():
            raise NotFoundError(f"no run folder or file at {path}")
        store = cls(path, root, allowed_roots, fields)
        store.url, store.remote, store._listed_at, store._dataset = url, mirrored, time.monotonic(), found
        if url:
            store.report.run = url
        store._load(progress=progress, verify=True)
        return store

    @property
    def source(self) -> str:
        """The run as the user named it: its URL for a remote run, else its path."""
        return self.url or str(self.run_dir)

    def refresh(self, *, progress: cache.Progress | None = None) -> bool:
        """Pick up appended or changed files (for a remote run: fetch their new bytes first)."""
        before = self.signature
        with self._lock:
            self._mirror(progress)
            self._load(progress=progress, verify=False)
        return self.signature != before

    def stale(self) -> bool:
        """Cheap check (one stat per file) whether the files changed since the last load.

        A remote run is listed again at most every ``REMOTE_EVERY`` seconds (and new bytes fetched then).
        """
        if self._dataset is not None:
            if self.url and time.monotonic() - self._listed_at < REMOTE_EVERY:
                return False
            self._listed_at = time.monotonic()
            listed = lazy.listed_files(self._dataset.location)  # a listing only: this runs on every rerun
            return listed is None or lazy.signature_of(listed[1]) != self._stat_signature
        if self.url and time.monotonic() - self._listed_at >= REMOTE_EVERY:
            with self._lock:
                self._mirror(None)
        return cache.stat_signature(self.run_dir, self.fields_map) != self._stat_signature

    def _mirror(self, progress: cache.Progress | None) -> None:
        if self.url and self._dataset is None:
            self.remote = _completed(self.url, self.cache_root, progress) or self.remote
            self._listed_at = time.monotonic()

    # -- loading -----------------------------------------------------------

    def _load(self, *, progress: cache.Progress | None, verify: bool) -> None:
        if self._dataset is not None:
            self._load_in_place(verify)
            return
        t0 = time.perf_counter()
        try:
            result = cache.sync(self.run_dir, self.cache_root, progress=progress, verify=verify,
                                allowed=self.allowed, opened=self._mapped, fields=self.fields_map)
        except PermissionError as exc:
            raise NotFoundError(f"cannot read {exc.filename or self.run_dir}: {exc.strerror}") from None
        self._stat_signature = result.stat_signature
        signature = _signature(result.files, self.fields_map)
        if signature != self.signature or verify:
            self._build(result)
            self.signature = signature
        self.report.seconds = time.perf_counter() - t0
        self.report.parsed_bytes = result.parsed_bytes
        if result.parsed_bytes:
            log.info("parsed %d bytes of %s in %.2fs", result.parsed_bytes, self.run_dir, self.report.seconds)
        self.report.from_cache = result.parsed_bytes == 0
        self.report.notice = result.notice
        self.report.rebuilt_cache = result.rebuilt

    def _load_in_place(self, verify: bool) -> None:
        """A Parquet dataset: list it again; on a change, read its footers and number columns anew."""
        t0 = time.perf_counter()
        found = lazy.locate(self._dataset.location) if not verify else self._dataset
        if found is None:
            raise NotFoundError(f"{self.source} is no longer a readable Parquet dataset")
        if found.signature != self.signature or verify:
            view, rows, errors = lazy.open_view(found)
            fmt = formats.by_name("rl-board-parquet")
            report = LoadReport(run=self.source)
            report.files = [FileReport(f.name, f.size, n, n, 0, 0, 0, why, fmt.name)
                            for f, n, why in zip(found.files, rows, errors, strict=True)]  # fmt: skip
            report.formats[fmt.name] = f"{fmt.label}, read in place: text and tokens per step on demand"
            report.samples, report.steps = view.table.num_rows, len(view.steps)
            report.length_mismatches = int(pc.sum(view.table.column(S.LENGTH_MISMATCH)).as_py() or 0)
            self._view, self.report, self._dataset = view, report, found
            self.signature = self._stat_signature = found.signature
        self.report.seconds = time.perf_counter() - t0

    def _build(self, result: cache.SyncResult) -> None:
        view = RunView.from_parts([e.name for e in result.files], result.parts)
        report = build_report(self.source, result.files, self._formats(result.files),
                              settings.for_file(self._base, self.fields_map))
        report.steps = len(view.steps)
        report.length_mismatches = int(pc.sum(view.table.column(S.LENGTH_MISMATCH)).as_py() or 0)
        self._view, self.report = view, report  # one swap: readers never see a half-built run
        _write_run_summary(result.directory, report)

    @staticmethod
    def _formats(entries: list[cache.FileEntry]) -> dict[str, Format]:
        """Each file's format, as the load classified and read it."""
        return {e.name: formats.by_name(e.format) for e in entries if e.format}

    @property
    def _base(self) -> Path:
        return self.run_dir if self.run_dir.is_dir() else self.run_dir.parent

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
        derived = set(S.DERIVED_SAMPLE_FIELDS) | set(S.DERIVED_TOKEN_LISTS) | {S.LINE}
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
        """Numeric extra columns named like parts of the reward (e.g. TRL's reward functions)."""
        return [name for name in self.numeric_extras if fields.is_reward_component(name)]

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
        wanted = [S.PROMPT, S.REWARD, groups.GROUP, groups.ADVANTAGE]
        frame = self.samples(step=step, columns=[c for c in wanted if self.has(c)])
        return groups.group_table(frame, threshold=self.reward_threshold() if threshold is None else threshold)

    def reward_threshold(self) -> float | None:
        """The reward that counts as solved unless the user sets one: the run's highest (None without rewards)."""
        if not self.has(S.REWARD):
            return None
        best = groups.default_threshold(self._view.table.column(S.REWARD).to_pandas().astype("float64"))
        return None if np.isnan(best) else best

    def prompts(self, *, threshold: float | None = None) -> pd.DataFrame:
        """Every prompt over the run: steps seen, first step solved, regressions, status (see ``prompts.py``)."""
        if not (self.has(S.PROMPT) and self.has(S.REWARD)):
            return prompts.prompt_table(pd.DataFrame(columns=[S.STEP, S.PROMPT, S.REWARD]), 0.0)
        frame = self.samples(columns=[S.PROMPT, S.REWARD])
        return prompts.prompt_table(frame, self.reward_threshold() if threshold is None else threshold)

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
        if not (self.has(S.PROMPT) and self.has(S.REWARD)):
            return matchup.prompt_rewards(pd.DataFrame(columns=[S.STEP, "sample", S.PROMPT, S.REWARD]))
        return matchup.prompt_rewards(self.samples(step=step, columns=[S.PROMPT, S.REWARD]))

    def versus(self, other: RolloutStore, *, step: int | None = None, other_step: int | None = None) -> pd.DataFrame:
        """The prompts this run (at ``step``) and ``other`` (at ``other_step``) share: rewards and gain (other − this)."""
        return matchup.match(self.prompt_rewards(step=step), other.prompt_rewards(step=other_step))

    def mismatch(self) -> pd.DataFrame:
        """Per sample: mean and max train-vs-inference k3 mismatch (``mismatch.py``); empty without trainer log-probs."""
        if not self.has(mismatch.TRAIN_LOGPROBS):
            return pd.DataFrame(columns=[S.STEP, "sample", mismatch.MEAN, mismatch.MAX])
        with self._lock:  # computed once per state of the files
            if self._mismatch is None or self._mismatch[0] != self.signature:
                v = self._view
                parts = [mismatch.per_sample(piece) for piece in v.pieces([S.LOGPROBS, mismatch.TRAIN_LOGPROBS])]
                mean, top = (np.concatenate([p[i] for p in parts]) for i in (0, 1))
                frame = v.frame(v.order, [])
                frame[mismatch.MEAN] = mean[v.order]
                frame[mismatch.MAX] = top[v.order]
                self._mismatch = (self.signature, frame[[S.STEP, "sample", mismatch.MEAN, mismatch.MAX]])
            return self._mismatch[1].copy()

    def mismatch_summary(self) -> pd.DataFrame:
        """Per step: ``mismatch_{mean,std,min,max,count}`` and ``mismatch_max_{...}`` of the per-sample values."""
        return derive.step_summary(self.mismatch(), {"mismatch": mismatch.MEAN, "mismatch_max": mismatch.MAX})

    def length_column(self) -> str | None:
        """How the run's response lengths are counted: tokens when it has them, else characters."""
        return next((c for c in (S.N_TOKENS, S.RESPONSE_CHARS) if self.has(c)), None)

    def length_distribution(self) -> tuple[pd.DataFrame, np.ndarray, pd.Series]:
        """Per step: sample counts per length bin (step × bin), the bin edges, and the truncation share."""
        column = self.length_column()
        if column is None:
            return pd.DataFrame(), np.array([]), pd.Series(dtype="float64")
        frame = self.samples(columns=[column])
        counts, edges = lengths.length_table(frame, column)
        return counts, edges, lengths.truncation_share(frame, column)

    def group_stats(self) -> pd.DataFrame:
        """Per step: how many groups, their mean solved share and the share with zero reward variance."""
        return groups.step_group_stats(self.groups())

    def arrow_samples(self) -> pa.Table | pads.Dataset:
        """Every sample as one Arrow table over the memory-mapped cache (no copy), for SQL engines.

        Columns: ``step``, ``sample`` (index within its step), ``file``, ``line`` and every logged and
        derived column, token arrays included as list columns. Rows are in cache order, not step order.
        """
        if self._dataset is not None:  # a Parquet dataset read in place: the engine reads its files itself
            return lazy.as_arrow_dataset(self._dataset, self._view.heavy.paths)
        v = self._view
        table = v.table.drop_columns([c for c in (S.STEP, S.LINE, INDEX_COL, FILE_COL, LINE_COL)
                                      if c in v.table.column_names])  # fmt: skip
        files = pa.DictionaryArray.from_arrays(pa.array(v.file_idx, pa.int32()), pa.array(v.files or [], pa.string()))
        head = [(STEP_COL, pa.array(v.step_of, pa.int64())), (INDEX_COL, pa.array(v.within, pa.int64())),
                (FILE_COL, files), (LINE_COL, pa.array(v.line_of, pa.int64()))]
        for k, (name, column) in enumerate(head):
            table = table.add_column(k, name, column)
        return table

    def samples_per_step(self) -> dict[int, int]:
        v = self._view
        return {int(s): int(c) for s, c in zip(v.steps, v.counts, strict=True)}

    def step_summary(self) -> pd.DataFrame:
        """Per-step statistics; computed once per change of the run."""
        return self._view.summary().copy()

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
        """One sample by its step and index within the step (token ids decoded with ``tokenizer`` if given)."""
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
            step=step, index=index, file=v.files[v.file_idx[row]], line=int(record[S.LINE]),
            fields={k: val for k, val in record.items() if k not in (S.LINE, *S.DERIVED_TOKEN_LISTS)},
            tokens=tokens,
            n_tokens=None if n_tok is None else len(n_tok),
            n_logprobs=None if n_lp is None else len(n_lp),
            tokens_from=tokens_from,
        )

    # -- runs under a root -------------------------------------------------

    @staticmethod
    def list_runs(root: str | Path, *, cache_dir: str | Path | None = None, fields: FieldMap | None = None,
                  allowed: list[Path] | None = None) -> pd.DataFrame:
        """Rollout runs under ``root`` (see the class docstring); with ``allowed``, files linked from outside those
        folders are not opened (the server passes its served roots)."""
        root_path = Path(root).expanduser()
        if not root_path.is_dir():
            raise NotFoundError(f"no folder at {root_path}")
        cache_root = Path(cache_dir).expanduser() if cache_dir else cache.default_cache_dir()
        rows = []
        for run in catalogue(root_path, skip=(cache_root,), fields=fields, allowed=allowed).rollout_folders():
            known = _read_run_summary(cache.run_cache_dir(cache_root, run.path))
            rows.append({
                "run": run.relative, "path": str(run.path), "format": run.format, "files": run.files,
                "bytes": run.bytes,
                "modified": run.modified, "samples": known.get("samples"), "steps": known.get("steps"),
            })
        columns = ["run", "path", "format", "files", "bytes", "modified", "samples", "steps"]
        return pd.DataFrame(rows, columns=columns)


def _add_mismatch(tokens: pd.DataFrame, record: dict[str, Any]) -> None:
    """Trainer log-probs beside the engine's, and their per-token mismatch, when the log has both."""
    train = _floats(record.get(mismatch.TRAIN_LOGPROBS))
    if train is None or len(train) < len(tokens) or not len(tokens):
        return
    tokens["train_logp"] = train[: len(tokens)]
    tokens["mismatch"] = mismatch.k3(tokens["logp"].to_numpy(dtype=np.float64), tokens["train_logp"].to_numpy())


def _add_token_signals(tokens: pd.DataFrame, record: dict[str, Any]) -> None:
    """Per-token advantage and entropy, when the log has them for every token (NeMo-RL, prime-rl)."""
    for name in ("advantage", "entropy", "loss_mask"):
        values = _floats(record.get(f"token_{name}"))
        if values is not None and len(values) >= len(tokens) and len(tokens):
            tokens[name] = values[: len(tokens)]


def _token_strings(record: dict[str, Any], tokenizer: TokenText | None) -> tuple[list[str] | None, str]:
    """The response's token strings, from the log or from its token ids."""
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


def _completed(url: str, cache_root: Path, progress: cache.Progress | None) -> MirrorResult | None:
    """The copy of a bucket's run brought up to date; when the bucket cannot be reached, the copy as it is."""
    try:
        return remote.mirror(url, cache_root, progress=progress)
    except (RLBoardError, OSError) as exc:
        log.warning("could not reach %s (%s); showing the copy in the cache", url, exc)
        return None


def _in_place(location: str | Path, fields: FieldMap | None) -> lazy.Located | None:
    """The Parquet dataset at ``location`` when it can be read in place (no field map asked for)."""
    if fields:
        return None
    if isinstance(location, Path) and not (location.is_dir() and any(
            e.name.startswith("step=") and e.is_dir() for e in os.scandir(location))):  # fmt: skip
        return None
    return lazy.locate(location)


def _signature(entries: list[cache.FileEntry], fields: FieldMap) -> str:
    raw = json.dumps([sorted(fields.items()), *((e.name, e.size, e.mtime_ns, e.consumed, e.error, e.reading) for e in entries)])
    return hashlib.sha1(raw.encode()).hexdigest()[:16]


def _write_run_summary(directory: Path, report: LoadReport) -> None:
    # A read-only cache still serves; the run list just shows no counts.
    with contextlib.suppress(OSError):
        (directory / "summary.json").write_text(json.dumps({"samples": report.samples, "steps": report.steps}))


def _read_run_summary(directory: Path) -> dict:
    try:
        return json.loads((directory / "summary.json").read_text())
    except (OSError, ValueError):
        return {}
