"""The view state of a session and its mirror in the URL.

The state (run, step, sample, sort, filters, token metric, table page...) lives
in ``st.session_state`` under ``view.<name>`` keys, so it survives page
switches (widgets are dropped when their page is not shown). It is read from
the URL once, at the first run of a session (a copied link restores the view
in a new tab), and written back to ``st.query_params`` on every run.

The URL parameters are ``COMMON`` (those several pages read: run, step,
sample...) and each page's own, declared in its file (``PAGE = PageSpec(...)``
in ``views/<name>.py``, read from the file's text: the pages import this
module, so it cannot import them). ``SPECS`` holds every page's declaration,
``PARAMS`` their union; a name two declarations give differently is refused.

Every parameter has a readable name (``table_page``, ``prompt_status``,
``kl_estimator``...). Links written before the renames used short names
(``tpage``, ``pst``...): those are read as aliases (``Param.old``), so an old
link opens the same view, and the address bar then shows the new names.

Widgets never own the state: ``bind(name)`` gives a widget its own key,
seeded from the state before the widget is drawn, and a callback that copies
the user's change back. Values that cannot be parsed from the URL become
messages (``notices``), never exceptions.
"""

from __future__ import annotations

import ast
import math
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st

from rl_board.formats import fields as F
from rl_board.ui.text import escape_markdown
from rl_board.ui.views import PAGES
from rl_board.where import Where

if TYPE_CHECKING:
    from rl_board.ui.context import Context

_VIEW = "view."
_WIDGET = "w."
_URL_READ = "_url_read"
_NOTICES = "_notices"
_GOTO = "_goto"
_CONTEXT = "_context"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Param:
    """One URL parameter: its name, kind (str, int, float, bool, list, range), default, the names older
    links gave it (read, never written) and, for a closed set of values, the values allowed."""

    name: str
    kind: str
    default: Any = None
    old: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class PageSpec:
    """What a page file declares as ``PAGE = PageSpec(...)``: its menu title and icon, and the URL parameters
    only it reads. Written with literals only: it is read from the file's text, without running the page."""

    title: str
    icon: str
    params: tuple[Param, ...] = ()


# The parameters several pages read (the sidebar's run, field map, KL estimator and chart mode; the step and
# sample many pages open); every other parameter is declared by the one page that reads it, in its own file.
COMMON = (
    Param("run", "str"),
    Param("step", "int"),
    Param("sample", "int"),
    Param("fields", "str", ""),
    Param("kl_estimator", "str", F.DEFAULT_KL_ESTIMATOR, choices=tuple(e.name for e in F.KL_ESTIMATORS)),
    Param("interactive_charts", "bool", False),  # Plotly charts instead of SVG pictures (components/chart.py)
)
VIEWS = Path(__file__).resolve().parent / "views"
_DECLARABLE: dict[str, Callable[..., Any]] = {"PageSpec": PageSpec, "Param": Param}


def _literal(node: ast.expr) -> Any:
    """A declaration's value: literals, tuples and lists (as tuples), PageSpec(...) and Param(...) of them."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in _DECLARABLE or any(k.arg is None for k in node.keywords):
            raise ValueError(f"a call of {ast.unparse(func)} (only PageSpec and Param)")
        args = [_literal(a) for a in node.args]
        return _DECLARABLE[name](*args, **{str(k.arg): _literal(k.value) for k in node.keywords})
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_literal(e) for e in node.elts)
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ValueError(f"{ast.unparse(node)!r} is not a literal") from None


def declared(path: Path) -> PageSpec:
    """The ``PAGE = PageSpec(...)`` a page file declares, read from its text: the page itself is not run."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PAGE"]:
            try:
                spec = _literal(node.value)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{path.name}: PAGE must be PageSpec(...) of literals: {exc}") from None
            if isinstance(spec, PageSpec):
                return spec
    raise ValueError(f"{path.name} declares no PAGE = PageSpec(...)")


def _union(*groups: tuple[Param, ...]) -> tuple[Param, ...]:
    """The parameters of every group once each; a name declared twice must be declared the same."""
    out: dict[str, Param] = {}
    for param in (p for group in groups for p in group):
        if out.setdefault(param.name, param) != param:
            raise ValueError(f"URL parameter {param.name!r} is declared twice, differently")
    return tuple(out.values())


