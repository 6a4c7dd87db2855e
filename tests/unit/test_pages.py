"""Pages declare themselves: each page's title, icon and URL parameters come from its own file, the registry
names each page on one line, and a page's code reads only the parameters it or ``COMMON`` declares."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from rl_board.ui import state, views
from rl_board.ui.state import COMMON, PageSpec, Param

UI = Path(state.__file__).parent
VIEWS = UI / "views"
READS = ("get", "bind", "get_range")  # state.<these>("name") read a view field
# View fields kept out of links on purpose (chosen curves, a table's tagging rows, a token search, the focused
# turn's picker, the last query run): read with state.get, never URL parameters.
VIEW_ONLY = {"curves", "tag_rows", "token_find", "turn_pick", "sqlran"}


def page_files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(VIEWS.glob("*.py")) if p.stem != "__init__"}


def test_each_page_lists_its_url_parameters_from_its_own_file() -> None:
    listed = {name: [p.name for p in state.declared(path).params] for name, path in page_files().items()}
    assert listed == {name: [p.name for p in spec.params] for name, spec in state.SPECS.items()}
    assert listed["steps"][:3] == ["sort", "descending", "search"]  # the step browser's own, from steps.py
    assert listed["health"] == []  # Health reads only what every page shares
    every = [p.name for p in COMMON] + [name for names in listed.values() for name in names]
    assert sorted(every) == sorted(p.name for p in state.PARAMS)  # the URL is COMMON and every page's own
    assert len(every) == len(set(every))  # each parameter has one home: COMMON or one page


def test_no_two_declarations_give_a_parameter_differently() -> None:
    seen: dict[str, tuple[str, Param]] = {}
    for where, params in [("COMMON", COMMON), *((n, s.params) for n, s in state.SPECS.items())]:
        for param in params:
            first = seen.setdefault(param.name, (where, param))
            assert first[1] == param, f"{param.name}: {first[0]} and {where} declare it differently"
    with pytest.raises(ValueError, match="declared twice, differently"):
        state._union((Param("x", "int"),), (Param("x", "str"),))
    assert state._union((Param("x", "int"),), (Param("x", "int"),)) == (Param("x", "int"),)


def test_names_old_links_used_read_one_parameter_each() -> None:
    names = [p.name for p in state.PARAMS]
    olds = [old for p in state.PARAMS for old in p.old]
    assert len(olds) == len(set(olds)) and not set(olds) & set(names)
    assert not VIEW_ONLY & set(names)


def test_the_registry_is_one_line_per_page() -> None:
    source = (VIEWS / "__init__.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert not [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]  # state may import it
    (node,) = [n for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "PAGES"]
    assert isinstance(node.value, ast.Tuple)
    lines = [e.lineno for e in node.value.elts]
    assert all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts)
    assert len(set(lines)) == len(lines) == len(views.PAGES)  # a page added or removed is one line
    assert sorted(views.PAGES) == sorted(page_files())  # every file of views/ is a page, named once
    assert list(state.SPECS) == list(views.PAGES)  # the menu's order; the first opens by default


def test_a_declaration_is_read_without_running_the_page(tmp_path: Path) -> None:
    page = tmp_path / "page.py"
    page.write_text(
        "raise SystemExit('the page ran')\n"
        "PAGE = state.PageSpec(title='T', icon=':material/x:', params=[Param('a', 'range', old=('b',))])\n"
    )
    assert state.declared(page) == PageSpec("T", ":material/x:", (Param("a", "range", old=("b",)),))
    for bad in (
        "PAGE = PageSpec(title=TITLE, icon='x')",
        "PAGE = PageSpec(**ARGS)",
        "PAGE = make()",
        "X = 1",
    ):
        page.write_text(bad + "\n")
        with pytest.raises(ValueError, match="PAGE"):
            state.declared(page)


def test_each_page_titles_itself_from_its_declaration() -> None:
    for name, path in page_files().items():
        assert "(PAGE.title)" in path.read_text(encoding="utf-8"), name


# -- who reads what ----------------------------------------------------------


def _module_path(module: str) -> Path | None:
    if not module.startswith("rl_board.ui"):
        return None
    rel = Path(*module.split(".")[2:])
    for path in (UI / rel / "__init__.py", (UI / rel).with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _imports(path: Path) -> set[Path]:
    out: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                found = _module_path(f"{node.module}.{alias.name}") or _module_path(node.module)
                out |= {found} if found else set()
        elif isinstance(node, ast.Import):
            out |= {p for a in node.names if (p := _module_path(a.name))}
    return out - {UI / "state.py", VIEWS / "__init__.py"}


def closure(path: Path) -> set[Path]:
    """The file and every rl_board.ui module it imports, directly or not (state.py apart)."""
    seen, todo = {path}, [path]
    while todo:
        for found in _imports(todo.pop()) - seen:
            seen.add(found)
            todo.append(found)
    return seen


def reads(path: Path) -> Iterator[tuple[int, str]]:
    """(line, parameter) for each state.get / bind / get_range of a name spelled in the file (a literal, or a
    module-level constant); ``reward.lo`` reads ``reward``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(node.value.value, str)
    }
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and ast.unparse(node.func.value) == "state"
            and node.func.attr in READS
            and node.args
        ):
            continue
        arg = node.args[0]
        name = arg.value if isinstance(arg, ast.Constant) else constants.get(getattr(arg, "id", ""))
        if isinstance(name, str):
            yield node.lineno, name.partition(".")[0]


def test_the_reader_finds_what_pages_read() -> None:
    assert {name for _, name in reads(UI / "components" / "filters.py")} >= {"search", "tag", "filter_column"}
    assert "metric_runs" in {name for _, name in reads(UI / "components" / "metrics_runs.py")}  # via RUNS
    assert {name for _, name in reads(VIEWS / "sample.py")} == {"step", "sample"}


def test_a_page_reads_only_its_own_parameters_and_the_common_ones() -> None:
    """A file a page runs (its own, and the components it imports) reads only COMMON, view-only fields and
    the parameters of the pages that run it; what the router draws on every page (the sidebar) only COMMON."""
    common = {p.name for p in COMMON} | VIEW_ONLY
    allowed: dict[Path, set[str]] = {}
    for name, path in page_files().items():
        for file in closure(path):
            allowed.setdefault(file, set(common)).update(p.name for p in state.SPECS[name].params)
    for file in closure(UI / "app.py"):
        allowed[file] = set(common)
    wrong = [
        f"{file.relative_to(UI)}:{line} reads {name!r}"
        for file, names in sorted(allowed.items())
        for line, name in reads(file)
        if name not in names
    ]
    assert not wrong, wrong
    assert closure(VIEWS / "steps.py") >= {UI / "components" / "filters.py", UI / "components" / "page.py"}


def test_state_names_only_declared_parameters() -> None:
    """Names state.py spells (the step browser's filters a link sets) and page files write are declared."""
    names = {p.name for p in state.PARAMS}
    assert set(state.CONTAINS_PARAMS) | set(state.TRAJECTORY_RANGES) | set(state.RANGE_PARAMS) <= names
    for path in [UI / "state.py", *page_files().values()]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("put_many", "state.put_many"):
                written = {str(k.arg).replace("__", ".").partition(".")[0] for k in node.keywords if k.arg}
                assert written <= names, (path.name, written - names)
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("put", "state.put"):
                arg = node.args[0] if node.args else None
                if isinstance(arg, ast.Constant):
                    assert str(arg.value).partition(".")[0] in names, (path.name, arg.value)
