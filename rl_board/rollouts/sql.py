"""SQL over one run: DuckDB scanning the run's Arrow table in place, read-only, bounded in time and rows.

Two views per query:

- ``samples``: one row per sample (``RolloutStore.arrow_samples()``): ``step``,
  ``sample``, ``file``, ``line`` and every logged and derived column, token
  arrays as lists. DuckDB scans the memory-mapped Arrow table where it lies;
  nothing is copied. Rows are in cache order: say ``ORDER BY`` when order matters.
- ``steps``: one row per step: ``RolloutStore.step_summary()`` (``samples``,
  ``{reward, kl, length, ...}_{mean, std, min, max, p10, p90, count}``), the same
  statistics of each reward component, and for GRPO runs ``groups``,
  ``solved_mean`` and ``zero_variance_share``.

KL columns, per estimator (``rollouts/kl.py``): ``kl_mean``/``kl_sum`` (k3, the
default), ``kl_k2_mean``/``kl_k2_sum`` (k2), ``log_ratio_mean``/``log_ratio_sum``
(k1) in ``samples``, their per-step statistics (``kl_*``, ``kl_k2_*``,
``log_ratio_*``) in ``steps``, and the per-token log-ratio ``token_log_ratio``.
Three macros compute the estimators on numbers: ``kl_k1(lr)``, ``kl_k2(lr)``,
``kl_k3(lr)`` of a log-ratio, or ``kl_k3(logp, ref_logp)`` of two log-probs;
with list functions they work on token arrays
(``list_transform(token_log_ratio, lambda r: kl_k3(r))``).

Every query gets a connection of its own that cannot touch a file, the network
or an extension: external access is off, Python-variable scans are off,
extensions are neither installed nor loaded, spilling to disk is off and the
configuration is locked before the user's text runs. One statement is run, and
only one that reads (``SELECT``, ``WITH``, ``FROM ...``, ``DESCRIBE``,
``SUMMARIZE``, ``EXPLAIN``). A timer interrupts it after ``timeout`` seconds;
at most ``max_rows`` rows are fetched. Every refusal and every DuckDB error
(syntax, unknown column, ...) is a ``QueryError`` carrying DuckDB's message.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

from rl_board import columns, config
from rl_board.errors import InvalidArgumentError
from rl_board.formats import fields as F
from rl_board.formats import schema as S
from rl_board.lazy import pd
from rl_board.rollouts import groups, kl
from rl_board.rollouts.labels import LabelStore

if TYPE_CHECKING:
    from rl_board.rollouts.store import RolloutStore

SAMPLES, STEPS, TURNS, TOOL_CALLS = "samples", "steps", "turns", "tool_calls"
PATTERNS, LABELS = "patterns", "labels"
PATTERN_COLUMNS = (
    "template",
    "samples",
    "first_step",
    "reward_mean",
    "example",
    "share",
    "last_step",
    "example_step",
    "example_sample",
)
TEMPLATE = PATTERN_COLUMNS[0]
_PATTERN_TYPES = {  # the patterns view's columns when no family is worked out: integers but for these
    **dict.fromkeys(PATTERN_COLUMNS, pa.int64()),
    **dict.fromkeys((TEMPLATE, "example"), pa.string()),
    **dict.fromkeys(("reward_mean", "share"), pa.float64()),
}
_TEMPLATES = re.compile(rf"\b({TEMPLATE}|{PATTERNS})\b", re.IGNORECASE)
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 3600.0
MAX_ROWS = 10_000
MEMORY_LIMIT = "2GB"
THREADS = max(1, min(4, os.cpu_count() or 1))
_ROWS_PER_VECTOR = 2048
_READING = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})
_CONFIG: dict[str, str | bool | int | float | list[str]] = {  # duckdb.connect's config type
    "enable_external_access": False,  # no file, URL, ATTACH of a file, COPY, EXPORT, INSTALL
    "python_enable_replacements": False,  # FROM <python variable> must not reach the caller's objects
    "python_scan_all_frames": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "temp_directory": "",  # no spilling: the memory limit is the limit
    "memory_limit": MEMORY_LIMIT,
    "threads": THREADS,
}


@functools.cache
def _converter() -> duckdb.DuckDBPyConnection:
    """The database that turns query results into frames (the same dtypes as DuckDB's own frames)."""
    return duckdb.connect(":memory:", config=_CONFIG)


_LINE = re.compile(r"^LINE (\d+):( ?)(.*)$")


class QueryError(InvalidArgumentError):
    """A refused or failed query; ``str()`` is one line, ``detail`` DuckDB's whole message (with the
    caret)."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail or message


@dataclass(frozen=True)
class QueryResult:
    """What a query returned: the rows (at most ``max_rows``) as Arrow, whether there were more, and how
    long it took. ``frame`` is the same rows as pandas, typed as DuckDB types its frames, made when first
    asked for (a command printing the rows never imports pandas)."""

    table: pa.Table
    capped: bool
    max_rows: int
    seconds: float

    @functools.cached_property
    def frame(self) -> pd.DataFrame:
        con = _converter().cursor()  # a cursor per thread of one database: not a new one per query (~20 ms)
        try:
            return con.from_arrow(self.table).df()
        finally:
            con.close()

    @property
    def targets(self) -> list[tuple[int, int] | None] | None:
        """The sample each row stands for (``sample_targets``), so a table of results can open it."""
        return sample_targets(self.frame)


def sample_targets(frame: pd.DataFrame) -> list[tuple[int, int] | None] | None:
    """(step, sample) of each row when the result has both as whole numbers; None when it cannot open
    samples."""
    if "step" not in frame.columns or "sample" not in frame.columns:
        return None
    step, sample = frame["step"], frame["sample"]
    if isinstance(step, pd.DataFrame) or isinstance(sample, pd.DataFrame):  # a name used twice
        return None
    if not (pd.api.types.is_numeric_dtype(step.dtype) and pd.api.types.is_numeric_dtype(sample.dtype)):
        return None
    out: list[tuple[int, int] | None] = []
    isna = pd.isna  # once, not per row
    for s, i in zip(step.tolist(), sample.tolist(), strict=True):
        whole = all(v is not None and not isna(v) and float(v).is_integer() for v in (s, i))
        out.append((int(s), int(i)) if whole else None)
    return out


@dataclass(frozen=True)
class Example:
    title: str
    sql: str


EXAMPLES = (
    Example(
        "Reward by step",
        "SELECT step, count(*) AS samples, avg(reward) AS reward_mean,\n"
        "       stddev_pop(reward) AS reward_std\nFROM samples\nGROUP BY step\nORDER BY step",
    ),
    Example(
        "Longest answers",
        "SELECT step, sample, response_chars, reward, left(response, 200) AS response\n"
        "FROM samples\nORDER BY response_chars DESC\nLIMIT 20",
    ),
    Example(
        "Prompt regressions",
        "WITH per_prompt AS (\n"
        "  SELECT prompt, step, avg(reward) AS reward_mean FROM samples GROUP BY prompt, step\n)\n"
        "SELECT a.prompt, a.step AS step_before, b.step AS step_after,\n"
        "       a.reward_mean AS before, b.reward_mean AS after, b.reward_mean - a.reward_mean AS change\n"
        "FROM per_prompt a JOIN per_prompt b ON a.prompt = b.prompt AND b.step > a.step\n"
        "WHERE b.reward_mean < a.reward_mean\nORDER BY change\nLIMIT 50",
    ),
    Example(
        "Zero-variance groups",
        "SELECT step, prompt, count(*) AS answers, min(reward) AS reward\n"
        "FROM samples\nGROUP BY step, prompt\nHAVING count(*) > 1 AND min(reward) = max(reward)\n"
        "ORDER BY step",
    ),
    Example(
        "Steps: reward and KL",
        "SELECT step, samples, reward_mean, kl_mean AS kl_k3_mean, kl_k2_mean,\n"
        "       log_ratio_mean AS kl_k1_mean\nFROM steps\nORDER BY step",
    ),
    Example(
        "Tokens with the most KL",
        "SELECT step, sample, t.i AS position, response_tokens[t.i] AS token,\n"
        "       kl_k3(token_log_ratio[t.i]) AS kl\n"
        "FROM samples, LATERAL (SELECT unnest(range(1, len(token_log_ratio) + 1)) AS i) AS t\n"
        "WHERE step = (SELECT max(step) FROM samples)\nORDER BY kl DESC\nLIMIT 20",
    ),
)
# What the SQL page lists beside the columns: each macro's call forms and what it computes.
MACROS = {f"kl_{e.name}(lr), kl_{e.name}(logp, ref_logp)": f"{e.label}. {e.help}" for e in F.KL_ESTIMATORS}


def run_query(
    store: RolloutStore, sql: str, *, timeout: float = DEFAULT_TIMEOUT, max_rows: int = MAX_ROWS
) -> QueryResult:
    """Run one reading statement over ``samples`` and ``steps`` of ``store`` (see the module docstring)."""
    if not 0 < timeout <= MAX_TIMEOUT:
        raise InvalidArgumentError(
            f"the time limit must be above 0 and at most {MAX_TIMEOUT:g} seconds, not {timeout}"
        )
    if max_rows < 1:
        raise InvalidArgumentError(f"the row cap must be at least 1, not {max_rows}")
    t0 = time.perf_counter()
    con = _connect(store, sql)
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        con.interrupt()

    timer = threading.Timer(timeout, stop)
    timer.daemon = True
    try:
        statement = _one_statement(con, sql)
        timer.start()
        try:
            con.execute(statement)  # (a relation's errors lose the line and column DuckDB points at)
            table, capped = _fetch(con, max_rows)
        except duckdb.Error as exc:
            if fired.is_set():
                raise QueryError(
                    f"the query ran longer than the {timeout:g} s limit and was stopped; "
                    "narrow it (WHERE, LIMIT) or raise the limit"
                ) from None
            raise _query_error(exc) from None
    finally:
        timer.cancel()
        con.close()
    return QueryResult(table=table, capped=capped, max_rows=max_rows, seconds=time.perf_counter() - t0)


def schema(store: RolloutStore) -> dict[str, pd.DataFrame]:
    """The columns of ``samples`` and ``steps`` with their SQL types and meaning (``column``, ``type``,
    ``help``)."""
    con = _connect(store)
    try:
        out = {}
        for view in (SAMPLES, STEPS, TURNS, TOOL_CALLS, PATTERNS, LABELS):
            con.execute(f"DESCRIBE {view}")
            described = con.fetchdf()
            frame = described[["column_name", "column_type"]].rename(
                columns={"column_name": "column", "column_type": "type"}
            )
            if view == SAMPLES and TEMPLATE not in set(frame["column"]) and store.has(S.RESPONSE):
                late = pd.DataFrame({"column": [TEMPLATE], "type": ["VARCHAR"]})  # made when a query names it
                frame = pd.concat([frame, late], ignore_index=True)
            frame["help"] = [column_help(view, str(name)) for name in frame["column"]]
            out[view] = frame
        return out
    finally:
        con.close()


VIEW_HELP = {
    TURNS: {
        "step": "Training step.",
        "sample": "The sample's index within its step.",
        "turn": "The message's place in the trajectory, from 0.",
        "role": "system, user, assistant, tool or environment.",
        "content": "The message's text.",
        "tool_name": "For a tool result: the tool that answered.",
        "tool_call_id": "For a tool result: the call it answers, when the log names it.",
        "n_tool_calls": "For an assistant turn: how many tools it called.",
        "error": "For a tool result: whether it says the call failed.",
        "reward": "A per-turn reward, where logged.",
        "tokens": "The turn's [start, end) in the response's token arrays, where known.",
        "n_tokens": "The turn's length in tokens, where known.",
        "trained": "Whether the loss counts the turn's tokens, where known.",
    },
    TOOL_CALLS: {
        "step": "Training step.",
        "sample": "The sample's index within its step.",
        "turn": "The assistant turn that made the call (empty for a call the log counted without turns: "
        "open-instruct's tool_call_log).",
        "call": "The call's place within its turn (or the sample's logged calls), from 0.",
        "name": "The tool called.",
        "arguments": "Its arguments, as JSON text.",
        "id": "The call's id, if logged.",
        "answered": "Whether a result answers it.",
        "error": "Whether the result says the call failed.",
        "result": "The result's text.",
    },
    PATTERNS: {
        "template": "A family of near-identical answers (numbers masked), T1 the largest.",
        "samples": "Answers in the family.",
        "share": "Its share of the run's answers.",
        "first_step": "The step it was first seen at.",
        "last_step": "The last step it was seen at.",
        "reward_mean": "The mean reward of its answers.",
        "example": "An answer of the family.",
        "example_step": "The example's step.",
        "example_sample": "The example's index in its step.",
    },
    LABELS: {
        "step": "Training step.",
        "sample": "The labelled sample's index within its step (null: gone).",
        "file": "The file the sample was read from.",
        "line": "Its line in that file.",
        "tag": "The tag.",
        "note": "The note, if any.",
        "created": "When it was tagged (Unix seconds).",
        "updated": "When it was last changed (Unix seconds).",
    },
}
_STATS = {
    "mean": "mean",
    "std": "standard deviation",
    "min": "lowest",
    "max": "highest",
    "p10": "10th percentile",
    "p90": "90th percentile",
    "count": "number of values",
}


def column_help(view: str, name: str) -> str:
    """What a column of ``samples`` or ``steps`` holds, from the field catalogue ("" for the log's own
    columns)."""
    if view == SAMPLES:
        field = F.sample(name)
        return field.help if field else ""
    if view in VIEW_HELP:
        return VIEW_HELP[view].get(name, "")
    prefix, _, stat = name.rpartition("_")
    field = F.step(prefix) if stat in _STATS else None
    if field is None:
        return {"step": "Training step.", "samples": "How many samples the step has."}.get(name, "")
    source = F.sample(field.of) if field.of else None
    of = f" of the per-sample {field.of}" if field.of else ""
    return f"Per step, the {_STATS[stat]}{of}. {source.help if source else field.help}"


_STEPS_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STEPS_LOCK = threading.Lock()


def steps_table(store: RolloutStore) -> pd.DataFrame:
    """The ``steps`` view: step summary, reward components, GRPO group statistics (once per state of the
    run)."""
    with _STEPS_LOCK:
        known = _STEPS_CACHE.get(store)
        if known is not None and known[0] == store.signature:
            return known[1]
    frame = store.step_summary()
    components = store.reward_components
    if components:
        frame = _join(frame, store.column_summary(components))
    if store.has(S.REWARD) and (store.has(S.PROMPT) or store.has(groups.GROUP)):
        frame = _join(frame, store.group_stats())
    with _STEPS_LOCK:
        _STEPS_CACHE[store] = (store.signature, frame)
    return frame


def _join(frame: pd.DataFrame, more: pd.DataFrame) -> pd.DataFrame:
    """``more``'s new columns added to ``frame`` by step."""
    new = [c for c in more.columns if c not in frame.columns]
    return frame.merge(more[[S.STEP, *new]], on=S.STEP, how="left") if new else frame


_early_lock = threading.Lock()
_early: list[tuple[threading.Thread, list[duckdb.DuckDBPyConnection]]] = []  # at most one, taken once


def start_database() -> None:
    """Begin making the next query's database on another thread.

    DuckDB builds each new database's catalogue (~20 ms here) without holding the GIL, so a command that
    opens a run and then queries it (``rl-board query``) waits for the slower of the two, not for both.
    """
    made: list[duckdb.DuckDBPyConnection] = []

    def make() -> None:
        with contextlib.suppress(duckdb.Error):  # the caller's own connect says what went wrong
            made.append(duckdb.connect(":memory:", config=_CONFIG))

    with _early_lock:
        if _early:
            return
        thread = threading.Thread(target=make, name="rl-board-query-database")
        _early.append((thread, made))
    thread.start()


def _database() -> duckdb.DuckDBPyConnection:
    """A new locked-down database: the one ``start_database`` began, else one made now."""
    with _early_lock:
        early = _early.pop() if _early else None
    if early is not None:
        thread, made = early
        thread.join()
        if made:
            return made[0]
    return duckdb.connect(":memory:", config=_CONFIG)


def _connect(store: RolloutStore, sql: str | None = None) -> duckdb.DuckDBPyConnection:
    """A locked-down connection with the run's views (``sql``: the query it is for, to skip costly views)."""
    con = _database()
    labels = LabelStore(config.settings().labels)
    if sql is not None and _TEMPLATES.search(sql):  # each answer's family: worked out only when asked
        store.find_templates()
    samples = store.arrow_samples()
    con.register("_samples", samples)  # scanned in place (Arrow over the mapped cache)
    if labels.of_run(store.source):
        con.register("_tags", store.tags_by_sample(labels))
    else:  # no labels: an empty table of the same columns, without making a frame
        con.register(
            "_tags", columns.empty_table({"step": pa.int64(), "sample": pa.int64(), "tags": pa.string()})
        )
    family = (  # named as the patterns view names it (T1 the largest), NULL for an answer of no family
        f" REPLACE (CASE WHEN s.{TEMPLATE} > 0 THEN 'T' || CAST(s.{TEMPLATE} AS VARCHAR) END AS {TEMPLATE})"
        if TEMPLATE in samples.schema.names
        else ""
    )
    con.execute(
        f"CREATE VIEW {SAMPLES} AS SELECT s.*{family}, t.tags FROM _samples s "
        "LEFT JOIN _tags t ON s.step = t.step AND s.sample = t.sample"
    )
    # The other views are worked out for the query that names them (all of them for the schema, and for a
    # query that looks into the catalogue): a query of ``samples`` alone waits for none.
    if _names(sql, STEPS):
        con.register(STEPS, steps_table(store))
    if _names(sql, TURNS):
        con.register(TURNS, store.turns())  # one row per message of the samples that keep their turns
    if _names(sql, TOOL_CALLS):
        con.register(TOOL_CALLS, store.tool_calls())
    # Families are worked out over every answer of the run: only when the query names them (the catalogue
    # sees the view's columns, empty).
    wanted = sql is not None and re.search(rf"\b{PATTERNS}\b", sql, re.IGNORECASE) is not None
    if wanted:
        con.register(PATTERNS, store.pattern_families()[list(PATTERN_COLUMNS)])
    else:
        con.register(PATTERNS, columns.empty_table(_PATTERN_TYPES))
    if _names(sql, LABELS):
        con.register(LABELS, store.labels(labels))
    if _names(sql, "kl_k[123]"):  # the macros, created before the configuration is locked (~4 ms)
        for statement in kl.sql_macros():
            con.execute(statement)
    con.execute("SET lock_configuration = true")
    return con


def _names(sql: str | None, view: str) -> bool:
    """Whether the query may read ``view`` (a view's or a macro's name, or a regex of such names): it names
    it, or looks into the catalogue (SHOW TABLES, information_schema...), or there is no query (the schema
    of every view is asked)."""
    return (
        sql is None
        or re.search(rf"\b{view}\b", sql, re.IGNORECASE) is not None
        or bool(_CATALOGUE.search(sql))
    )


_CATALOGUE = re.compile(r"\b(information_schema|duckdb_\w+|pg_catalog|sqlite_master|show|pragma_\w+)\b", re.I)


def _one_statement(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise _query_error(exc) from None
    if not statements:
        raise QueryError(
            "the query is empty: write one SELECT statement, e.g. SELECT * FROM samples LIMIT 10"
        )
    if len(statements) > 1:
        raise QueryError(
            f"one statement at a time, please: this text holds {len(statements)} (separated by ';')"
        )
    statement = statements[0]
    if statement.type not in _READING:
        kind = statement.type.name if hasattr(statement.type, "name") else str(statement.type)
        raise QueryError(
            f"only reading statements run here (SELECT, WITH, DESCRIBE, SUMMARIZE, EXPLAIN), not {kind}"
        )
    return sql


def _fetch(con: duckdb.DuckDBPyConnection, max_rows: int) -> tuple[pa.Table, bool]:
    """At most ``max_rows`` rows of the running result as Arrow (one more is read to know whether there
    were more)."""
    per_batch = max(1, min(64, -(-(max_rows + 1) // _ROWS_PER_VECTOR))) * _ROWS_PER_VECTOR
    # DuckDB warns that Arrow batches of an executed statement's result copy its rows: they are at most
    # max_rows and a batch, and executing (not a relation) is what keeps an error's line and column. (The
    # filter swap is not thread-safe; at worst this one warning stays silenced elsewhere too.)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Arrow output on a DB-API result", category=UserWarning)
        reader = con.to_arrow_reader(per_batch)
    if reader is None:  # a statement without a result
        return pa.table({}), False
    batches: list[pa.RecordBatch] = []
    count = 0
    for batch in reader:
        batches.append(batch)
        count += batch.num_rows
        if count > max_rows:
            break
    reader.close()
    table = pa.Table.from_batches(batches, schema=reader.schema)
    return table.slice(0, max_rows), count > max_rows


def _query_error(exc: duckdb.Error) -> QueryError:
    """DuckDB's message as one line (the caret under the query becomes "at line L, column C")."""
    detail = str(exc).strip()
    lines = detail.splitlines()
    kept: list[str] = []
    where = ""
    for k, line in enumerate(lines):
        match = _LINE.match(line)
        if match:
            caret_line = lines[k + 1] if k + 1 < len(lines) else ""
            prefix = len(f"LINE {match.group(1)}:{match.group(2)}")
            caret = caret_line.find("^")
            where = f"at line {match.group(1)}" + (
                f", column {caret - prefix + 1}" if caret >= prefix else ""
            )
            break
        if line.strip():
            kept.append(line.strip())
    message = " ".join(kept) or type(exc).__name__
    return QueryError(f"{message} ({where})" if where else message, detail)
