"""Token view: coloured chips with every metric on hover, the top tokens, and the token × metric heatmap."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from rl_board.api import SampleDetail, parsed_messages
from rl_board.formats import fields as F
from rl_board.ui import charts, heat_grid, state, turns
from rl_board.ui.boundary import boundary
from rl_board.ui.chips import (
    chips_html,
    diverging,
    legend_html,
    scale_for,
    turn_chips_html,
)
from rl_board.ui.components import chart
from rl_board.ui.components.page import missing
from rl_board.ui.text import TextDisplay, escape_markdown, token_label
from rl_board.ui.token_heatmap import WRAP_FROM, mark_turns, turn_wrapped_figure, wrapped_heatmap_figure

TOP_TOKENS = 10
CHIP_PAGE = 500
TABLE_EXPANDER = "token_table_open"
_FOUND = "_token_found"
# jump target -> (metric, highest?)
JUMPS = {
    "highest KL": ("kl", True),
    "lowest log-prob": ("logp", False),
    "largest log-ratio": ("log_ratio", True),
    "highest entropy": ("entropy", True),
    "largest mismatch": ("mismatch", True),
}


def present_metrics(tokens: pd.DataFrame) -> list[str]:
    return [f.name for f in F.at(F.TOKEN) if f.name in tokens.columns and tokens[f.name].notna().any()]


def colour_metrics(metrics: list[str], kl: F.KLEstimator) -> list[str]:
    """The metrics to colour by: KL is the chosen estimator's (the other estimators' KL columns are left out;
    the log-ratio, k1, always stays)."""
    return [m for m in metrics if F.as_kl(m, kl) == m or m == kl.token]


def valid_metric(metrics: list[str], kl: F.KLEstimator) -> str:
    """The token metric of the view state; a KL one follows the chosen estimator (``kl`` -> ``kl_k2``)."""
    wanted = state.get("token_metric")
    if isinstance(wanted, str):
        wanted = F.as_kl(wanted, kl)
    if wanted in metrics:
        state.put("token_metric", wanted)
        return wanted
    fallback = kl.token if kl.token in metrics else metrics[0]
    if wanted != kl.token:  # KL is the default; only a chosen metric deserves a message
        st.warning(
            f"Token metric {escape_markdown(repr(wanted))} is not available for this sample; "
            f"showing {fallback}."
        )
    state.put("token_metric", fallback)
    return fallback


def mismatch_note(detail: SampleDetail) -> str:
    """Why token metrics stop short; for a sample with a ``length_mismatch`` (both counts known)."""
    n_tok, n_lp = detail.n_tokens, detail.n_logprobs
    if n_tok is None or n_lp is None:
        raise ValueError("a token/log-prob mismatch needs both counts")
    extra = n_tok - n_lp if n_tok > n_lp else 0
    tail = ""
    if extra:
        tokens = (detail.fields.get("response_tokens") or [])[-extra:]
        tail = " The last token(s) without a log-prob: " + escape_markdown(
            ", ".join(repr(token_label(t)) for t in tokens[:5])
        )
    return (
        f"This sample has {n_tok} tokens but {n_lp} log-probs: token metrics cover the first "
        f"{min(n_tok, n_lp)} tokens.{tail}"
    )


def top_tokens(tokens: pd.DataFrame, metric: str, n: int = TOP_TOKENS) -> pd.DataFrame:
    """The tokens that carry the most of ``metric`` (largest magnitude for signed metrics)."""
    values = tokens[metric].to_numpy(dtype=np.float64)
    key = np.abs(values) if diverging(metric) else values
    order = np.argsort(np.where(np.isfinite(key), -key, np.inf), kind="stable")[:n]
    picked = tokens.iloc[order]
    return pd.DataFrame(
        {
            "position": picked.index.to_numpy(),
            "token": [token_label(t) for t in picked["token"].astype(str)],
            metric: picked[metric].to_numpy(),
        }
    )


def _token_table(tokens: pd.DataFrame, metrics: list[str], metric: str) -> None:
    """Every token with every metric as numbers; sort by clicking a header; the chosen metric as bars.

    A long answer's table (thousands of rows, most of the page's bytes) is built only while its
    expander is open; a short one's is always there.
    """
    label = "Token table (all metrics; click a header to sort)"
    if len(tokens) < WRAP_FROM:
        expander = st.expander(label, icon=":material/table:")
    else:
        expander = st.expander(
            f"{label} · {len(tokens)} rows, built when opened",
            icon=":material/table:",
            key=TABLE_EXPANDER,
            on_change="rerun",
        )
        if not expander.open:
            return
    with expander:
        frame = tokens[metrics].copy()
        frame.insert(0, "token", [token_label(t) for t in tokens["token"].astype(str)])
        frame.insert(0, "position", tokens.index.to_numpy())
        config = {m: st.column_config.NumberColumn(F.label(m, F.TOKEN), format="%.4g") for m in metrics}
        values = frame[metric].to_numpy(dtype=np.float64)
        finite = values[np.isfinite(values)]
        if len(finite) and finite.max() > finite.min():
            config[metric] = st.column_config.ProgressColumn(
                F.label(metric, F.TOKEN),
                format="%.4g",
                min_value=float(finite.min()),
                max_value=float(finite.max()),
            )
        st.dataframe(frame, hide_index=True, column_config=config, height=min(420, 38 + 35 * len(frame)))


def _chip_page(tokens: pd.DataFrame, kl: F.KLEstimator) -> pd.DataFrame:
    """The tokens drawn as chips: all of a short response, a page of a long one (found by position or
    text)."""
    if len(tokens) <= CHIP_PAGE:
        return tokens
    pages = math.ceil(len(tokens) / CHIP_PAGE)
    a, b, c = st.columns([1, 2, 2], vertical_alignment="bottom")
    b.text_input(
        "Find in the response's tokens",
        placeholder="text in a token",
        key="token_find",
        on_change=_find,
        args=(tokens,),
    )
    with c:
        st.caption("Jump to the token with the")
        for k, (name, (column, highest)) in enumerate(JUMPS.items()):
            column = F.as_kl(column, kl)
            if column in tokens.columns and np.isfinite(tokens[column].to_numpy(dtype=np.float64)).any():
                st.button(name, key=f"token_jump_{k}", on_click=_jump, args=(tokens, column, highest))
    if st.session_state.get(_FOUND):
        st.caption(st.session_state[_FOUND])
    if not 1 <= (state.get("token_page") or 1) <= pages:
        state.put("token_page", 1)
    a.number_input(
        f"Token page (of {pages})", min_value=1, max_value=pages, step=1, **state.bind("token_page")
    )
    start = ((state.get("token_page") or 1) - 1) * CHIP_PAGE
    return tokens.iloc[start : start + CHIP_PAGE]


def _find(tokens: pd.DataFrame) -> None:
    """Go to the page of the first token containing the searched text (a widget callback)."""
    text = (st.session_state.get("token_find") or "").strip()
    if not text:
        st.session_state.pop(_FOUND, None)
        return
    hits = np.flatnonzero(tokens["token"].astype(str).str.contains(text, case=False, regex=False).to_numpy())
    where = f"; the first at position {int(tokens.index[hits[0]])}" if len(hits) else ""
    st.session_state[_FOUND] = f"{len(hits)} token(s) contain {escape_markdown(repr(text[:40]))}{where}"
    if len(hits):
        state.put("token_page", int(hits[0]) // CHIP_PAGE + 1)


def _jump(tokens: pd.DataFrame, column: str, highest: bool) -> None:
    values = tokens[column].to_numpy(dtype=np.float64)
    pos = int(np.nanargmax(values) if highest else np.nanargmin(values))
    st.session_state[_FOUND] = (
        f"{F.label(column, F.TOKEN)}: the extreme is at position {int(tokens.index[pos])}"
    )
    state.put("token_page", pos // CHIP_PAGE + 1)


def render_token_view(detail: SampleDetail, display: TextDisplay, kl: F.KLEstimator | None = None) -> None:
    """The token view as a fragment: a colour, a token page, a find or a jump reruns only this part
    (not the sidebar, the texts and the scores above it). KL is ``kl``'s estimate (default k3)."""
    _token_fragment(detail, display, kl or F.kl_estimator())


