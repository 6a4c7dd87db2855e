"""One sample: navigation, scores, its labels, its texts to read, other fields, tokens.

The response is what people come to read (and where reward hacking shows), so it takes the main column: the
prompt sits above it in a compact box, the ground truth and reference response in a narrow column beside it,
only when the log has them. The response reads at its whole height, its final line first and its
``<think>`` part folded; the rendered view (Markdown, LaTeX, code; ``rendered`` in the URL) is shared with the
conversation and trajectory turns."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import streamlit as st

from rl_board.api import RolloutStore, SampleDetail, parsed_messages, sample_turns
from rl_board.formats import fields as F
from rl_board.ui import cached, state, turns
from rl_board.ui.components.conversation import render_conversation
from rl_board.ui.components.labels import render_sample_labels
from rl_board.ui.components.step_picker import valid_step
from rl_board.ui.components.text_block import RENDERED_HELP, answer_block, text_block
from rl_board.ui.components.token_view import render_token_view
from rl_board.ui.components.trajectory import render_trajectory
from rl_board.ui.context import Context
from rl_board.ui.text import (
    ShownText,
    TextDisplay,
    display_name,
    escape_markdown,
    shown,
    visible_bidi_column,
)

TEXTS = tuple(F.known(F.SAMPLE, name) for name in ("prompt", "response", "ref_response", "ground_truth"))
SCORES = tuple(f for f in F.at(F.SAMPLE) if f.score)
_KL_SCORES = frozenset(name for e in F.KL_ESTIMATORS for name in (e.mean, e.sum))  # one estimator's are shown
PROMPT_HEIGHT = 200  # px: a long prompt scrolls in a compact box above the response
SIDE_HEIGHT = 480  # px: a long reference response scrolls in the column beside it
SIDE = ("ground_truth", "ref_response")
_TITLES = {f.name: f.title for f in TEXTS}


def valid_sample(count: int) -> int:
    wanted = state.get("sample")
    if isinstance(wanted, int) and 0 <= wanted < count:
        return wanted
    if wanted is not None:
        st.warning(f"Sample {wanted} is not in this step (samples 0–{count - 1}); showing sample 0.")
    state.put("sample", 0)
    return 0


def neighbour(counts: dict[int, int], step: int, index: int, delta: int) -> tuple[int, int] | None:
    """The sample before/after (step, index), crossing into the previous/next step; None at the ends."""
    steps = sorted(counts)
    index += delta
    pos = steps.index(step)
    while not 0 <= index < counts[steps[pos]]:
        pos += delta
        if not 0 <= pos < len(steps):
            return None
        index = 0 if delta > 0 else counts[steps[pos]] - 1
    return steps[pos], index


def _go(target: tuple[int, int]) -> None:
    state.put_many(step=target[0], sample=target[1])


def _step_changed() -> None:
    state.put("sample", 0)


def _navigation(store: RolloutStore, step: int, index: int) -> None:
    counts = store.samples_per_step()
    before, after = neighbour(counts, step, index, -1), neighbour(counts, step, index, 1)
    prev_col, step_col, sample_col, next_col = st.columns([1, 3, 3, 1], vertical_alignment="bottom")
    prev_col.button(
        "◀ Prev",
        key="sample_prev",
        disabled=before is None,
        width="stretch",
        on_click=_go,
        args=(before,),
        help="Previous sample (crosses into the previous step)",
    )
    next_col.button(
        "Next ▶",
        key="sample_next",
        disabled=after is None,
        width="stretch",
        on_click=_go,
        args=(after,),
        help="Next sample (crosses into the next step)",
    )
    step_col.selectbox("Step", store.steps, **state.bind("step", _step_changed))
    sample_col.number_input(
        f"Sample (0–{counts[step] - 1})",
        min_value=0,
        max_value=counts[step] - 1,
        step=1,
        **state.bind("sample"),
    )


def _number(value: Any) -> float | None:  # anything float() takes; None for the rest
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _scores(fields: dict, parts: list[str], kl: F.KLEstimator) -> None:
    """The sample's scores: the catalogue's (KL as ``kl`` estimates it), then the run's reward components and
    advantage."""
    values = [
        (f.title, _number(fields.get(f.name)))
        for f in SCORES
        if f.name not in _KL_SCORES or f.name in (kl.mean, kl.sum)
    ]
    values += [(name, _number(fields.get(name))) for name in parts]
    values = [(label, v) for label, v in values if v is not None]
    per_row = 5
    for start in range(0, len(values), per_row):
        cols = st.columns(per_row)
        for col, (label, value) in zip(cols, values[start : start + per_row], strict=False):
            # a reward component's name comes from the log: Markdown in it must show as text
            col.metric(escape_markdown(label, word_underscores=True), f"{value:.4g}", border=True)


def _heading(title: str, text: ShownText) -> str:
    return " · ".join([f"**{title}**", f"{len(text.text)} characters"] + ([text.note] if text.note else []))


def _response(fields: dict, display: TextDisplay, rendered: bool) -> None:
    with st.container(key="sample_response"):
        text = shown(fields["response"], display)
        st.markdown(_heading(_TITLES["response"], text))
        answer_block(text.text, rendered=rendered, key="response")


def _texts(fields: dict, display: TextDisplay, rendered: bool) -> None:
    """The prompt in a compact box, then the response in the main column beside the ground truth and the
    reference response (a column only when the log has one of them)."""
    if fields.get("prompt") is not None:
        prompt = shown(fields["prompt"], display)
        st.markdown(_heading(_TITLES["prompt"], prompt))
        text_block(prompt.text, height=PROMPT_HEIGHT, rendered=rendered)
    side = [name for name in SIDE if fields.get(name) is not None]
    if fields.get("response") is None:  # a conversation's answer is in its messages
        main, beside = None, st.container()
    elif side:
        main, beside = st.columns([3, 1], gap="medium")
    else:
        main, beside = st.container(), None
    if main is not None:
        with main:
            _response(fields, display, rendered)
    if beside is None:
        return
    with beside:
        for name in side:
            text = shown(fields[name], display)
            st.markdown(_heading(_TITLES[name], text))
            text_block(text.text, height=SIDE_HEIGHT, rendered=rendered)


def _turns_of_text(fields: dict) -> None:
    """The turns of a sample kept as its text, as the turn table counts them."""
    told = sample_turns(fields.get("prompt"), fields.get("response"), None)
    roles = ", ".join(escape_markdown(str(m.get("role"))) for m in told)
    st.caption(f"**Trajectory** · {len(told)} turns ({roles}), told from the text")


def _other_fields(detail: SampleDetail) -> None:
    skip = {f.name for f in F.at(F.SAMPLE) if f.source}
    rows = [(k, v) for k, v in detail.fields.items() if k not in skip and k != "step" and v is not None]
    with st.expander(f"Other fields ({len(rows)}) · source {escape_markdown(detail.file)}:{detail.line}"):
        values = pd.Series(["" if v is None else str(v)[:2000] for _, v in rows], dtype=object)
        names = [display_name(k) for k, _ in rows]
        frame = pd.DataFrame({"field": names, "value": visible_bidi_column(values)})
        st.dataframe(frame, hide_index=True)


def render_sample(ctx: Context) -> None:
    store = ctx.run_store
    step = valid_step(store.steps)
    index = valid_sample(store.samples_per_step()[step])
    _navigation(store, step, index)
    step, index = int(state.get("step")), int(state.get("sample") or 0)
    detail = store.sample(step=step, index=index, tokenizer=cached.tokenizer())
    st.markdown(f"#### Step {step} · sample {index}")
    parts = store.reward_components + [c for c in ("advantage",) if c in store.numeric_extras]
    _scores(detail.fields, parts, ctx.settings.kl)
    render_sample_labels(store, step, index)
    rendered = st.toggle("Rendered view", help=RENDERED_HELP, **state.bind("rendered"))
    messages = parsed_messages(detail.fields.get("messages"))
    if turns.is_trajectory(messages):
        render_trajectory(messages, detail, ctx.settings.text, ctx.settings.kl, ctx.run, rendered=rendered)
        texts = st.expander(
            "Prompt, response and ground truth as text (the turns joined), built when opened",
            icon=":material/notes:",
            key="texts_open",
            on_change="rerun",
        )
        if texts.open:  # every turn again, twice: only drawn when asked for
            with texts:
                _texts(detail.fields, ctx.settings.text, rendered)
    else:
        if messages is not None:
            render_conversation(messages, ctx.settings.text, rendered=rendered)
        else:
            _turns_of_text(detail.fields)
        _texts(detail.fields, ctx.settings.text, rendered)
    _other_fields(detail)
    render_token_view(detail, ctx.settings.text, ctx.settings.kl)
