"""The Patterns page: the failures a run repeats, found before the user reads them one by one.

Families of near-identical answers (a template the policy found to please the reward) with whether they
spread over training, answers that loop a phrase, answers that switch writing systems. Every one of them opens
its samples in the step browser: the filter is set in the view state (so it is in the link) and the step
browser shows them, over all steps or at one step. Families are worked out once per state of the run (the
store keeps them; ``cached`` keeps the tables built from them), never on a rerun.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rl_board import api
from rl_board.api import RolloutStore, SampleFilter
from rl_board.formats import fields as F
from rl_board.ui import cached, state, svg_figures
from rl_board.ui.components import chart
from rl_board.ui.components.filters import clear_filters
from rl_board.ui.components.page import missing
from rl_board.ui.components.sample_table import open_sample
from rl_board.ui.components.selection import clicked_point, clicked_step, selected_item
from rl_board.ui.components.text_block import text_block
from rl_board.ui.context import Context
from rl_board.ui.pattern_charts import shares_figure, signal_figure
from rl_board.ui.text import TextDisplay, shown, visible_bidi, visible_bidi_column

CELL = 200  # characters of an example in the families table
EXAMPLE = 1500  # characters of an answer shown beside the others
MAX_CURVES = 8  # families drawn in the share chart (the largest)
_FAMILIES_KEY, _FAMILY_ROWS = "families_table", "_family_rows"


def number(name: str) -> int:
    """A family's number from its name (``T3`` -> 3): the ``template`` column holds the number."""
    return int(str(name).lstrip("T"))


def open_in_steps(step: int | None, *, sort: str | None = None, **filters: object) -> None:
    """Open the step browser with these filters alone, at ``step`` or (None) over every step."""
    clear_filters()
    state.put_many(sample=None, table_page=1, all_steps=step is None, **filters)
    if step is not None:
        state.put("step", int(step))
    if sort is not None:
        state.put_many(sort=sort, descending=True)
    state.request_page("steps")


def family_table(families: pd.DataFrame, shares: pd.DataFrame) -> pd.DataFrame:
    """The families as the page lists them: size, share, the share per step (a small curve), steps, rewards,
    the start of an example answer."""
    curves = [
        shares[name].round(4).tolist() if name in shares.columns else [] for name in families["template"]
    ]
    return pd.DataFrame(
        {
            "family": families["template"],
            "answers": families["samples"],
            "share": families["share"],
            "share per step": curves,
            "first step": families["first_step"],
            "last step": families["last_step"],
            "mean reward": families["reward_mean"],
            "others' reward": families["reward_rest"],
            "example": visible_bidi_column(families["example"].fillna("").astype(str).str.slice(0, CELL)),
        }
    )


def _choose_family() -> None:
    name = selected_item(_FAMILIES_KEY, _FAMILY_ROWS)
    if name is not None:
        state.put("family", number(name))


def _open_point(key: str, names: list[str]) -> None:
    """A point of the share chart opens its step in the step browser, filtered to its family."""
    point = clicked_point(key)
    if point is not None and point[1] < len(names):
        open_in_steps(int(round(point[0])), template=number(names[point[1]]))


def _open_signal(key: str, column: str) -> None:
    """A bar of a loops or mixed-scripts chart opens its step, filtered to those answers."""
    step = clicked_step(key)
    if step is not None:
        open_in_steps(step, **signal_filter(column))


def signal_filter(column: str) -> dict:
    """The step browser's filter (and sort) for the answers that loop or that mix scripts."""
    if column == "loops":
        return {"repetition__lo": api.LOOP_REPETITION, "sort": "repetition"}
    return {"scripts": "+", "sort": "scripts"}


def _summary(store: RolloutStore, families: pd.DataFrame, signals: pd.DataFrame) -> None:
    total = max(store.num_samples, 1)
    in_families = int(families["samples"].sum()) if not families.empty else 0
    loops, mixed = int(signals["loops"].sum()), int(signals["mixed_scripts"].sum())
    a, b, c, d = st.columns(4)
    a.metric(
        "Template families",
        len(families),
        border=True,
        help=f"Groups of at least {api.MIN_FAMILY} answers ({api.MIN_FAMILY_SHARE:.1%} of the run) that say "
        "nearly the same thing once numbers are masked",
    )
    b.metric("Answers in a family", f"{in_families} ({in_families / total:.1%})", border=True)
    c.metric(
        "Loops",
        f"{loops} ({loops / total:.1%})",
        border=True,
        help=f"Answers whose repetition is at least {api.LOOP_REPETITION:g}. "
        f"{F.known(F.SAMPLE, 'repetition').help}",
    )
    d.metric(
        "Mixed scripts", f"{mixed} ({mixed / total:.1%})", border=True, help=F.known(F.SAMPLE, "scripts").help
    )