@st.fragment
def _token_fragment(detail: SampleDetail, display: TextDisplay, kl: F.KLEstimator) -> None:
    with boundary():  # a fragment's rerun does not pass through the router's boundary
        _token_view(detail, display, kl)
    state.write_url()  # nor through its URL update: keep the link current


def _token_view(detail: SampleDetail, display: TextDisplay, kl: F.KLEstimator) -> None:
    st.subheader("Tokens")
    tokens = detail.tokens
    if detail.n_tokens is None and detail.n_logprobs is None:
        missing("No token view", "this run has no response_tokens or logprobs (e.g. an evaluation log).")
        return
    if detail.length_mismatch:
        st.warning(mismatch_note(detail), icon=":material/rule:")
    if detail.tokens_from == "ids":
        st.info(
            "This log holds token ids, not token text: they are shown as #id. Start the server with "
            "`rl-board serve ROOT --tokenizer PATH` (a tokenizer.json or a local model folder) to see "
            "the text of each token.",
            icon=":material/translate:",
        )
    elif detail.tokens_from == "tokenizer":
        st.caption("Token text decoded from the log's token ids with the server's tokenizer.")
    metrics = present_metrics(tokens)
    hidden = [t for t in display.pad_tokens if t]
    shown = tokens[~tokens["token"].isin(hidden)] if hidden else tokens
    if len(shown) < len(tokens):
        st.caption(f"{len(tokens) - len(shown)} pad token(s) hidden (sidebar › Display settings).")
    if not metrics:
        missing("No per-token metrics", "this sample has tokens but no log-probs, values or token rewards.")
        st.html(chips_html(shown, kl.token))
        return
    options = colour_metrics(metrics, kl)
    metric = valid_metric(options, kl)
    parts = turns.of_sample(parsed_messages(detail.fields.get("messages")), tokens)
    split = turns.groups(shown, parts)
    untrained = turns.untrained(shown, parts) if split else None
    left, right = st.columns([3, 1])
    with left:
        st.segmented_control(
            "Colour tokens by",
            options,
            format_func=lambda m: F.known(F.TOKEN, m).brief,
            required=True,
            **state.bind("token_metric"),
        )
        metric = state.get("token_metric") or metric
        page = _chip_page(shown, kl)
        scale = scale_for(shown[metric].tolist(), metric)
        if split and untrained is not None:  # a trajectory: a line per turn, untrained tokens struck through
            at = shown.index.get_indexer(page.index)
            body = turn_chips_html(
                page,
                metric,
                [(label, page.iloc[s:e], untrained[at[s:e]]) for label, s, e in turns.groups(page, parts)],
                scale,
            )
        else:
            body = chips_html(page, metric)
        st.html(legend_html(scale, metric) + body)
        st.caption(
            "Hover a token to see all its metrics."
            + (
                f" Tokens {int(page.index[0])}–{int(page.index[-1])} of {len(shown)} are drawn; the heatmap "
                "below shows them all."
                if len(page) < len(shown)
                else ""
            )
        )
    with right:
        label = F.label(metric, F.TOKEN)
        st.markdown(f"**Top tokens by {label}**")
        st.dataframe(
            top_tokens(shown, metric),
            hide_index=True,
            column_config={metric: st.column_config.NumberColumn(format="%.4g")},
        )
    _token_table(shown, metrics, metric)
    _heatmap(shown, metrics, options, metric, split, untrained)


