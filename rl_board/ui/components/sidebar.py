"""The sidebar: logs root, run chooser, load report and display settings."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from rl_board.api import RolloutStore, relative_to_roots, resolve_within
from rl_board.config import server_config
from rl_board.errors import RLBoardError
from rl_board.formats import fields as F
from rl_board.ui import cached, state
from rl_board.ui.charts import CurveOptions
from rl_board.ui.components import chart
from rl_board.ui.components.field_map import current_map, render_field_map
from rl_board.ui.components.load_report import render_load_report
from rl_board.ui.context import Context, DisplaySettings
from rl_board.ui.text import (
    DEFAULT_PAD_TOKENS,
    DEFAULT_SYSTEM_MARKER,
    TextDisplay,
    display_name,
    escape_markdown,
    parse_token_list,
)


def render() -> Context:
    """Draw the sidebar and return what it decided (errors become messages, not exceptions)."""
    roots = list(server_config().roots)
    with st.sidebar:
        ctx = Context(roots=roots)
        ctx.root = _logs_root(roots)
        if ctx.root is not None:
            _choose_run(ctx)
        if ctx.store is not None:
            render_load_report(ctx.store.report)
            render_field_map(ctx.store)
            if st.toggle(
                "Follow new data",
                key="follow",
                help=f"Check the run's files every {FOLLOW_SECONDS} s and redraw when lines were added",
            ):
                _follow(ctx.store)
        chart.render_toggle()
        ctx.settings = _display_settings()
    return ctx


FOLLOW_SECONDS = 5


@st.fragment(run_every=FOLLOW_SECONDS)
def _follow(store: RolloutStore) -> None:
    """Live refresh: a cheap stat check; the whole page reruns (and the store reads the new bytes) on
    change."""
    if store.stale():
        st.rerun()


def _logs_root(roots: list[Path]) -> Path | None:
    default = str(roots[0]) if roots else ""
    labels = {str(r): server_config().label(r) for r in roots}  # a bucket's copy is named by its URL
    named = ", ".join(escape_markdown(label) for label in labels.values())
    text = st.text_input(
        "Logs root",
        value=default,
        key="root",
        help=f"A folder inside the roots this server serves: {named}. A remote root (s3://...) "
        "is served from its copy in the cache, listed again every few seconds.",
    )
    remote = labels.get(text) if labels.get(text, text) != text else None
    if remote:
        st.caption(f"A copy of {escape_markdown(remote)}")
    try:
        return resolve_within(text or default, roots)
    except RLBoardError as exc:
        st.error(f"Refused: {escape_markdown(str(exc))}. Nothing was read.")
        return None


def _run_names(runs: pd.DataFrame, roots: list[Path]) -> list[str]:
    return [relative_to_roots(Path(p), roots) for p in runs["path"]]


def _run_label(row: pd.Series) -> str:
    """A run in the chooser (plain text: bidi controls shown, nothing else to escape)."""
    name = display_name(row["run"])
    if pd.notna(row["samples"]):
        return f"{name} · {int(row['samples'])} samples · {int(row['steps'])} steps"
    size = row["bytes"] / 1e6
    return f"{name} · not loaded yet · {int(row['files'])} file(s), {size:.1f} MB"


def _choose_run(ctx: Context) -> None:
    try:
        runs = cached.runs_under(str(ctx.root), cached.served())
    except RLBoardError as exc:
        st.error(escape_markdown(str(exc)))
        return
    ctx.runs = runs
    if runs.empty:
        st.info(
            "No rollout run here: a run is a folder of rollout files (rl-board JSONL, or a verl, TRL, "
            "ROLL, NeMo-RL, prime-rl, AReaL or SkyRL dump). The page lists what was found instead."
        )
        _forget_run()
        return
    names = _run_names(runs, ctx.roots)
    labels = dict(zip(names, (_run_label(r) for _, r in runs.iterrows()), strict=True))
    wanted = state.get("run")
    if wanted is not None and wanted not in labels:
        state.notice(_unknown_run_message(wanted, ctx))
        _forget_run()
        wanted = None
    if wanted is not None:  # open first (with progress), so the chooser shows fresh counts
        row = names.index(wanted)
        ctx.run, ctx.run_path = wanted, Path(runs["path"].iloc[row])
        try:
            ctx.store = open_run(ctx.run_path, wanted)
            labels[wanted] = (
                f"{display_name(runs['run'].iloc[row])} · {ctx.store.num_samples} samples · "
                f"{len(ctx.store.steps)} steps"
            )
        except RLBoardError as exc:  # e.g. the folder vanished or became unreadable
            st.error(escape_markdown(str(exc)))
    st.selectbox(
        "Run",
        names,
        index=None,
        format_func=labels.__getitem__,
        placeholder="Choose a run…",
        **state.bind("run", on_change=_run_changed),
    )
    st.button(
        "↻ Check for new data",
        help="Re-list runs and read lines appended since the last look",
        on_click=cached.runs_under.clear,
    )


def _unknown_run_message(wanted: str, ctx: Context) -> str:
    name = escape_markdown(repr(wanted[:200]))
    try:
        resolve_within(wanted, ctx.roots)
    except RLBoardError as exc:
        return f"Refused run {name} from the link: {escape_markdown(str(exc))}. Choose a run in the sidebar."
    return f"No run {name} under {escape_markdown(str(ctx.root))}; choose one in the sidebar."


def _forget_run() -> None:
    state.put("run", None)
    _run_changed()


def _run_changed() -> None:
    state.put_many(step=None, sample=None, table_page=1, fields="")


def open_run(run_path: Path, name: str) -> RolloutStore:
    """The shared store; the first open in this server shows progress with real byte totals."""
    fields = current_map()
    if cached.is_open(run_path, fields):
        return cached.store_for(run_path, fields=fields)
    shown = escape_markdown(name)  # progress text is Markdown
    bar = st.progress(0.0, text=f"Opening {shown}…")

    def progress(done: int, total: int) -> None:
        fraction = min(done / total, 1.0) if total else 1.0
        bar.progress(fraction, text=f"Reading {shown}: {done / 1e6:.1f} of {total / 1e6:.1f} MB")

    try:
        store = cached.store_for(run_path, progress, fields)
    finally:
        bar.empty()
    cached.runs_under.clear()  # the run list now knows its sample and step counts
    return store


BAND_LABELS = {"p10-p90": "p10–p90", "min-max": "min–max", "std": "± std"}


def _display_settings() -> DisplaySettings:
    with st.expander("Display settings", expanded=False):
        hide_pads = st.toggle("Hide pad tokens", value=True, key="hide_pads")
        pads = st.text_input(
            "Pad tokens",
            value=", ".join(DEFAULT_PAD_TOKENS),
            key="pad_tokens",
            help="Comma-separated, e.g. <PAD>, <EOD>",
            disabled=not hide_pads,
        )
        hide_system = st.toggle("Hide system prompt", value=True, key="hide_system")
        marker = st.text_input(
            "System prompt ends with",
            value=DEFAULT_SYSTEM_MARKER,
            key="system_marker",
            help="Everything up to this marker is hidden",
            disabled=not hide_system,
        )
        band = st.radio(
            "Curve band",
            list(BAND_LABELS),
            format_func=BAND_LABELS.get,
            key="band",
            horizontal=True,
            help="What the shaded band around each step's mean shows: the spread of that step's samples",
        )
        scale = st.slider(
            "Band width (× std)",
            0.1,
            2.0,
            1.0,
            0.05,
            key="band_scale",
            disabled=band != "std",
            help="With the ± std band: mean ± this × standard deviation per step",
        )
        zero = st.toggle(
            "Zero shift",
            value=False,
            key="zero_shift",
            help="Move each curve's first point to 0 to compare trends",
        )
        _kl_estimator()
    text = TextDisplay(
        pad_tokens=parse_token_list(pads) if hide_pads else (),
        system_marker=marker.strip() if hide_system else "",
    )
    return DisplaySettings(
        text=text,
        curves=CurveOptions(band=band or "p10-p90", band_scale=float(scale), zero_shift=zero),
        kl=F.kl_estimator(state.get("kl_estimator") or F.DEFAULT_KL_ESTIMATOR),
    )


def _kl_estimator() -> None:
    """Which estimator is "KL" on every page (kept in the link as ``kl_estimator``)."""
    names = [e.name for e in F.KL_ESTIMATORS]
    if state.get("kl_estimator") not in names:
        state.put("kl_estimator", F.DEFAULT_KL_ESTIMATOR)
    how = " ".join(f"{e.label}: {e.help}" for e in F.KL_ESTIMATORS)
    st.radio(
        "KL estimator",
        names,
        format_func=lambda name: F.kl_estimator(name).label,
        help=f"Per token, with r = logp − ref_logp, each estimates KL(policy‖reference). {how} Drives the "
        "KL column, its sort and filter, the KL curve, the sample's KL cards and the token colours.",
        **state.bind("kl_estimator", _estimator_changed),
    )


def _estimator_changed() -> None:
    """A KL column chosen for sorting or colouring tokens follows the new estimator (k1's log-ratio too)."""
    chosen = F.kl_estimator(state.get("kl_estimator"))
    for old in F.KL_ESTIMATORS:
        for role, view_field in (("mean", "sort"), ("sum", "sort"), ("token", "token_metric")):
            if state.get(view_field) == getattr(old, role):
                state.put(view_field, getattr(chosen, role))