def _families(ctx: Context, store: RolloutStore, families: pd.DataFrame, shares: pd.DataFrame) -> None:
    st.subheader("Template families")
    if families.empty:
        st.info(
            f"No family of near-identical answers: no {api.MIN_FAMILY} answers or more "
            f"({api.MIN_FAMILY_SHARE:.1%} of the run) say nearly the same thing.",
            icon=":material/check:",
        )
        return
    names = families["template"].tolist()
    st.session_state[_FAMILY_ROWS] = names
    top = max(0.01, float(shares[[n for n in names if n in shares.columns]].max().max()))
    st.dataframe(
        family_table(families, shares),
        hide_index=True,
        key=_FAMILIES_KEY,
        on_select=_choose_family,
        selection_mode=["single-row", "single-cell"],
        column_config={
            "share": st.column_config.ProgressColumn(
                format="percent", min_value=0, max_value=1, help="Of every answer of the run"
            ),
            "share per step": st.column_config.LineChartColumn(
                y_min=0.0, y_max=top, help="The family's share of each step's answers: rising = spreading"
            ),
            "mean reward": st.column_config.NumberColumn(format="%.4f"),
            "others' reward": st.column_config.NumberColumn(
                format="%.4f", help="Mean reward of the answers of no family"
            ),
            "example": st.column_config.TextColumn(width="large"),
        },
    )
    st.caption(
        "Largest first. Click a row to read the family's answers below and open them in the step browser."
    )
    drawn = names[:MAX_CURVES]
    key = "chart_family_shares"
    chart.show(
        key,
        figure=lambda: shares_figure(shares, drawn),
        svg=lambda: svg_figures.shares_chart(shares, drawn),
        on_select=lambda: _open_point(key, drawn),
    )
    more = f" The {MAX_CURVES} largest of {len(names)} families are drawn." if len(names) > MAX_CURVES else ""
    st.caption(
        chart.click_hint("open that step in the step browser, filtered to the family's answers") + more
    )
    if state.get("family") not in [number(n) for n in names]:
        state.put("family", number(names[0]))
    chosen = families[families["template"] == f"T{state.get('family')}"].iloc[0]
    _family(ctx, store, chosen, shares)


def _family(ctx: Context, store: RolloutStore, family: pd.Series, shares: pd.DataFrame) -> None:
    name, k = str(family["template"]), number(family["template"])
    reward = "" if pd.isna(family["reward_mean"]) else f" · mean reward {family['reward_mean']:.4g}"
    rest = "" if pd.isna(family["reward_rest"]) else f" (the other answers: {family['reward_rest']:.4g})"
    st.markdown(
        f"#### {name} · {int(family['samples'])} answers · {family['share']:.1%} of the run · first seen at "
        f"step {int(family['first_step'])}{reward}{rest}"
    )
    _examples(store, family, ctx.settings.text)
    steps = [int(s) for s in shares.loc[shares[name] > 0, "step"]] if name in shares.columns else []
    everywhere, at, there, _ = st.columns([2, 1, 1, 1], vertical_alignment="bottom")
    everywhere.button(
        f"All {int(family['samples'])} answers of {name} in the step browser",
        key="family_all",
        icon=":material/table_rows:",
        on_click=open_in_steps,
        args=(None,),
        kwargs={"template": k},
    )
    if steps:
        if state.get("step") not in steps:
            state.put("step", int(shares.loc[shares[name].idxmax(), "step"]))
        at.selectbox("At step", steps, **state.bind("step"), help="A step where the family has answers")
        there.button(
            f"Its answers at step {int(state.get('step'))}",
            key="family_at_step",
            icon=":material/filter_alt:",
            on_click=lambda: open_in_steps(int(state.get("step")), template=k),
        )