SPECS = {name: declared(VIEWS / f"{name}.py") for name in PAGES}  # a page's name -> its declaration
PARAMS = _union(COMMON, *(spec.params for spec in SPECS.values()))  # every URL parameter of the app
TRAJECTORY_RANGES = ("turns", "tool_calls")  # range filters shown for multi-turn runs only
_BY_NAME = {p.name: p for p in PARAMS}
RENAMED = {old: p.name for p in PARAMS for old in p.old}  # a short name of an older link -> today's name
RANGE_PARAMS = tuple(p.name for p in PARAMS if p.kind == "range")
CONTAINS_PARAMS = ("tools", "scripts")  # the step browser's text filters a link may set (``Where.contains``)


def _default(name: str) -> Any:
    base, _, part = name.partition(".")
    param = _BY_NAME.get(base)
    return None if part or param is None else param.default


def get(name: str, default: Any = None) -> Any:
    """Current value of a view field (``reward.lo`` / ``reward.hi`` for range bounds).

    Fields that are not URL parameters (e.g. chosen curves) fall back to ``default``.
    """
    key = _VIEW + name
    if key in st.session_state:
        return st.session_state[key]
    return default if name.partition(".")[0] not in _BY_NAME else _default(name)


def put(name: str, value: Any) -> None:
    st.session_state[_VIEW + name] = value


def put_many(**values: Any) -> None:
    for name, value in values.items():
        put(name.replace("__", "."), value)


def get_range(name: str) -> tuple[float | None, float | None]:
    return get(f"{name}.lo"), get(f"{name}.hi")


def bind(name: str, on_change: Callable[[], None] | None = None, *, default: Any = None) -> dict[str, Any]:
    """Keyword arguments (key, on_change) for a widget that edits view field ``name``.

    Seeds the widget's own key from the view state, so call it right before
    drawing the widget and do not pass the widget a default value.
    """
    wkey = _WIDGET + name
    st.session_state[wkey] = get(name, default)

    def commit() -> None:
        put(name, st.session_state.get(wkey))
        if on_change is not None:
            on_change()

    return {"key": wkey, "on_change": commit}


# -- URL -----------------------------------------------------------------


def parse_value(param: Param, raw: str) -> Any:
    """A URL value as the view value; ValueError with a readable message when it is bad."""
    raw = raw.strip()
    if param.choices and raw not in param.choices:
        raise ValueError(f"`{param.name}` must be one of {', '.join(param.choices)}")
    if param.kind == "str":
        return raw
    if param.kind == "list":
        return list(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
    if param.kind == "float":
        return _finite(raw, f"`{param.name}` must be a number", f"`{param.name}` must be a finite number")
    if param.kind == "int":
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"`{param.name}` must be a whole number") from None
    if param.kind == "bool":
        low = raw.lower()
        if low in _TRUE or low in _FALSE:
            return low in _TRUE
        raise ValueError(f"`{param.name}` must be 1 or 0")
    return _parse_range(param.name, raw)


def _parse_range(name: str, raw: str) -> tuple[float | None, float | None]:
    lo_text, sep, hi_text = raw.partition(":")
    if not sep:
        raise ValueError(f"`{name}` must look like low:high (either side may be empty)")
    bounds: list[float | None] = []
    for text in (lo_text, hi_text):
        if not text.strip():
            bounds.append(None)
            continue
        bounds.append(
            _finite(text, f"`{name}` bounds must be numbers", f"`{name}` bounds must be finite numbers")
        )
    lo, hi = bounds
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"`{name}` low bound is above its high bound")
    return lo, hi


def _finite(text: str, not_number: str, not_finite: str) -> float:
    """A finite float from URL text, else ValueError with the given message."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(not_number) from None
    if not math.isfinite(value):
        raise ValueError(not_finite)
    return value


def format_value(param: Param, value: Any) -> str:
    if param.kind == "bool":
        return "1" if value else "0"
    if param.kind == "list":
        return ",".join(value)
    if param.kind == "range":
        lo, hi = value
        return f"{'' if lo is None else f'{lo:g}'}:{'' if hi is None else f'{hi:g}'}"
    if param.kind == "float":
        return f"{value:g}"
    return str(value)


def read_url_once() -> None:
    """At a session's first run, copy URL parameters into the view state."""
    if st.session_state.get(_URL_READ):
        return
    st.session_state[_URL_READ] = True
    params = st.query_params
    for param in PARAMS:
        given = next((n for n in (param.name, *param.old) if n in params), None)
        if given is None:
            continue
        raw = params.get(given, "")
        try:
            value = parse_value(param, raw)
        except ValueError as exc:
            notice(
                f"Ignored link parameter {given}={escape_markdown(repr(raw[:80]))}: "
                f"{escape_markdown(str(exc))}."
            )
            continue
        if param.kind == "range":
            put(f"{param.name}.lo", value[0])
            put(f"{param.name}.hi", value[1])
        else:
            put(param.name, value)


