"""The batch table: sorted through the store, paged, formatted; a selected row opens its sample."""

from __future__ import annotations

import hashlib
import math
from typing import Literal

import numpy as np
import pandas as pd
import streamlit as st

from rl_board import api
from rl_board.api import RolloutStore, SampleFilter
from rl_board.formats import fields as F
from rl_board.ui import state
from rl_board.ui.components.filters import FilterChoice
from rl_board.ui.components.labels import render_rows_labels, tag_column, tags_by_sample, with_tags
from rl_board.ui.components.selection import selected_item
from rl_board.ui.text import TextDisplay, escape_markdown, shown_column, visible_bidi_column

PAGE_ROWS = 1000
CELL_CHARS = 1000
TRAJECTORY_CELL_CHARS = (
    300  # an agent run's prompt and response are every turn joined: a cell shows the start
)
TABLE_KEY = "sample_table"
TAGGING_KEY = "sample_table_tagging"  # the same table while rows are ticked to tag them (+ the rows it shows)
_ROWS_KEY = "_table_rows"
TEXT_COLUMNS = tuple(f.name for f in F.at(F.SAMPLE) if f.kind == F.TEXT and f.source)


TRAJECTORY_COLUMNS = ("turns", "n_tool_calls", "n_tool_errors", "tools", "finish_reason")
KEPT_COLUMNS = ("kept", "dropped_reason")  # where the log says a rollout was left out of training, and why


def table_columns(store: RolloutStore, kl: F.KLEstimator | None = None) -> list[str]:
    """Known columns present in the run (KL as ``kl`` estimates it), then the user's own scalar fields; a
    multi-turn run's trajectory columns (turns, tool calls, tool errors, tools used, finish reason) first; a
    rollout the trainer left out of training shown, with its reason, not hidden."""
    known = [c for c in F.table_columns(kl) if store.has(c)]
    if store.multi_turn:
        known = [c for c in TRAJECTORY_COLUMNS if store.has(c)] + [
            c for c in known if c not in TRAJECTORY_COLUMNS
        ]
    known += [c for c in KEPT_COLUMNS if store.has(c)]
    return list(dict.fromkeys(known + [c for c in store.extra_fields if store.has(c)]))


def _nested(values: pd.Series) -> bool:
    return any(isinstance(v, list | tuple | dict | np.ndarray) for v in values.dropna().head(20))


def _numbers_per_token(values: pd.Series) -> bool:
    """A column of number arrays (a per-token loss mask, advantages...): the token view's, too long for a
    cell."""
    first = next((v for v in values.dropna().head(20) if isinstance(v, list | tuple | np.ndarray)), None)
    return (
        first is not None
        and len(first) > 0
        and all(isinstance(x, int | float | np.number) and not isinstance(x, bool) for x in list(first)[:50])
    )


def shown_columns(store: RolloutStore, columns: list[str]) -> list[str]:
    """The table's columns without the log's per-token number arrays (exports keep them)."""
    extras = [c for c in columns if c in store.extra_fields]
    if not extras:
        return columns
    probe = store.samples(columns=extras, limit=20)
    return [c for c in columns if c not in extras or not _numbers_per_token(probe[c])]


def sort_options(store: RolloutStore, kl: F.KLEstimator | None = None) -> list[str]:
    """Every table column that can be ordered (user fields holding lists cannot)."""
    columns = table_columns(store, kl)
    extras = [c for c in columns if c in store.extra_fields]
    probe = store.samples(columns=extras, limit=100) if extras else pd.DataFrame()
    return ["sample", *[c for c in columns if c not in extras or not _nested(probe[c])]]


def valid_sort(options: list[str], kl: F.KLEstimator | None = None) -> str:
    """The sort of the view state if the table has it; a KL column follows the chosen estimator
    (``sort=kl_mean`` sorts by the k2 mean when k2 is chosen)."""
    wanted = state.get("sort")
    if isinstance(wanted, str) and F.as_kl(wanted, kl) in options:
        wanted = F.as_kl(wanted, kl)
        state.put("sort", wanted)
    if wanted in options:
        return wanted
    st.warning(f"Cannot sort by {escape_markdown(repr(wanted))} in this run; sorted by sample instead.")
    state.put("sort", "sample")
    return "sample"


