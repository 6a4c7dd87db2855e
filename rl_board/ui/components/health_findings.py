"""Health findings for the runs under the logs root: collected, grouped by severity, each with a link.

A rollout finding's link opens the step browser at its step, with the sort
and filters the finding names (`health_rollouts` documents the link keys);
a metric finding's link opens the Metrics page on its run and tag.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from rl_board.data.health import REGISTRY, SEVERITIES, Finding
from rl_board.data.paths import relative_to_roots
from rl_board.data.scalars import Problem
from rl_board.data.text import escape_markdown
from rl_board.errors import RLBoardError
from rl_board.ui import cached, metrics_cached, state
from rl_board.ui.components.metrics_runs import code_span
from rl_board.ui.context import Context
from rl_board.ui.metrics_cached import HealthSettings

SEVERITY_ICONS = {
    "error": ":red[:material/error:]",
    "warning": ":orange[:material/warning:]",
    "info": ":blue[:material/info:]",
}
FILTER_LABELS = {"q": "text", "reward": "reward", "kl": "KL", "len": "length"}


@dataclass(frozen=True)
class Located:
    """A finding and where it came from: "rollouts" (a rollout run) or "scalars" (a metric run)."""

    finding: Finding
    source: str


def collect(ctx: Context, health: HealthSettings) -> tuple[list[Located], list[Problem]]:
    """Scalar findings of every metric run and rollout findings of every rollout run under the root."""
    root = str(ctx.root)
    bundle = metrics_cached.metrics_under(Path(root))
    found = [Located(f, "scalars") for f in metrics_cached.scalar_findings(
        root, metrics_cached.signature(root), health.key, bundle, health.settings)]  # fmt: skip
    rollout, problems = _rollout_findings(ctx, health)
    return found + rollout, problems


def _rollout_findings(ctx: Context, health: HealthSettings) -> tuple[list[Located], list[Problem]]:
    runs = cached.runs_under(str(ctx.root), cached.cache_dir())
    found: list[Located] = []
    problems: list[Problem] = []
    bar = None
    for k, row in enumerate(runs.itertuples()):
        path = Path(row.path)
        if not cached.is_open(path):
            bar = bar or st.progress(0.0)
            bar.progress(k / len(runs), text=f"Opening rollout run {row.run} ({k + 1} of {len(runs)})…")
        try:
            store = cached.store_for(path)
            name = relative_to_roots(path, ctx.roots)
        except RLBoardError as err:
            problems.append(Problem(str(path), f"rollout run not checked: {err}"))
            continue
        findings = metrics_cached.rollout_findings(str(path), store.signature, name, health.key, store,
                                                   health.settings)  # fmt: skip
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
            st.markdown(f"{_icon(f.severity)} **{escape_markdown(f.rule)}** · {kind} "
                        f"{code_span(f.run)} · {_steps_text(f.steps)}")  # fmt: skip
            st.markdown(escape_markdown(f.message))
            if rule is not None:
                st.caption(escape_markdown(rule.summary))
        with action:
            _link_buttons(item, key)


def _link_buttons(item: Located, key: str) -> None:
    f, link = item.finding, item.finding.link or {}
    if "step" not in link:
        return
    if item.source == "rollouts":
        st.button(f"Open step {link['step']}", key=f"hlink.{key}", icon=":material/table_rows:", width="stretch",
                  on_click=open_in_step_browser, args=(f.run, link),
                  help="Open the step browser at this step" + _filters_text(link))  # fmt: skip
        if "sample" in link:
            st.button(f"Open sample {link['sample']}", key=f"hsample.{key}", icon=":material/article:",
                      width="stretch", on_click=open_in_step_browser, args=(f.run, link, "sample"))  # fmt: skip
        if link.get("filters") or link.get("sort"):
            st.caption(_filters_text(link).strip(" ;"))
    else:
        st.button("Show in Metrics", key=f"hlink.{key}", icon=":material/monitoring:", width="stretch",
                  on_click=open_in_metrics, args=(f.run, link.get("tag", "")),
                  help="Open the Metrics page on this run and tag")  # fmt: skip
        if link.get("tag"):
            st.caption(f"{escape_markdown(str(link['tag']))} at step {link['step']}")


def open_in_step_browser(run: str, link: dict[str, Any], page: str = "steps") -> None:
    """Put a finding's link into the view state and ask the router for the page (a button callback)."""
    state.put_many(run=run, step=int(link["step"]), sample=link.get("sample"), tpage=1, q="", regex=False,
                   case=False, all=False, sort=link.get("sort") or "sample", desc=bool(link.get("desc")))  # fmt: skip
    for name in state.RANGE_PARAMS:
        state.put_many(**{f"{name}__lo": None, f"{name}__hi": None})
    for name, value in (link.get("filters") or {}).items():
        if name in state.RANGE_PARAMS:
            low, high = value
            state.put_many(**{f"{name}__lo": low, f"{name}__hi": high})
        elif name == "q":
            state.put("q", str(value))
    state.request_page(page)


def open_in_metrics(run: str, tag: str) -> None:
    """Show one metric run's tag on the Metrics page (a button callback)."""
    state.put("metrics.runs", [run])
    state.put("metrics.q", tag)
    state.request_page("metrics")


def _filters_text(link: dict[str, Any]) -> str:
    parts = []
    for name, value in (link.get("filters") or {}).items():
        if name == "q":
            parts.append(f"text contains {str(value)[:40]!r}")
        elif isinstance(value, (list, tuple)) and len(value) == 2:
            low, high = value
            label = FILTER_LABELS.get(name, name)
            parts.append(" and ".join(p for p in (f"{label} ≥ {low:.4g}" if low is not None else "",
                                                  f"{label} ≤ {high:.4g}" if high is not None else "") if p))  # fmt: skip
    if link.get("sort"):
        parts.append(f"sorted by {link['sort']}{' descending' if link.get('desc') else ''}")
    return ("; " + "; ".join(parts)) if parts else ""


def _steps_text(steps: Sequence[int], limit: int = 5) -> str:
    if not steps:
        return "no step"
    head = ", ".join(str(s) for s in steps[:limit])
    more = f" … ({len(steps)} steps)" if len(steps) > limit else ""
    return f"step{'s' if len(steps) > 1 else ''} {head}{more}"


def _icon(severity: str) -> str:
    return SEVERITY_ICONS.get(severity, "")