def examples(store: RolloutStore, family: pd.Series) -> list[tuple[str, int, int]]:
    """Three answers of a family: its representative (closest to its typical reward), the first seen and the
    latest (each as (why, step, sample)), the two others different from the representative."""
    flt = SampleFilter.build(ranges={"template": (float(number(family["template"])),) * 2})
    n = store.count(filters=flt)
    first = store.samples(filters=flt, columns=[], limit=2)
    last = store.samples(filters=flt, columns=[], offset=max(0, n - 2), limit=2).iloc[::-1]
    picked = [("representative", int(family["example_step"]), int(family["example_sample"]))]
    for why, rows in (("first seen", first), ("latest", last)):
        for step, sample in zip(rows["step"], rows["sample"], strict=True):
            if (int(step), int(sample)) not in {(s, i) for _, s, i in picked}:
                picked.append((why, int(step), int(sample)))
                break
    return picked


def _examples(store: RolloutStore, family: pd.Series, display: TextDisplay) -> None:
    picked = examples(store, family)
    for column, (why, step, sample) in zip(st.columns(3), picked, strict=False):
        with column:
            row = store.samples(
                step=step, columns=[c for c in ("response", "reward") if store.has(c)], offset=sample, limit=1
            ).iloc[0]
            reward = f" · reward {row['reward']:.4g}" if "reward" in row and pd.notna(row["reward"]) else ""
            st.markdown(f"**{why.capitalize()}** · step {step} · sample {sample}{reward}")
            _answer(row.get("response"), display)
            st.button(
                "Open sample",
                key=f"family_open_{why.replace(' ', '_')}",
                icon=":material/article:",
                on_click=open_sample,
                args=(step, sample),
            )


def _answer(text: object, display: TextDisplay, *, tail: bool = False) -> None:
    """Model text as text (never Markdown or HTML), clipped; ``tail``: its end (where a loop runs). A text
    box, not ``st.code``: the code viewer's script alone cost a new tab on this page 0.2-0.4 s."""
    value = shown(None if text is None else str(text), display).text
    clipped = ("…" + value[-EXAMPLE:] if tail else value[:EXAMPLE] + "…") if len(value) > EXAMPLE else value
    text_block(clipped, height=220)


def _signal(store: RolloutStore, signals: pd.DataFrame, column: str, display: TextDisplay) -> None:
    """One signal (loops or mixed scripts): its count per step, a link to its answers and the clearest one."""
    total = int(signals[column].sum())
    what = "loops" if column == "loops" else "mixed-script answers"
    if total == 0:
        st.caption(f"No {what} in this run.")
        return
    plot, example = st.columns([3, 2])
    key = f"chart_signal_{column}"
    with plot:
        chart.show(
            key,
            figure=lambda: signal_figure(signals, column),
            svg=lambda: svg_figures.signal_chart(signals, column),
            on_select=lambda: _open_signal(key, column),
        )
        st.button(
            f"All {total} {what} in the step browser",
            key=f"signal_all_{column}",
            icon=":material/table_rows:",
            on_click=lambda: open_in_steps(None, **signal_filter(column)),
        )
        st.caption(chart.click_hint("open that step in the step browser, filtered to them"))
    with example:
        flt = (
            SampleFilter.build(ranges={"repetition": (api.LOOP_REPETITION, None)})
            if column == "loops"
            else SampleFilter.build(contains={"scripts": "+"})
        )
        wanted = [c for c in ("response", "repetition", "scripts") if store.has(c)]
        row = store.samples(
            columns=wanted,
            filters=flt,
            sort_by="repetition" if column == "loops" else None,
            descending=True,
            limit=1,
        ).iloc[0]
        detail = f"repetition {row['repetition']:.2f}" if column == "loops" else f"scripts {row['scripts']}"
        st.markdown(
            f"**{'The most repetitive' if column == 'loops' else 'The first'}** · step {int(row['step'])} · "
            f"sample {int(row['sample'])} · {visible_bidi(detail)}"
        )
        _answer(row.get("response"), display, tail=column == "loops")
        st.button(
            "Open sample",
            key=f"signal_open_{column}",
            icon=":material/article:",
            on_click=open_sample,
            args=(int(row["step"]), int(row["sample"])),
        )


def render_patterns(ctx: Context) -> None:
    store = ctx.run_store
    if not store.has("response"):
        missing("No answers", "this run logs no response text to look for patterns in.")
        return
    families = cached.ask(store, "pattern_families")
    # at once when the families were found: the cached table may outlive a reopened store
    store.find_templates()
    shares = cached.ask(store, "family_shares")
    signals = cached.ask(store, "signals_by_step")
    _summary(store, families, signals)
    _families(ctx, store, families, shares)
    st.subheader("Loops")
    _signal(store, signals, "loops", ctx.settings.text)
    st.subheader("Mixed scripts")
    _signal(store, signals, "mixed_scripts", ctx.settings.text)