def _column_config(frame: pd.DataFrame) -> dict:
    config: dict = {}
    for name in frame.columns:
        field = F.sample(name)
        label, help_text = F.label(name), field.help if field else None
        if name in TEXT_COLUMNS:
            wide = name in ("prompt", "response")  # the texts people read: wide enough for a sentence
            config[name] = st.column_config.TextColumn(
                label, width="large" if wide else "medium", help=help_text
            )
        elif field is not None and field.kind == F.COUNT and pd.api.types.is_numeric_dtype(frame[name].dtype):
            config[name] = st.column_config.NumberColumn(label, format="%d", width="small", help=help_text)
        elif pd.api.types.is_float_dtype(frame[name].dtype):
            config[name] = st.column_config.NumberColumn(label, format="%.4f", help=help_text)
        else:
            config[name] = st.column_config.Column(label, help=help_text)
    return config


def column_order(columns: list[str], sort: str, tags: str = "") -> list[str]:
    """Step and sample first, then the sorted column (so the ranking is visible), the samples' tags, the
    rest."""
    head: list[str] = [c for c in ("step", "sample") if c in columns]
    if sort in columns and sort not in head:
        head.append(sort)
    if tags in columns and tags not in head:
        head.append(tags)
    return head + [c for c in columns if c not in head]


def display_frame(
    frame: pd.DataFrame, text: TextDisplay, *, show_step: bool, max_chars: int = CELL_CHARS
) -> pd.DataFrame:
    """Table cells: pads/system prompt hidden, long text clipped, bidi controls shown, bookkeeping last."""
    out = frame.copy()
    for name in TEXT_COLUMNS:
        if name in out.columns:
            out[name] = visible_bidi_column(shown_column(out[name], text, max_chars=max_chars))
    if not show_step:
        out = out.drop(columns=["step"])
    if (
        "template" in out.columns
    ):  # a family by its name on the Patterns page (T1 the largest); none left empty
        out["template"] = out["template"].map(lambda v: f"T{int(v)}" if pd.notna(v) and v > 0 else None)
    for name in out.columns:
        column = out[name]
        if pd.api.types.is_object_dtype(column.dtype):  # user fields holding lists or dicts: show as text
            as_text = column.map(lambda v: v if v is None or isinstance(v, str) else str(v))
            out[name] = visible_bidi_column(as_text)
        elif name not in TEXT_COLUMNS and _textual(column):  # the file name, the log's own text fields
            out[name] = visible_bidi_column(column.astype(object))
    return out