def url_params() -> dict[str, str]:
    """The view state as URL parameters (defaults left out)."""
    out: dict[str, str] = {}
    for param in PARAMS:
        if param.kind == "range":
            value: Any = get_range(param.name)
            if value == (None, None):
                continue
        else:
            value = get(param.name)
            if param.kind == "list":
                value = tuple(value or ())
            if value is None or value == param.default or (param.kind == "list" and not value):
                continue
        out[param.name] = format_value(param, value)
    return out


def link(page: str, **changes: Any) -> str:
    """A relative address of ``page`` with the view state as it is and ``changes`` (None: back to the
    parameter's default): what a picture's link opens, as a deep link would."""
    return linker(page)(**changes)


def linker(page: str, **fixed: Any) -> Callable[..., str]:
    """``link`` for many addresses of ``page`` (a chart's hundreds of steps): the view state is read
    once, and each call gives its own ``changes`` on top of ``fixed``."""
    base = url_params()

    def address(**changes: Any) -> str:
        params = dict(base)
        for name, value in {**fixed, **changes}.items():
            param = _BY_NAME[name]
            if value is None or value == param.default:
                params.pop(name, None)
            else:
                params[name] = format_value(param, value)
        query = urllib.parse.urlencode(params)
        return f"{page}?{query}" if query else page

    return address


def write_url() -> None:
    """Mirror the view state into the address bar (only when it changed)."""
    wanted = url_params()
    if st.query_params.to_dict() != wanted:
        st.query_params.from_dict(wanted)


# -- "where to look" ------------------------------------------------------


def show(where: Where) -> None:
    """Make the view state look where ``where`` says (a finding's link, a deep link); other filters are
    cleared."""
    put_many(
        run=where.run,
        step=where.step,
        sample=where.sample,
        table_page=1,
        search=where.text,
        regex=False,
        match_case=False,
        all_steps=False,
        sort=where.sort or "sample",
        descending=bool(where.desc),
        tools="",
        tool_errors=False,
        finish_reason=[],
        turn=None,
        scripts="",
        template=None,
        tag="",
    )
    put_many(**{name: text for name, text in where.contains.items() if name in CONTAINS_PARAMS})
    for name in RANGE_PARAMS:
        low, high = where.ranges.get(name, (None, None))
        put_many(**{f"{name}__lo": low, f"{name}__hi": high})


def where() -> Where:
    """The view state as a ``Where`` (run, step, sample, sort, text search, ranges and text filters)."""
    ranges = {name: get_range(name) for name in RANGE_PARAMS if get_range(name) != (None, None)}
    contains = {name: get(name) for name in CONTAINS_PARAMS if get(name)}
    return Where(
        run=get("run"),
        step=get("step"),
        sample=get("sample"),
        sort=get("sort"),
        desc=bool(get("descending")),
        text=get("search") or "",
        ranges=ranges,
        contains=contains,
    )


# -- messages, navigation requests and the shared context ------------------


def notice(message: str) -> None:
    """Keep a warning at the top of every page until the user dismisses it."""
    messages = st.session_state.setdefault(_NOTICES, [])
    if message not in messages:
        messages.append(message)


def notices() -> list[str]:
    return list(st.session_state.get(_NOTICES, []))


def dismiss_notices() -> None:
    st.session_state.pop(_NOTICES, None)


def request_page(name: str) -> None:
    """Ask the router to switch to page ``name`` (safe inside widget callbacks)."""
    st.session_state[_GOTO] = name


def pop_page_request() -> str | None:
    return st.session_state.pop(_GOTO, None)


def set_context(context: Context) -> None:
    st.session_state[_CONTEXT] = context


def context() -> Context | None:
    return st.session_state.get(_CONTEXT)
