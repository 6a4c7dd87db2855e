"""Labels on samples: the tags (and notes) people put on what they read ("reward hack", "loop", "good").

One set of controls serves the Sample page (tag this sample, see and remove its tags) and the step browser
(tag the selected rows at once); the step browser's ``tags`` column and tag filter read the same cached
table. Labels are kept in the labels file of the configuration (``api.label_store()``: $RL_BOARD_LABELS,
``serve --labels``, else the user's data folder), never beside the logs. Tag and note text is the user's and
as untrusted as model text: it is shown as text (escaped where Markdown would read it), never as markup.
A refused tag or note (empty, too long) or an unusable labels file is a message, never a traceback.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rl_board import api
from rl_board.api import RolloutStore
from rl_board.errors import RLBoardError
from rl_board.ui import cached
from rl_board.ui.text import escape_markdown

TAGS = "tags"
OWN_TAGS = "labels"  # our column's name when the log has a "tags" field of its own
_SAID = "_labels_said."


def run_labels(store: RolloutStore) -> pd.DataFrame:
    """Every label of the run on the sample it is on now, read from the file once per change: the question's
    cache key holds the file's version for the run, which changes with every label added, removed or noted (by
    this app, another tab or the CLI)."""
    return cached.ask(store, "labels", labels_file=str(api.label_store().path))


def tags_by_sample(store: RolloutStore) -> pd.DataFrame:
    """``step, sample, tags`` of every labelled sample of the run (cached as ``run_labels``)."""
    return cached.ask(store, "tags_by_sample", labels_file=str(api.label_store().path))


def tags_in_run(store: RolloutStore) -> list[str]:
    """The tags the run's samples carry, sorted (what the tag filter offers)."""
    frame = run_labels(store).dropna(subset=["sample"])
    return sorted(set(frame["tag"]))


def tagged(store: RolloutStore, tag: str) -> list[tuple[int, int]]:
    """(step, sample) of every sample of the run carrying ``tag``."""
    frame = run_labels(store).dropna(subset=["sample"])
    frame = frame[frame["tag"] == tag]
    return [(int(s), int(i)) for s, i in zip(frame["step"], frame["sample"], strict=True)]


def tag_column(frame: pd.DataFrame) -> str:
    """The name the table gives the samples' tags (``tags``, unless the log already has a field of that
    name)."""
    return OWN_TAGS if TAGS in frame.columns else TAGS