def _textual(column: pd.Series) -> bool:
    return isinstance(column.dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(column.dtype)


def _open_selected() -> None:
    target = selected_item(TABLE_KEY, _ROWS_KEY)
    if target is not None:
        open_sample(*target)


def open_sample(step: int, index: int) -> None:
    state.put_many(step=int(step), sample=int(index))
    state.request_page("sample")


def _page(total: int) -> int:
    pages = max(1, math.ceil(total / PAGE_ROWS))
    page = state.get("table_page") or 1
    if not 1 <= page <= pages:
        state.put("table_page", 1)
        page = 1
    if pages > 1:
        cols = st.columns([1, 4], vertical_alignment="bottom")
        cols[0].number_input("Table page", min_value=1, max_value=pages, step=1, **state.bind("table_page"))
        page = int(state.get("table_page") or 1)
        first = (page - 1) * PAGE_ROWS + 1
        cols[1].caption(
            f"Rows {first}–{min(page * PAGE_ROWS, total)} of {total}: "
            f"at most {PAGE_ROWS} rows are shown at once; change the page to see the rest."
        )
    return page


def render_table(
    store: RolloutStore,
    step: int,
    choice: FilterChoice,
    text: TextDisplay,
    run: str,
    *,
    kl: F.KLEstimator | None = None,
) -> None:
    scope = None if choice.all_steps else step
    flt: SampleFilter | None = choice.sample_filter
    total, everything = store.count(step=scope, filters=flt), store.count(step=scope)
    where = "in all steps" if scope is None else f"in step {step}"
    st.markdown(f"**{total}** of {everything} samples {where}" + (" match the filters" if flt else ""))

    options = sort_options(store, kl)
    sort = valid_sort(options, kl)
    left, mid, right = st.columns([3, 1.2, 3], vertical_alignment="bottom")
    left.selectbox("Sort by", options, format_func=F.label, **state.bind("sort"))
    mid.toggle("Descending", **state.bind("descending"))
    sort, desc = state.get("sort") or sort, bool(state.get("descending"))
    if total == 0:
        st.info("No sample matches. Loosen the filters or search all steps.")
        return
    page = _page(total)
    columns = table_columns(store, kl)
    frame = store.samples(
        step=scope,
        columns=shown_columns(store, columns),
        sort_by=sort,
        descending=desc,
        filters=flt,
        offset=(page - 1) * PAGE_ROWS,
        limit=PAGE_ROWS,
    )
    pairs = list(zip(frame["step"].tolist(), frame["sample"].tolist(), strict=True))
    st.session_state[_ROWS_KEY] = pairs
    top, tagging = right.columns([1, 1], vertical_alignment="bottom")
    top.button(
        "Open top sample",
        key="open_top",
        icon=":material/open_in_new:",
        on_click=open_sample,
        args=(int(frame["step"].iloc[0]), int(frame["sample"].iloc[0])),
        help="Open the first row of the table as sorted",
    )
    tagging.toggle(
        "Tag rows",
        help="Tick several rows and tag them at once (a click then ticks a row instead of "
        "opening its sample)",
        **state.bind("tag_rows", default=False),
    )
    tags = tag_column(frame)
    frame = with_tags(frame, tags_by_sample(store))
    clip = TRAJECTORY_CELL_CHARS if store.multi_turn else CELL_CHARS
    shown = display_frame(frame, text, show_step=scope is None, max_chars=clip)
    shown[tags] = shown[tags].fillna("")  # an untagged sample: an empty cell, not "None"
    config = _column_config(shown) | {
        tags: st.column_config.TextColumn(
            tags, help="The labels people put on the sample (on the Sample page, or on ticked rows here)"
        )
    }
    order = column_order(list(shown.columns), sort, tags)
    height: Literal["auto"] | int = "auto" if len(shown) <= 12 else 460
    if state.get("tag_rows", False):
        event = st.dataframe(
            shown,
            hide_index=True,
            column_config=config,
            key=tagging_key(pairs),
            column_order=order,
            on_select="rerun",
            selection_mode="multi-row",
            height=height,
        )
        ticked = [pairs[k] for k in event.selection.rows if k < len(pairs)]
        st.caption(
            "Tick the rows to tag (the boxes at their left; the header's box ticks the whole page), then "
            "tag them below. Turn off **Tag rows** to open samples with a click again."
        )
        render_rows_labels(store, ticked)
    else:
        st.dataframe(
            shown,
            hide_index=True,
            column_config=config,
            key=TABLE_KEY,
            column_order=order,
            on_select=_open_selected,
            selection_mode=["single-row", "single-cell"],
            height=height,
        )
        st.caption(
            "Click any cell of a row to open that sample whole. Text cells longer than "
            f"{clip} characters are clipped here; the sample view shows them whole."
        )
    _export_buttons(store, scope, columns, sort, desc, flt, run)


def tagging_key(pairs: list[tuple[int, int]]) -> str:
    """The ticking table's key, new whenever it shows other samples (another step, filter, sort or page):
    ticks stand for rows by position, so they must not carry over to samples the user did not tick."""
    return f"{TAGGING_KEY}.{hashlib.sha1(repr(pairs).encode()).hexdigest()[:12]}"


def _export_buttons(
    store: RolloutStore,
    scope: int | None,
    columns: list[str],
    sort: str,
    desc: bool,
    flt: SampleFilter | None,
    run: str,
) -> None:
    def rows() -> pd.DataFrame:  # with the samples' tags, as `rl-board export` writes them
        frame = store.samples(step=scope, columns=columns, sort_by=sort, descending=desc, filters=flt)
        return with_tags(frame, store.tags_by_sample(api.label_store()))

    a, b, _ = st.columns([1, 1, 3])
    a.download_button(
        "Export CSV",
        data=lambda: api.to_csv_bytes(rows()),
        mime="text/csv",
        file_name=api.export_file_name(run, scope, "csv"),
        on_click="ignore",
        icon=":material/download:",
        key="export_csv",
    )
    b.download_button(
        "Export JSONL",
        data=lambda: api.to_jsonl_bytes(rows()),
        mime="application/jsonl",
        file_name=api.export_file_name(run, scope, "jsonl"),
        on_click="ignore",
        icon=":material/download:",
        key="export_jsonl",
    )