def _heatmap(
    shown: pd.DataFrame,
    metrics: list[str],
    options: list[str],
    metric: str,
    split: list[tuple[str, int, int]],
    untrained: np.ndarray | None,
) -> None:
    """Every token's value as a grid of cells drawn with the page (no chart script to load: a new tab on a
    sample link shows it with the text); the Plotly heatmap (zoom, the token's text on hover) with the
    sidebar's shared "Interactive charts" setting."""
    interactive = chart.interactive()
    if not interactive:
        st.caption(
            f"For zoom and each token's text on hover, switch on **{chart.LABEL}** in the sidebar "
            "(a Plotly heatmap)."
        )
    if len(shown) >= WRAP_FROM:  # long responses: every token a cell, wrapped like text (a turn per block)
        if not interactive:
            st.html(heat_grid.wrapped_grid_html(shown, metric, groups=split, untrained=untrained))
            return
        figure = (
            turn_wrapped_figure(shown, metric, split, untrained)
            if split and untrained is not None
            else wrapped_heatmap_figure(shown, metric)
        )
        st.plotly_chart(figure, key="chart_heatmap", config=chart.PLOT_CONFIG)
        return
    chosen = st.multiselect(
        "Heatmap rows",
        metrics,
        default=options,
        key="heatmap_rows",
        format_func=lambda m: F.label(m, F.TOKEN),
    )
    if not chosen:
        return
    if not interactive:
        st.html(heat_grid.metric_rows_html(shown, chosen, groups=split, untrained=untrained))
        return
    figure = charts.token_heatmap_figure(shown, chosen)
    if split and untrained is not None:
        mark_turns(figure, shown, split, untrained)
    st.plotly_chart(figure, key="chart_heatmap", config=chart.PLOT_CONFIG)
