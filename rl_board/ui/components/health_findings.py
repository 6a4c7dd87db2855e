"""Health findings for the runs under the logs root: collected, grouped by severity, each with a link.

A rollout finding's link opens the step browser at its step, with the sort
and filters the finding names (`health_rollouts` documents the link keys);
a metric finding's link opens the Metrics page on its run and tag.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import streamlit as st

from rl_board.api import REGISTRY, SEVERITIES, Finding, Problem, relative_to_roots
from rl_board.errors import RLBoardError
from rl_board.formats import fields as F
from rl_board.ui import cached, metrics_cached, state
from rl_board.ui.components.metrics_runs import code_span
from rl_board.ui.context import Context
from rl_board.ui.metrics_cached import HealthSettings
from rl_board.ui.text import escape_markdown
from rl_board.where import Where

SEVERITY_ICONS = {
    "error": ":red[:material/error:]",
    "warning": ":orange[:material/warning:]",
    "info": ":blue[:material/info:]",
}


def _filter_label(key: str) -> str:
    """A range filter's short name: every filter key has a per-sample field (KeyError if not)."""
    field = F.filter_field(key, {f.name for f in F.at(F.SAMPLE)})
    if field is None:
        raise KeyError(f"no per-sample field has the filter key {key!r}")
    return field.brief


FILTER_LABELS = {key: _filter_label(key) for key in F.FILTER_KEYS}


@dataclass(frozen=True)
class Located:
    """A finding and where it came from: "rollouts" (a rollout run) or "scalars" (a metric run)."""

    finding: Finding
    source: str


def collect(ctx: Context, health: HealthSettings) -> tuple[list[Located], list[Problem]]:
    """Scalar findings of every metric run and rollout findings of every rollout run under the root."""
    root = str(ctx.root)
    bundle = metrics_cached.metrics_under(Path(root))
    found = [
        Located(f, "scalars")
        for f in metrics_cached.scalar_findings(
            root, metrics_cached.signature(root), health.key, bundle, health.settings
        )
    ]
    rollout, problems = _rollout_findings(ctx, health)
    return found + rollout, problems


def _rollout_findings(ctx: Context, health: HealthSettings) -> tuple[list[Located], list[Problem]]:
    """Every rollout run's findings, computed once per state of the root's files (a revisit costs one
    walk)."""
    root = str(ctx.root)
    files = cached.rollout_files_signature(root, cached.cache_dir())
    return _findings_of_root(root, files, health.key, tuple(ctx.roots), health)


@st.cache_data(show_spinner=False, max_entries=8)
def _findings_of_root(
    root: str, files_signature: str, settings_key: str, roots: tuple[Path, ...], _health: HealthSettings
) -> tuple[list[Located], list[Problem]]:
    health = _health
    runs = cached.runs_under(root, cached.cache_dir())
    found: list[Located] = []
    problems: list[Problem] = []
    bar = None
    for k, row in enumerate(runs.itertuples()):
        path = Path(row.path)
        if not cached.is_open(path):
            bar = bar or st.progress(0.0)
            bar.progress(
                k / len(runs),
                text=f"Opening rollout run {escape_markdown(str(row.run))} ({k + 1} of {len(runs)})…",
            )
        try:
            store = cached.store_for(path)
            name = relative_to_roots(path, list(roots))
        except RLBoardError as err:
            problems.append(Problem(str(path), f"rollout run not checked: {err}"))
            continue
        findings = metrics_cached.rollout_findings(
            str(path), store.signature, name, health.key, store, health.settings
        )
        found.extend(Located(f, "rollouts") for f in findings)
    if bar is not None:
        bar.empty()
    return found, problems


def render_summary(located: Sequence[Located]) -> None:
    """How many findings of each severity (most severe first)."""
    columns = st.columns(len(SEVERITIES))
    for column, severity in zip(columns, reversed(SEVERITIES), strict=True):
        count = sum(1 for item in located if item.finding.severity == severity)
        column.metric(f"{severity.capitalize()}s", count)


def render_findings(located: Sequence[Located]) -> None:
    """Findings grouped by severity, each with its rule, run, steps, message and a link."""
    if not located:
        st.success("No rule fired on the runs under this logs root.", icon=":material/check_circle:")
        return
    for severity in reversed(SEVERITIES):
        items = [item for item in located if item.finding.severity == severity]
        if not items:
            continue
        st.subheader(f"{severity.capitalize()} · {len(items)}", anchor=False)
        for k, item in enumerate(sorted(items, key=lambda i: (i.finding.run, i.finding.rule))):
            _finding_card(item, f"{severity}.{k}")


def _finding_card(item: Located, key: str) -> None:
    f = item.finding
    rule = REGISTRY.get(f.rule)
    with st.container(border=True):
        text, action = st.columns([4, 1.3], vertical_alignment="center")
        with text:
            kind = "rollout run" if item.source == "rollouts" else "metric run"
            st.markdown(
                f"{_icon(f.severity)} **{escape_markdown(f.rule)}** · {kind} "
                f"{code_span(f.run)} · {_steps_text(f.steps)}"
            )
            st.markdown(escape_markdown(f.message))
            if rule is not None:
                st.caption(escape_markdown(rule.summary))
        with action:
            _link_buttons(item, key)


def _link_buttons(item: Located, key: str) -> None:
    f, where = item.finding, item.finding.link
    if where is None or where.step is None:
        return
    if item.source == "rollouts":
        described = where.describe(FILTER_LABELS)
        tip = "Open the step browser at this step" + (f"; {escape_markdown(described)}" if described else "")
        st.button(
            f"Open step {where.step}",
            key=f"hlink.{key}",
            icon=":material/table_rows:",
            width="stretch",
            on_click=open_in_step_browser,
            args=(f.run, where),
            help=tip,
        )
        if where.sample is not None:
            st.button(
                f"Open sample {where.sample}",
                key=f"hsample.{key}",
                icon=":material/article:",
                width="stretch",
                on_click=open_in_step_browser,
                args=(f.run, where, "sample"),
            )
        if described:
            st.caption(escape_markdown(described))
    else:
        st.button(
            "Show in Metrics",
            key=f"hlink.{key}",
            icon=":material/monitoring:",
            width="stretch",
            on_click=open_in_metrics,
            args=(f.run, where.tag or ""),
            help="Open the Metrics page on this run and tag",
        )
        if where.tag:
            st.caption(f"{escape_markdown(str(where.tag))} at step {where.step}")


def open_in_step_browser(run: str, where: Where, page: str = "steps") -> None:
    """Put a finding's place into the view state and ask the router for the page (a button callback)."""
    state.show(replace(where, run=run))
    state.request_page(page)


def open_in_metrics(run: str, tag: str) -> None:
    """Show one metric run's tag on the Metrics page (a button callback)."""
    state.put("metric_runs", [run])
    state.put("metric_filter", tag)
    state.request_page("metrics")


def _steps_text(steps: Sequence[int], limit: int = 5) -> str:
    if not steps:
        return "no step"
    head = ", ".join(str(s) for s in steps[:limit])
    more = f" … ({len(steps)} steps)" if len(steps) > limit else ""
    return f"step{'s' if len(steps) > 1 else ''} {head}{more}"


def _icon(severity: str) -> str:
    return SEVERITY_ICONS.get(severity, "")
