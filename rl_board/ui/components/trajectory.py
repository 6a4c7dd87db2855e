"""A multi-turn sample as its trajectory: one block per turn, tool calls as cards with their result, and jumps
to the next tool call, the next error and the turn with the highest KL. Model text is shown as text (or, in
the rendered view, as safe Markdown: never HTML or a link); an assistant's text reads at full height.

The focused turn (``turn`` in the URL) picks the page of turns shown and is
marked; a jump moves it, and the token chips' page with it when the turn's
tokens are known. A single-turn sample never comes here
(``conversation.render_conversation`` shows it as before).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import streamlit as st

from rl_board.api import SampleDetail
from rl_board.formats import fields as F
from rl_board.ui import state, turns
from rl_board.ui.components.text_block import LONG_CHARS, READ_HEIGHT, answer_block, text_block
from rl_board.ui.components.token_view import CHIP_PAGE
from rl_board.ui.text import TextDisplay, escape_markdown, shown, visible_bidi

TURN_PAGE = 10
RESULT_PREVIEW = 600
_JUMPED = "_turn_jumped"
_SAMPLE_KEY = "_turn_sample"
FOCUS_CSS = "<style>.st-key-turn_focus{border:2px solid #1f6feb !important;border-radius:0.5rem}</style>"


@dataclass(frozen=True)
class Trajectory:
    """What the view needs of one trajectory, worked out once per run of the page."""

    messages: list[dict[str, Any]]
    parts: list[turns.Segment]
    kl: dict[int, float]  # per-turn mean KL of the chosen estimator (turns with token spans)
    answers: dict[int, tuple[int, int]]  # tool message -> (assistant turn, call index)

    @classmethod
    def of(cls, messages: list[dict[str, Any]], detail: SampleDetail, kl: F.KLEstimator) -> Trajectory:
        mask = detail.tokens["loss_mask"].to_numpy() if "loss_mask" in detail.tokens.columns else None
        parts = turns.segments(messages, len(detail.tokens), mask)
        return cls(
            messages, parts, turns.turn_kl(detail.tokens, parts, kl.token), turns.answered_by(messages)
        )

    def span(self, turn: int) -> turns.Segment | None:
        return next((g for g in self.parts if g.turn == turn), None)

    def result_turn(self, turn: int, call: int) -> int | None:
        return next((j for j, (t, k) in self.answers.items() if (t, k) == (turn, call)), None)


def _focused(count: int, key: tuple) -> int | None:
    """The view's turn if it is one of this trajectory's (a turn of another sample is forgotten)."""
    if st.session_state.get(_SAMPLE_KEY) not in (None, key):
        state.put("turn", None)
        st.session_state.pop(_JUMPED, None)
    st.session_state[_SAMPLE_KEY] = key
    turn = state.get("turn")
    if isinstance(turn, int) and 0 <= turn < count:
        return turn
    if turn is not None:
        state.put("turn", None)
    return None


def _go(traj: Trajectory, turn: int, said: str) -> None:
    """Focus ``turn`` (a button's callback) and bring its tokens' chip page along."""
    state.put("turn", turn)
    st.session_state[_JUMPED] = said
    part = traj.span(turn)
    if part is not None and part.end > part.start:
        state.put("token_page", part.start // CHIP_PAGE + 1)


def _picked(traj: Trajectory) -> None:
    turn = st.session_state.get("turn_pick")
    if isinstance(turn, int):
        _go(traj, turn, f"Turn {turn}.")


def _turn_name(traj: Trajectory, k: int) -> str:
    m = traj.messages[k]
    calls = m.get("tool_calls") or []
    what = f" · {len(calls)} call(s)" if calls else ""
    if m.get("role") == "tool":
        what = f" · {m.get('name') or 'tool'}" + (" · error" if m.get("error") else "")
    return visible_bidi(f"{k} · {m.get('role')}{what}")


def _jumps(traj: Trajectory, current: int | None) -> None:
    messages = traj.messages
    pick, call, error, high = st.columns([3, 1.3, 1.3, 1.5], vertical_alignment="bottom")
    st.session_state["turn_pick"] = current if current is not None else 0
    pick.selectbox(
        "Turn",
        list(range(len(messages))),
        key="turn_pick",
        on_change=_picked,
        args=(traj,),
        format_func=lambda k: _turn_name(traj, k),
        help="Focus a turn: its page of turns is shown",
    )
    nxt = turns.next_after(turns.call_turns(messages), current)
    call.button(
        "Next tool call ▶",
        key="jump_call",
        disabled=nxt is None,
        width="stretch",
        on_click=_go,
        args=(traj, nxt, f"Next tool call: turn {nxt}."),
    )
    bad = turns.next_after(turns.error_turns(messages), current)
    error.button(
        "Next error ▶",
        key="jump_error",
        disabled=bad is None,
        width="stretch",
        on_click=_go,
        args=(traj, bad, f"Next tool error: turn {bad}."),
        help="The next tool result that says the call failed",
    )
    if traj.kl:  # only where the turns' tokens are known
        top = max(traj.kl, key=lambda t: traj.kl[t])
        high.button(
            "Highest-KL turn",
            key="jump_kl",
            width="stretch",
            on_click=_go,
            args=(traj, top, f"Highest KL: turn {top} (mean {traj.kl[top]:.4g} per token)."),
            help="The turn whose tokens drifted furthest from the reference (mean KL per token)",
        )
    if st.session_state.get(_JUMPED):
        st.caption(st.session_state[_JUMPED])


def _pretty(arguments: Any) -> str:
    """Arguments as indented JSON text (text that is not JSON as it is)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return text


def _code(text: str, display: TextDisplay) -> None:
    """A turn's text, a call's arguments or its result as plain text in a box (``text_block``: no code
    viewer, whose script a new tab on a trajectory link would load first)."""
    text_block(shown(text, display).text, height=240)


def _call_card(traj: Trajectory, turn: int, k: int, call: dict[str, Any], display: TextDisplay) -> None:
    with st.container(border=True):
        name = escape_markdown(str(call.get("name") or "(no name)"))
        ident = f" · id {escape_markdown(str(call['id']))}" if call.get("id") else ""
        st.markdown(f":material/build: **{name}**{ident}")
        st.caption("arguments")
        _code(_pretty(call.get("arguments")), display)
        answer = traj.result_turn(turn, k)
        if answer is None:
            st.badge("unanswered", icon=":material/block:", color="orange")
            last = turn == len(traj.messages) - 1
            st.caption(
                "no tool message answers this call: "
                + (
                    "the loop stopped before running it (its turn or tool-call limit)"
                    if last
                    else "the loop ran only some of this turn's calls (verl's "
                    "max_parallel_calls) or the result was not logged"
                )
            )
            return
        result = traj.messages[answer]
        text = str(result.get("content") or "")
        if result.get("error"):
            st.badge(f"error · result in turn {answer}", icon=":material/error:", color="red")
        else:
            st.caption(f"result · turn {answer}")
        clipped = text if len(text) <= RESULT_PREVIEW else text[:RESULT_PREVIEW] + "…"
        _code(clipped, display)
        if len(clipped) < len(text):
            st.caption(f"{len(text)} characters: turn {answer} shows them all")


def _header(traj: Trajectory, k: int, focused: bool) -> str:
    m = traj.messages[k]
    parts = [f"**{escape_markdown(str(m.get('role') or '?'))}**", f"turn {k}"]
    if m.get("role") == "tool":
        parts.append(escape_markdown(str(m.get("name") or "tool")))
        answered = traj.answers.get(k)
        if answered is not None:
            parts.append(f"answers the call in turn {answered[0]}")
    parts.append(f"{len(str(m.get('content') or ''))} characters")
    part = traj.span(k)
    if part is not None:
        parts.append(f"{part.end - part.start} tokens ({part.start}–{part.end})")
        if part.trained is False:
            parts.append("not trained")
    if k in traj.kl:
        parts.append(f"KL {traj.kl[k]:.4g}")
    return ("▶ " if focused else "") + " · ".join(parts)


def _turn(
    traj: Trajectory, k: int, focused: bool, display: TextDisplay, shown_from: int, rendered: bool = False
) -> None:
    """One turn's block; a tool result whose call's card is on this page already shows there in full (unless
    it is the focused turn). An assistant's text reads whole (thinking folded; the last one's final answer
    first), in the rendered view if chosen; tool calls and results stay plain text."""
    m = traj.messages[k]
    with st.container(border=True, key="turn_focus" if focused else f"turn_{k}"):
        failed = " :red-badge[:material/error: error]" if m.get("role") == "tool" and m.get("error") else ""
        st.markdown(_header(traj, k, focused) + failed)
        content = str(m.get("content") or "")
        if m.get("reasoning"):
            with st.expander(
                f"Reasoning · {len(str(m['reasoning']))} characters",
                icon=":material/psychology:",
                expanded=focused and not content,
            ):
                reasoning = shown(str(m["reasoning"]), display).text
                text_block(
                    reasoning, height=None if len(reasoning) <= LONG_CHARS else READ_HEIGHT, rendered=rendered
                )
        call = traj.answers.get(k)
        if call is not None and call[0] >= shown_from and len(content) <= RESULT_PREVIEW and not focused:
            st.caption(f"The result is shown above, in the card of its call (turn {call[0]}).")
        elif m.get("role") == "assistant" and content:
            last = k == max(j for j, x in enumerate(traj.messages) if x.get("role") == "assistant")
            answer_block(shown(content, display).text, rendered=rendered, key=f"turn_text_{k}", final=last)
        elif content or not m.get("tool_calls"):
            if m.get("role") == "tool":
                _code(content, display)
            else:
                text_block(shown(content, display).text, height=240, rendered=rendered)
        for j, call in enumerate(m.get("tool_calls") or ()):
            _call_card(traj, k, j, call, display)


def _summary(traj: Trajectory, finish: Any) -> str:
    messages = traj.messages
    calls = sum(len(m.get("tool_calls") or ()) for m in messages)
    errors = len(turns.error_turns(messages))
    parts = [
        f"**Conversation** · {len(messages)} turns",
        f"{calls} {F.label('n_tool_calls')}",
        f"{errors} {F.label('n_tool_errors')}",
    ]
    if isinstance(finish, str) and finish:
        parts.append(f"{F.label('finish_reason')}: {escape_markdown(finish)}")
    return " · ".join(parts)


def render_trajectory(
    messages: list[dict[str, Any]],
    detail: SampleDetail,
    display: TextDisplay,
    kl: F.KLEstimator,
    run: str | None = None,
    *,
    rendered: bool = False,
) -> None:
    """The trajectory: a summary line, the turn chooser and jumps, and one page of turns with the focused
    one."""
    traj = Trajectory.of(messages, detail, kl)
    current = _focused(len(messages), (run, detail.step, detail.index))
    st.markdown(_summary(traj, detail.fields.get("finish_reason")))
    _jumps(traj, current)
    page = (current or 0) // TURN_PAGE
    pages = (len(messages) + TURN_PAGE - 1) // TURN_PAGE
    first, last = page * TURN_PAGE, min(len(messages), (page + 1) * TURN_PAGE)
    if pages > 1:
        before, where, after = st.columns([1, 4, 1], vertical_alignment="center")
        before.button(
            "◀ Earlier turns",
            key="turns_before",
            disabled=page == 0,
            width="stretch",
            on_click=_go,
            args=(traj, max(0, first - TURN_PAGE), f"Turn {max(0, first - TURN_PAGE)}."),
        )
        after.button(
            "Later turns ▶",
            key="turns_after",
            disabled=last >= len(messages),
            width="stretch",
            on_click=_go,
            args=(traj, last, f"Turn {last}."),
        )
        where.caption(
            f"Turns {first}–{last - 1} of {len(messages)} (page {page + 1} of {pages}); "
            "choose a turn or jump to see others."
        )
    if current is not None:
        st.html(FOCUS_CSS)
    for k in range(first, last):
        _turn(traj, k, k == current, display, first, rendered)
