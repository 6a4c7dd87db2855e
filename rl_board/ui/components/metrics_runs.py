"""Metric runs on the Metrics page: the logs-root check, run picker, damaged files, evaluator episodes
and what came with a DI-engine experiment (config, network, checkpoints, logger files)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rl_board import api
from rl_board.api import IndexBuild, MetricsBundle, MetricsIndex, Problem, RunInfo, RunSource
from rl_board.ui import cached, metrics_cached, state
from rl_board.ui.components import chart
from rl_board.ui.components.text_block import text_block
from rl_board.ui.context import Context
from rl_board.ui.metric_charts import chart_key, color, episodes_figure
from rl_board.ui.svg_metric_figures import WIDE, WIDTH, episodes_chart
from rl_board.ui.text import display_name, escape_markdown, visible_bidi, visible_bidi_column

PROGRESS_EVERY_S = 1.0
INDEX_WAIT_S = 0.3  # what the page waits for the index before it shows a progress bar instead
MAX_PROBLEM_WARNINGS = 5
RUNS = "metric_runs"


def logs_root_context(title: str) -> Context | None:
    """Draw the page title; the context when a logs root is chosen, else say what to do and None."""
    ctx: Context | None = state.context()
    st.title(title)
    if ctx is None or ctx.root is None:
        st.info("Choose a logs root inside the served folders in the sidebar.")
        return None
    return ctx


def code_span(text: str) -> str:
    """Text from files as inline code (Markdown does not interpret it; backticks cannot close it)."""
    return "`" + display_name(text).replace("`", "'").replace("\n", " ") + "`"


def run_label(info: RunSource | RunInfo) -> str:
    """A metric run as plain text (select options); Markdown places pass it through ``escape_markdown``."""
    name = "(the logs root itself)" if info.run == "." else display_name(info.run)
    return f"{name} · {api.metric_kind_label(info.kind)}"


def pick_runs(runs: Sequence[RunSource], index: MetricsIndex | None = None) -> list[str]:
    """A multiselect of the metric runs (curves of several runs overlay); the first run by default.

    The list comes from a walk of the root, so it shows at once; once the
    index is built each run also says how many tags it holds.
    """
    known = {info.run: info for info in index.runs} if index is not None else {}
    labels = {}
    for source in runs:
        info = known.get(source.run)
        labels[source.run] = run_label(info or source) + (
            f" · {len(info.tags)} tags" if info is not None else ""
        )
    previous = state.get(RUNS)
    kept = [r for r in previous or [] if r in labels]
    if not kept:  # first visit, none chosen, or the chosen runs are gone: the first run
        kept = list(labels)[:1]
    state.put(RUNS, kept)
    chosen = st.multiselect(
        f"Metric runs ({len(labels):,})",
        list(labels),
        format_func=labels.__getitem__,
        placeholder="Choose runs…",
        help="Several runs draw on the same charts, one colour per run. Type to search a long list.",
        **state.bind(RUNS),
    )
    return [r for r in chosen or [] if r in labels]


def render_index_progress(root: Path) -> MetricsIndex | None:
    """The index of every run under the root as far as it is known, with a progress bar while it fills.

    A small root's index is waited for (a fraction of a second); a big one's
    bar redraws itself every second (a fragment) and the page reruns once when
    the index is complete, so the run list gains its tag counts.
    """
    build = metrics_cached.index_build(root)
    if build.running and build.index is None and build.total < api.MIN_PARALLEL:
        build.wait(INDEX_WAIT_S)  # a small root is indexed before the page draws
    with st.container():  # a slot of its own, bar or not: the widgets below keep their place (see SLOT)
        if _indexing(build):
            st.fragment(_progress_bar, run_every=PROGRESS_EVERY_S)(root)
        elif build.error:
            st.warning(
                f"The run index could not be built: {escape_markdown(build.error)}", icon=":material/warning:"
            )
    return build.index


def _indexing(build: IndexBuild) -> bool:
    """Runs are being read (not a quick re-check of the files of a known index)."""
    return build.running and (build.index is None or build.done < build.total)


def _progress_bar(root: Path) -> None:
    build = metrics_cached.index_build(root)
    if not _indexing(build):
        st.rerun()  # the index is complete: draw the whole page with it
    share = build.done / build.total if build.total else 0.0
    st.progress(
        share,
        text=f"Indexing metric runs in the background: {build.done:,} of {build.total:,} read. "
        "Charts of the chosen runs do not wait for it.",
    )


def rollout_runs_beside(bundle: MetricsBundle, root: Path) -> dict[str, Path]:
    """Metric runs whose folder is also a rollout run (metrics.jsonl beside the samples): metric run -> run
    path."""
    runs = cached.runs_under(str(root), cached.served())
    folders = {Path(p).resolve(): Path(p) for p in runs["path"]}
    out = {}
    for info in bundle.runs:
        here = Path(info.path).resolve()
        folder = here if here.is_dir() else here.parent
        if folder in folders:
            out[info.run] = folders[folder]
    return out


def run_colors(runs: Sequence[str]) -> dict[str, str]:
    return {run: color(i) for i, run in enumerate(runs)}


def _shown_path(path: str, root: Path) -> str:
    """A problem's file relative to the root; a link is named where it lies, not where it points."""
    with contextlib.suppress(ValueError):
        return Path(path).relative_to(root).as_posix()
    with contextlib.suppress(ValueError, OSError, RuntimeError):
        return Path(path).resolve().relative_to(root).as_posix()
    return path


def render_problems(problems: Sequence[Problem], root: Path) -> None:
    """Files that could not be (fully) read: a warning each for the first few, then a table."""
    with st.container():  # a slot of its own, problems or not (see SLOT)
        _problem_list(problems, root)


