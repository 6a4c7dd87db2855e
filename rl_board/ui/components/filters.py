"""Sample filters: reward / KL / length / repetition ranges, a text or regex search, optionally over all
steps; an agent run's trajectory filters; the failure-pattern and label filters (scripts, template family,
tag)."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from rl_board import api
from rl_board.api import RolloutStore, SampleFilter
from rl_board.errors import InvalidArgumentError
from rl_board.formats import fields as F
from rl_board.ui import state
from rl_board.ui.components.labels import tagged, tags_in_run
from rl_board.ui.text import display_name, escape_markdown


@dataclass(frozen=True)
class FilterChoice:
    """The filter to apply (None = everything) and whether it spans all steps."""

    sample_filter: SampleFilter | None
    all_steps: bool
    active: bool


def range_columns(store: RolloutStore, kl: F.KLEstimator | None = None) -> dict[str, tuple[str, str]]:
    """URL name -> (per-sample column, label) for the ranges this run can filter on (KL: ``kl``'s mean); the
    trajectory ranges (turns, tool calls) are ``trajectory_ranges``'."""
    present = {f.name for f in F.at(F.SAMPLE) if store.has(f.name)} | {"reward"}
    found = {key: F.filter_field(key, present, kl) for key in F.FILTER_KEYS if key not in TRAJECTORY_KEYS}
    return {key: (f.name, f.title) for key, f in found.items() if f is not None}


TRAJECTORY_KEYS = (*state.TRAJECTORY_RANGES, "tool_errors")  # "any tool error" is a toggle, not a range


def trajectory_ranges(store: RolloutStore) -> dict[str, tuple[str, str]]:
    """The ranges of a multi-turn run: turns and tool calls per trajectory (none for a single-turn run)."""
    if not store.multi_turn:
        return {}
    present = {f.name for f in F.at(F.SAMPLE) if store.has(f.name)}
    found = {key: F.filter_field(key, present) for key in state.TRAJECTORY_RANGES}
    return {key: (f.name, f.title) for key, f in found.items() if f is not None}


def _extra_range(store: RolloutStore) -> str:
    """A range on one of the log's own numeric columns (a reward component, a score); "" when none is
    chosen."""
    options = [
        "",
        *store.reward_components,
        *[c for c in store.numeric_extras if c not in store.reward_components],
    ]
    if len(options) == 1:
        return ""
    if state.get("filter_column") not in options:
        state.put("filter_column", "")
    pick, low, high = st.columns([2, 1, 1], vertical_alignment="bottom")
    pick.selectbox(
        "Filter another column",
        options,
        format_func=lambda c: c or "(none)",
        help="Reward components and the log's other numeric columns",
        **state.bind("filter_column", _reset_page),
    )
    column = state.get("filter_column") or ""
    name = escape_markdown(column) if column else "value"
    low.number_input(
        f"{name} ≥",
        value=None,
        format="%.4g",
        placeholder="min",
        disabled=not column,
        **state.bind("filter_range.lo", _reset_page),
    )
    high.number_input(
        f"{name} ≤",
        value=None,
        format="%.4g",
        placeholder="max",
        disabled=not column,
        **state.bind("filter_range.hi", _reset_page),
    )
    return column


def _reset_page() -> None:
    state.put("table_page", 1)


def _is_active() -> bool:
    return (
        bool(
            state.get("search")
            or state.get("tools")
            or state.get("tool_errors")
            or state.get("finish_reason")
        )
        or bool(state.get("scripts") or state.get("template") is not None or state.get("tag"))
        or any(state.get_range(n) != (None, None) for n in state.RANGE_PARAMS)
    )


def clear_filters() -> None:
    """Every filter off (a link from another page then sets only its own)."""
    state.put_many(
        search="",
        regex=False,
        match_case=False,
        table_page=1,
        filter_column="",
        tools="",
        tool_errors=False,
        finish_reason=[],
        scripts="",
        template=None,
        tag="",
    )
    for name in state.RANGE_PARAMS:
        state.put_many(**{f"{name}__lo": None, f"{name}__hi": None})


def render_filters(store: RolloutStore, *, kl: F.KLEstimator | None = None) -> FilterChoice:
    """Draw the filter panel (the KL range on ``kl``'s per-sample mean); an invalid regex is reported and its
    search ignored."""
    columns = range_columns(store, kl)
    # keyed: its identity must not change with ``expanded``, or unticking the last filter would fold the panel
    # under the user's pointer (``expanded`` only opens it on a link that carries filters)
    with st.expander(
        "Filter and search",
        expanded=_is_active() or bool(state.get("all_steps")),
        key="filter_panel",
        icon=":material/filter_alt:",
    ):
        search, toggles = st.columns([3, 2], vertical_alignment="bottom")
        search.text_input(
            "Search prompt, response and ground truth",
            placeholder="text or regular expression",
            **state.bind("search", _reset_page),
        )
        with toggles:
            a, b, c = st.columns(3)
            a.toggle("Regex", **state.bind("regex", _reset_page))
            b.toggle("Match case", **state.bind("match_case", _reset_page))
            c.toggle(
                "All steps",
                help="Search every step instead of the current one",
                **state.bind("all_steps", _reset_page),
            )
        cells = st.columns(len(columns) * 2)
        for k, (name, (_, label)) in enumerate(columns.items()):
            cells[2 * k].number_input(
                f"{label} ≥",
                value=None,
                format="%.4g",
                placeholder="min",
                **state.bind(f"{name}.lo", _reset_page),
            )
            cells[2 * k + 1].number_input(
                f"{label} ≤",
                value=None,
                format="%.4g",
                placeholder="max",
                **state.bind(f"{name}.hi", _reset_page),
            )
        extra = _extra_range(store)
        trajectory = trajectory_ranges(store)
        if trajectory:
            _trajectory_filters(store, trajectory)
        _pattern_filters(store)
        if not store.has("kl_mean"):
            st.caption("No KL filter: this run has no log-probs.")
        st.button("Clear filters", on_click=clear_filters, key="clear_filters")
    ranges = {col: state.get_range(name) for name, (col, _) in (columns | trajectory).items()}
    if extra:
        ranges[extra] = state.get_range("filter_range")
    if trajectory and state.get("tool_errors"):
        ranges["n_tool_errors"] = (1.0, None)
    held, among = _trajectory_choice(store) if trajectory else ({}, {})
    held, only = held | _scripts_choice(store), _tag_choice(store)
    ranges |= _template_choice(store)
    try:
        flt = SampleFilter.build(
            ranges=ranges,
            text=state.get("search") or "",
            regex=bool(state.get("regex")),
            case_sensitive=bool(state.get("match_case")),
            contains=held,
            one_of=among,
            only=only,
        )
    except InvalidArgumentError as exc:
        st.error(f"{escape_markdown(str(exc))} — the search is ignored until it is fixed.")
        flt = SampleFilter.build(ranges=ranges, one_of=among, only=only)
    return FilterChoice(None if flt.is_empty else flt, bool(state.get("all_steps")), not flt.is_empty)


def finish_reasons(store: RolloutStore) -> list[str]:
    """The finish reasons a run can have: the vocabulary's, in its order (the log's odd ones last)."""
    logged = (
        store.samples(columns=["finish_reason"])["finish_reason"].dropna().unique().tolist()
        if store.has("finish_reason")
        else []
    )
    return [*api.FINISH_REASONS, *sorted(set(map(str, logged)) - set(api.FINISH_REASONS))]


def _trajectory_filters(store: RolloutStore, ranges: dict[str, tuple[str, str]]) -> None:
    """Turns and tool calls (ranges), the tools used (text), any tool error, the finish reasons (multi-turn
    runs)."""
    st.caption("Trajectories")
    cells = st.columns(max(4, len(ranges) * 2), vertical_alignment="bottom")
    for k, (name, (_, label)) in enumerate(ranges.items()):
        cells[2 * k].number_input(
            f"{label} ≥",
            value=None,
            min_value=0.0,
            step=1.0,
            format="%g",
            placeholder="min",
            **state.bind(f"{name}.lo", _reset_page),
        )
        cells[2 * k + 1].number_input(
            f"{label} ≤",
            value=None,
            min_value=0.0,
            step=1.0,
            format="%g",
            placeholder="max",
            **state.bind(f"{name}.hi", _reset_page),
        )
    tools, errors, finish = st.columns([2, 1, 3], vertical_alignment="bottom")
    tools.text_input(
        F.known(F.SAMPLE, "tools").title,
        placeholder="e.g. search",
        help=F.known(F.SAMPLE, "tools").help,
        **state.bind("tools", _reset_page),
    )
    errors.toggle(
        "Any tool error",
        help=F.known(F.SAMPLE, "n_tool_errors").help,
        **state.bind("tool_errors", _reset_page),
    )
    if store.has("finish_reason"):
        options = finish_reasons(store)
        state.put("finish_reason", [r for r in state.get("finish_reason") or [] if r in options])
        finish.multiselect(
            F.known(F.SAMPLE, "finish_reason").title,
            options,
            placeholder="any",
            help=F.known(F.SAMPLE, "finish_reason").help,
            **state.bind("finish_reason", _reset_page),
        )


def _trajectory_choice(store: RolloutStore) -> tuple[dict[str, str], dict[str, list[str]]]:
    held = {"tools": (state.get("tools") or "").strip()} if store.has("tools") else {}
    among = {"finish_reason": list(state.get("finish_reason") or [])} if store.has("finish_reason") else {}
    return held, among


def _pattern_filters(store: RolloutStore) -> None:
    """The scripts an answer uses (text), its template family (the Patterns page's T-number) and a tag."""
    st.caption("Failure patterns and labels (repetition is a range above)")
    scripts, template, tag = st.columns([2, 1, 2], vertical_alignment="bottom")
    if store.has("scripts"):
        scripts.text_input(
            F.known(F.SAMPLE, "scripts").title,
            placeholder="e.g. Han, or + for any mix",
            help=F.known(F.SAMPLE, "scripts").help + " Matches a part of the name: `+` finds every mix.",
            **state.bind("scripts", _reset_page),
        )
    if store.has("response"):
        family = state.get("template")
        if family is not None and family < 1:  # a link's family 0 or below: none has that number
            st.warning(
                f"Ignored the template family {family}: families are numbered from 1 (T1 the largest)."
            )
            state.put("template", None)
        template.number_input(
            "Template family (T…)",
            min_value=1,
            step=1,
            value=None,
            format="%d",
            placeholder="any",
            help=F.known(F.SAMPLE, "template").help,
            **state.bind("template", _reset_page),
        )
    options = ["", *tags_in_run(store)]
    wanted = state.get("tag") or ""
    if wanted not in options:  # a link's tag no sample carries (any more): kept, so the table says none match
        options.append(wanted)
    tag.selectbox(
        "Tag",
        options,
        format_func=lambda t: display_name(t) if t else "any (or none)",
        help="Only the samples carrying this label (see the Sample page to add one)",
        **state.bind("tag", _reset_page),
    )


def _scripts_choice(store: RolloutStore) -> dict[str, str]:
    text = (state.get("scripts") or "").strip()
    return {"scripts": text} if text and store.has("scripts") else {}


def _template_choice(store: RolloutStore) -> dict[str, tuple[float | None, float | None]]:
    """The family's range (its number both ends); the families are worked out first if they were not yet."""
    family = state.get("template")
    if family is None or not store.has("response"):
        return {}
    if not store.has("template"):  # once per state of the run (the Patterns page may have asked already)
        with st.spinner("Finding families of near-identical answers…"):
            store.find_templates()
    return {"template": (float(family), float(family))} if store.has("template") else {}


def _tag_choice(store: RolloutStore) -> list[tuple[int, int]] | None:
    tag = state.get("tag") or ""
    return tagged(store, tag) if tag else None
