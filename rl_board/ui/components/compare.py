"""Run comparison: the chosen runs' step curves drawn over the current run's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from rl_board.api import relative_to_roots
from rl_board.formats import fields as F
from rl_board.ui import cached, charts, state, svg_figures
from rl_board.ui.components import chart
from rl_board.ui.components.curves import kl_title
from rl_board.ui.components.sidebar import open_run
from rl_board.ui.context import Context
from rl_board.ui.text import display_name, escape_markdown


def _run_paths(ctx: Context) -> dict[str, Path]:
    runs = ctx.runs
    if not isinstance(runs, pd.DataFrame):
        return {}
    return {relative_to_roots(Path(p), ctx.roots): Path(p) for p in runs["path"]}


def _valid_choice(others: list[str]) -> list[str]:
    wanted = list(state.get("compare") or [])
    valid = [name for name in wanted if name in others]
    if len(valid) < len(wanted):
        gone = ", ".join(escape_markdown(repr(n[:100])) for n in wanted if n not in valid)
        st.warning(f"Not comparing {gone}: no such other run under the logs root.")
    state.put("compare", valid)
    return valid


def _summaries(ctx: Context, chosen: list[str], paths: dict[str, Path]) -> dict[str, pd.DataFrame]:
    out = {ctx.run or "run": cached.ask(ctx.run_store, "step_summary")}
    for name in chosen:
        out[name] = cached.ask(open_run(paths[name], name), "step_summary")
    return out


def _draw(summaries: dict[str, pd.DataFrame], kl: F.KLEstimator, options: charts.CurveOptions) -> None:
    def figure(prefix: str, title: str, y_title: str, wide: bool = False) -> None:
        lacking = [n for n, s in summaries.items() if not charts.has_series(s, prefix)]
        if len(lacking) == len(summaries):
            return
        width = svg_figures.WIDE if wide else svg_figures.HALF
        chart.show(
            f"chart_compare_{prefix}",
            figure=lambda: charts.comparison_figure(
                summaries, prefix, title=title, y_title=y_title, options=options
            ),
            svg=lambda: svg_figures.comparison_chart(
                summaries, prefix, title=title, y_title=y_title, options=options, width=width
            ),
        )
        if lacking:
            st.caption("Not in: " + ", ".join(escape_markdown(n) for n in lacking))

    figure("reward", "Reward per step, by run", "reward", wide=True)
    left, right = st.columns(2)
    with left:
        figure(kl.step, kl_title(kl, "per step, by run"), f"KL ({kl.name})")
    with right:
        tokens = all(charts.has_series(s, "length") for s in summaries.values())
        figure(
            "length" if tokens else "length_chars",
            "Response length per step, by run",
            "tokens" if tokens else "characters",
        )


def render_comparison(ctx: Context) -> None:
    """An expander to pick other runs under the logs root and compare their curves with this one."""
    paths = _run_paths(ctx)
    others = [name for name in paths if name != ctx.run]
    if not others:
        return
    valid = _valid_choice(others)
    with st.expander("Compare runs", expanded=bool(valid), icon=":material/compare_arrows:"):
        label = f"Compare {escape_markdown(ctx.run or 'this run')} with"  # a widget label is Markdown
        st.multiselect(
            label,
            others,
            format_func=display_name,
            placeholder="Choose runs to overlay",
            **state.bind("compare"),
        )
        chosen = [n for n in state.get("compare") or [] if n in others]
        if chosen:
            _draw(_summaries(ctx, chosen, paths), ctx.settings.kl, ctx.settings.curves)