# SLOT: a part that comes and goes between reruns (a progress bar, the problems a finished index adds)
# sits in a container that is always drawn. Otherwise the widgets below it move up a place, the browser
# draws them anew and loses what the user was typing in them.


def _problem_list(problems: Sequence[Problem], root: Path) -> None:
    if not problems:
        return
    for problem in problems[:MAX_PROBLEM_WARNINGS]:
        where = _shown_path(problem.file, root) + (f":{problem.line}" if problem.line else "")
        st.warning(f"{code_span(where)} — {escape_markdown(problem.reason)}", icon=":material/warning:")
    if len(problems) > MAX_PROBLEM_WARNINGS:
        with st.expander(f"All {len(problems)} problems"):
            rows = [
                {
                    "file": display_name(_shown_path(p.file, root)),
                    "line": p.line,
                    "reason": display_name(p.reason),
                }
                for p in problems
            ]
            st.dataframe(pd.DataFrame(rows), hide_index=True)


def render_episodes(bundle: MetricsBundle, runs: Sequence[str], colors: dict[str, str]) -> None:
    """Evaluator reward with every episode's result (DI-engine / LightZero evaluator logs)."""
    episodes = bundle.episodes
    shown = [r for r in runs if (episodes["run"] == r).any()]
    if not shown:
        return
    st.subheader("Evaluator reward")
    st.caption("Each dot is one evaluation episode; the line is their mean and the band spans min to max.")
    columns = st.columns(min(len(shown), 2))
    for k, run in enumerate(shown):
        words: dict[str, Any] = {"run": run if len(runs) > 1 else "", "line_color": colors.get(run)}
        frame = episodes[episodes["run"] == run]
        with columns[k % len(columns)]:
            chart.show(
                chart_key("episodes", run),
                figure=partial(episodes_figure, frame, **words),
                svg=partial(episodes_chart, frame, **words, width=WIDE if len(columns) == 1 else WIDTH),
            )


def render_run_details(bundle: MetricsBundle, runs: Sequence[str]) -> None:
    """Per chosen run: an experiment folder's loggers, checkpoints, config and network (DI-engine; as
    text, never executed), else the run's config as text and its hyperparameters (a tracker's config,
    TensorBoard's hparams)."""
    for info in (bundle.run(r) for r in runs):
        if info is None:
            continue
        if info.files or info.checkpoints or info.network_text:
            _di_engine_details(info)
        elif info.config_text or info.hparams:
            _config_details(info)
        if info.step_source:
            st.caption(f"{escape_markdown(run_label(info))}: points at {escape_markdown(info.step_source)}.")


def _config_details(info: RunInfo) -> None:
    label = f"{escape_markdown(run_label(info))} — config and hyperparameters"
    with st.expander(label, icon=":material/tune:"):
        if info.config_text:  # a plain text box: the code viewer's script would slow the page's first draw
            st.caption("The run's config as its tracker kept it, shown as text.")
            text_block(info.config_text, height=400)
        if info.hparams:  # text too: the data grid's script alone cost the page's first draw ~0.4 s
            st.caption("Hyperparameters, one per line.")
            width = max(len(str(k)) for k in info.hparams)
            lines = (f"{str(k).ljust(width)}  {v}" for k, v in info.hparams.items())
            text_block("\n".join(lines), height=min(400, 40 + 22 * len(info.hparams)))


def _di_engine_details(info: RunInfo) -> None:
    label = f"{escape_markdown(run_label(info))} — loggers, checkpoints, config and network"
    with st.expander(label, icon=":material/folder_open:"):
        files, ckpts, config, network = st.tabs(["Logger files", "Checkpoints", "Config", "Network"])
        with files:
            st.dataframe(_files_table(info), hide_index=True)
        with ckpts:
            if info.checkpoints:
                st.dataframe(_checkpoints_table(info), hide_index=True)
                st.caption(
                    "'logged' = when the learner log says it saved the file; 'on disk' = the file is there."
                )
            else:
                st.caption("No checkpoints found or mentioned in the logs.")
        with config:
            if info.config_text:
                st.caption("The experiment's config file, shown as text (never executed).")
                st.code(visible_bidi(info.config_text), language="python")
            else:
                st.caption("No total_config.py / formatted_total_config.py in this folder.")
        with network:
            if info.network_text:
                st.code(visible_bidi(info.network_text), language="text")
            else:
                st.caption("The learner log holds no network printout.")


def _files_table(info: RunInfo) -> pd.DataFrame:
    rows = [
        {
            "logger": f.get("role"),
            "file": f.get("path"),
            "status": f.get("status"),
            "records": f.get("records"),
            "KB": None if f.get("size") is None else round(f["size"] / 1024, 1),
            "modified": _time(f.get("mtime")),
        }
        for f in info.files
    ]
    frame = pd.DataFrame(rows, columns=["logger", "file", "status", "records", "KB", "modified"])
    frame["file"] = visible_bidi_column(frame["file"])
    return frame


def _checkpoints_table(info: RunInfo) -> pd.DataFrame:
    rows = [
        {
            "checkpoint": c.get("name"),
            "kind": c.get("kind"),
            "iteration": c.get("iteration"),
            "on disk": bool(c.get("exists")),
            "KB": None if c.get("size") is None else round(c["size"] / 1024, 1),
            "logged": ", ".join(c.get("logged_at") or []),
        }
        for c in info.checkpoints
    ]
    frame = pd.DataFrame(rows, columns=["checkpoint", "kind", "iteration", "on disk", "KB", "logged"])
    frame["checkpoint"] = visible_bidi_column(frame["checkpoint"])
    return frame


def _time(seconds: float | None) -> pd.Timestamp | None:
    return None if seconds is None else pd.Timestamp(seconds, unit="s").floor("s")
