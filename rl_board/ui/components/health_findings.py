"""Health findings for the runs under the logs root: collected, grouped by what to do, each with links.

Findings come in the groups their rules belong to (``Rule.group``: training
is diverging, no learning signal, the logged numbers disagree with the data),
in that order, each group most severe first; the findings of the other rules
follow grouped by severity. Every card names its rule, run and steps, what
the rule saw and the source its thresholds come from.

Links: a rollout finding opens the step browser at its step, with the sort
and filters the finding names (``rollout_rules`` documents the link keys);
a metric finding opens the Metrics page on its run, tag and step. Where a
metric run and a rollout run are paired (the same folder, or a trainer's
output folder and its ``completions/`` or ``rollouts/``), a metric finding
also opens the samples of its step and a rollout finding the trainer's curve.
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


OTHER = ""  # the group of rules that name no group: shown by severity, as before groups existed
TRAINER_FOLDERS = ("completions", "rollouts")  # a trainer's {out}/<this> holds samples, {out} its metrics


@dataclass(frozen=True)
class Located:
    """A finding and where it came from: "rollouts" (a rollout run) or "scalars" (a metric run); and the run
    of the other kind paired with it, if any (``samples``: a rollout run's path; ``metrics``: a metric
    run's name)."""

    finding: Finding
    source: str
    path: str = ""  # the rollout run's folder (rollout findings)
    samples: str = ""
    metrics: str = ""


def collect(ctx: Context, health: HealthSettings) -> tuple[list[Located], list[Problem]]:
    """Scalar findings of every metric run and rollout findings of every rollout run under the root, each
    with the run of the other kind paired with it."""
    root = str(ctx.root)
    bundle = metrics_cached.metrics_under(Path(root))
    found = [
        Located(f, "scalars")
        for f in metrics_cached.scalar_findings(
            root, metrics_cached.signature(root), health.key, bundle, health.settings
        )
    ]
    rollout, problems = _rollout_findings(ctx, health)
    return pair(found + rollout, {info.run: Path(info.path) for info in bundle.runs}, ctx), problems


def paired(metric_path: Path, run_dir: Path) -> bool:
    """Whether a metric run (its file or folder) belongs to a rollout run: the same folder, the trainer's
    output folder of a ``completions/`` or ``rollouts/`` run, or a ``checkpoint-N`` beside it (TRL)."""
    folder = (metric_path if metric_path.is_dir() else metric_path.parent).resolve()
    run = run_dir.resolve()
    out = run.parent if run.name in TRAINER_FOLDERS else run
    return folder in (run, out) or (folder.parent == out and folder.name.startswith("checkpoint-"))


def pair(located: list[Located], metric_runs: dict[str, Path], ctx: Context) -> list[Located]:
    """Each finding with the run of the other kind that belongs with it (see ``paired``)."""
    runs = cached.runs_under(str(ctx.root), cached.served())
    rollout_dirs = [Path(p) for p in runs["path"]] if len(runs) else []
    out = []
    for item in located:
        if item.source == "scalars":
            path = metric_runs.get(item.finding.run)
            match = next((r for r in rollout_dirs if path is not None and paired(path, r)), None)
            out.append(replace(item, samples=str(match) if match else ""))
        else:
            name = next((n for n, p in metric_runs.items() if item.path and paired(p, Path(item.path))), "")
            out.append(replace(item, metrics=name))
    return out


def _rollout_findings(ctx: Context, health: HealthSettings) -> tuple[list[Located], list[Problem]]:
    """Every rollout run's findings, computed once per state of the root's files (a revisit costs one
    walk)."""
    root = str(ctx.root)
    files = cached.rollout_files_signature(root, cached.served())
    return _findings_of_root(root, files, health.key, tuple(ctx.roots), health)


@st.cache_data(show_spinner=False, max_entries=8)
def _findings_of_root(
    root: str, files_signature: str, settings_key: str, roots: tuple[Path, ...], _health: HealthSettings
) -> tuple[list[Located], list[Problem]]:
    health = _health
    runs = cached.runs_under(root, cached.served())
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
        found.extend(Located(f, "rollouts", str(path)) for f in findings)
    if bar is not None:
        bar.empty()
    return found, problems


def render_summary(located: Sequence[Located]) -> None:
    """How many findings of each severity (most severe first)."""
    columns = st.columns(len(SEVERITIES))
    for column, severity in zip(columns, reversed(SEVERITIES), strict=True):
        count = sum(1 for item in located if item.finding.severity == severity)
        column.metric(f"{severity.capitalize()}s", count)


def group_of(item: Located) -> str:
    """The group a finding is shown in: its rule's (OTHER for a rule that names none, or an unknown rule)."""
    rule = REGISTRY.get(item.finding.rule)
    return rule.group if rule is not None else OTHER


def groups_in_order() -> list[str]:
    """The rules' groups in the order the registry first names them (the rule modules register the
    diverging rules first, then those on the learning signal, then the cross-checks)."""
    return list(dict.fromkeys(rule.group for rule in REGISTRY.values() if rule.group))


def _severity_rank(item: Located) -> int:
    return -SEVERITIES.index(item.finding.severity) if item.finding.severity in SEVERITIES else 0


def render_findings(located: Sequence[Located]) -> None:
    """Findings grouped by what to do (most severe first within a group), then the others by severity;
    each with its rule, run, steps, message, source and links."""
    if not located:
        st.success("No rule fired on the runs under this logs root.", icon=":material/check_circle:")
        return
    for group in groups_in_order():
        items = [item for item in located if group_of(item) == group]
        if not items:
            continue
        st.subheader(f"{group[:1].upper()}{group[1:]} · {len(items)}", anchor=False)
        ordered = sorted(items, key=lambda i: (_severity_rank(i), i.finding.run, i.finding.rule))
        for k, item in enumerate(ordered):
            _finding_card(item, f"{group}.{k}")
    rest = [item for item in located if group_of(item) not in groups_in_order()]
    for severity in reversed(SEVERITIES):
        items = [item for item in rest if item.finding.severity == severity]
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
                if rule.source:
                    st.caption(f"Source: {escape_markdown(rule.source)}")
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
        if item.metrics and where.tag:
            st.button(
                "Show the trainer's curve",
                key=f"hcurve.{key}",
                icon=":material/monitoring:",
                width="stretch",
                on_click=open_in_metrics,
                args=(item.metrics, where.tag, where.step),
                help=f"Open the Metrics page on {escape_markdown(item.metrics)}, {escape_markdown(where.tag)}"
                f" at step {where.step}",
            )
        if described:
            st.caption(escape_markdown(described))
        elif where.tag:
            st.caption(f"the trainer's {escape_markdown(str(where.tag))} at step {where.step}")
    else:
        st.button(
            "Show in Metrics",
            key=f"hlink.{key}",
            icon=":material/monitoring:",
            width="stretch",
            on_click=open_in_metrics,
            args=(f.run, where.tag or "", where.step),
            help="Open the Metrics page on this run and tag, at the finding's first step",
        )
        if item.samples:
            st.button(
                f"Samples at step {where.step}",
                key=f"hsamples.{key}",
                icon=":material/table_rows:",
                width="stretch",
                on_click=open_samples_near,
                args=(item.samples, where.step),
                help="Open the step browser on the rollouts logged beside this run, at the nearest step",
            )
        if where.tag:
            st.caption(f"{escape_markdown(str(where.tag))} at step {where.step}")


def open_in_step_browser(run: str, where: Where, page: str = "steps") -> None:
    """Put a finding's place into the view state and ask the router for the page (a button callback)."""
    state.show(replace(where, run=run))
    state.request_page(page)


def open_in_metrics(run: str, tag: str, step: int | None = None) -> None:
    """Show one metric run's tag on the Metrics page, with the finding's step in the view state (a button
    callback)."""
    state.put("metric_runs", [run])
    state.put("metric_filter", tag)
    if step is not None:
        state.put("step", int(step))
    state.request_page("metrics")


def open_samples_near(run_path: str, step: int) -> None:
    """The step browser on a rollout run at its step nearest `step` (a metric finding's samples)."""
    steps = cached.store_for(Path(run_path)).steps
    if steps:
        nearest = min(steps, key=lambda s: abs(s - step))
        state.put_many(run=cached.run_name(Path(run_path)), step=nearest, sample=None, table_page=1)
        state.request_page("steps")


def _steps_text(steps: Sequence[int], limit: int = 5) -> str:
    if not steps:
        return "no step"
    head = ", ".join(str(s) for s in steps[:limit])
    more = f" … ({len(steps)} steps)" if len(steps) > limit else ""
    return f"step{'s' if len(steps) > 1 else ''} {head}{more}"


def _icon(severity: str) -> str:
    return SEVERITY_ICONS.get(severity, "")