def with_tags(frame: pd.DataFrame, tags: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (step and sample columns) with each sample's tags (``tags``: ``tags_by_sample``'s table),
    comma-joined (None for none)."""
    name = tag_column(frame)
    if tags.empty:
        return frame.assign(**{name: pd.Series([None] * len(frame), index=frame.index, dtype=object)})
    lookup = {(int(s), int(i)): t for s, i, t in zip(tags["step"], tags["sample"], tags["tags"], strict=True)}
    values = [lookup.get((int(s), int(i))) for s, i in zip(frame["step"], frame["sample"], strict=True)]
    return frame.assign(**{name: pd.Series(values, index=frame.index, dtype=object)})


# -- the controls -------------------------------------------------------------------------------------------


def _say(prefix: str, kind: str, text: str) -> None:
    st.session_state[_SAID + prefix] = (kind, text)


def _show_said(prefix: str) -> None:
    """The outcome of the last click (kept across the rerun it caused), shown once."""
    said = st.session_state.pop(_SAID + prefix, None)
    if said is None:
        return
    kind, text = said
    if kind == "error":
        st.error(escape_markdown(text), icon=":material/error:")
    else:
        st.success(escape_markdown(text), icon=":material/label:")


MAX_PICKS = 16  # tags offered as one-click suggestions (the suggested ones, then the run's)


def _pick(prefix: str) -> None:
    """A suggestion clicked: it becomes the tag (and can still be edited)."""
    picked = st.session_state.get(f"{prefix}_pick")
    if picked:
        st.session_state[f"{prefix}_tag"] = picked
    st.session_state[f"{prefix}_pick"] = None


def _inputs(store: RolloutStore, prefix: str) -> None:
    """A tag (typed, or one of the suggestions and the run's tags, clicked) and an optional note."""
    left, right = st.columns([2, 3])
    left.text_input(
        "Tag",
        key=f"{prefix}_tag",
        placeholder="type a tag, or click one below",
        help=f"Free text, at most {api.MAX_TAG} characters.",
    )
    right.text_area(
        "Note (optional)",
        key=f"{prefix}_note",
        height=68,
        placeholder="Why: what you saw",
        help=f"Free text, at most {api.MAX_NOTE} characters; kept with the tag.",
    )
    st.pills(
        "Suggested tags",
        api.label_store().tags(store.source)[:MAX_PICKS],
        key=f"{prefix}_pick",
        format_func=escape_markdown,
        on_change=_pick,
        args=(prefix,),  # pills read Markdown: a tag is text
        label_visibility="collapsed",
    )


def _keys(store: RolloutStore, pairs: list[tuple[int, int]]) -> list[dict]:
    return [store.label_key(step=int(step), index=int(index)) for step, index in pairs]


def _apply(
    store: RolloutStore, pairs: list[tuple[int, int]], prefix: str, remove: bool, keep_tag: bool = True
) -> None:
    """Put the typed tag on (or take it off) the samples; the outcome is said on the next run (``keep_tag``:
    the tag stays chosen for the next rows)."""
    tag = st.session_state.get(f"{prefix}_tag") or ""
    note = st.session_state.get(f"{prefix}_note") or None
    labels = api.label_store()
    try:
        keys = _keys(store, pairs)
        done = labels.remove_many(keys, tag=tag) if remove else labels.put_many(keys, tag=tag, note=note)
    except RLBoardError as exc:
        _say(prefix, "error", f"Not saved: {exc}.")
        return
    shown = " ".join(tag.split())
    if remove:
        _say(prefix, "ok", f"Removed “{shown}” from {done} of {len(pairs)} sample(s).")
    else:
        _say(prefix, "ok", f"Tagged {done} sample(s) “{shown}”.")
        st.session_state[f"{prefix}_note"] = ""
        if not keep_tag:
            st.session_state[f"{prefix}_tag"] = ""


def _remove_one(store: RolloutStore, step: int, index: int, tag: str, prefix: str) -> None:
    try:
        api.label_store().remove_many(_keys(store, [(step, index)]), tag=tag)
    except RLBoardError as exc:
        _say(prefix, "error", f"Not removed: {exc}.")


def render_sample_labels(store: RolloutStore, step: int, index: int) -> None:
    """The Sample page's labels: the sample's tags with their notes (each removable), and a tag to add."""
    prefix = "sample_label"
    key = store.label_key(step=step, index=index)
    found = api.label_store().of_sample(**key)
    with st.container(border=True, key="sample_labels"):
        head, opener = st.columns([5, 2], vertical_alignment="center")
        head.markdown(
            "**Labels**" if found else "**Labels** · none yet",
            help="Tags and notes on this sample, kept in the server's labels file (not beside the logs): "
            "the step browser filters by them, `rl-board labels RUN` lists them.",
        )
        # the inputs are drawn only when asked for: they cost every sample page a fifth of a second in the
        # browser
        opener.toggle(
            "Add a label",
            key=f"{prefix}_open",
            help="Show the tag and note inputs (they stay open from sample to sample until turned off).",
        )
        for k, label in enumerate(found):
            name, note, button = st.columns([3, 8, 2], vertical_alignment="center")
            name.markdown(f":material/label: **{escape_markdown(label.tag)}**")
            if label.note:  # the user's text: shown as itself (Markdown escaped, bidi controls shown)
                note.caption(escape_markdown(label.note))
            button.button(
                "Remove",
                key=f"label_remove_{k}",
                icon=":material/close:",
                on_click=_remove_one,
                width="stretch",
                args=(store, step, index, label.tag, prefix),
                help="Take this tag off the sample",
            )
        if st.session_state.get(f"{prefix}_open"):
            _inputs(store, prefix)
            st.button(
                "Add label",
                key="label_add",
                icon=":material/new_label:",
                on_click=_apply,
                args=(store, [(step, index)], prefix, False, False),
            )
        _show_said(prefix)


def render_rows_labels(store: RolloutStore, pairs: list[tuple[int, int]]) -> None:
    """The step browser's bar under the table: tag the selected rows (or take a tag off them) at once."""
    prefix = "rows_label"
    with st.container(border=True, key="rows_labels"):
        st.markdown(
            f"**Tag the selected rows** · {len(pairs)} selected"
            if pairs
            else "**Tag the selected rows** · tick rows in the table (the boxes at their left) first"
        )
        _inputs(store, prefix)
        add, remove, _ = st.columns([1, 1, 2])
        add.button(
            f"Tag {len(pairs)} row(s)",
            key="rows_label_add",
            icon=":material/new_label:",
            disabled=not pairs,
            on_click=_apply,
            args=(store, pairs, prefix, False),
        )
        remove.button(
            "Remove this tag from them",
            key="rows_label_remove",
            icon=":material/label_off:",
            disabled=not pairs,
            on_click=_apply,
            args=(store, pairs, prefix, True),
        )
        _show_said(prefix)
