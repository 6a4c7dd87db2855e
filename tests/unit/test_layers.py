"""The architecture, checked: layers, the import graph, and who may spell a field's label."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import rl_board
from rl_board.formats import fields

PACKAGE = Path(rl_board.__file__).parent
UI_DATA_MODULE_LIMIT = 5


def all_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(rl_board.__path__, "rl_board."))


def module_file(name: str) -> Path:
    rel = Path(*name.split(".")[1:])
    package = PACKAGE / rel / "__init__.py"
    return package if package.is_file() else (PACKAGE / rel).with_suffix(".py")


def imports_of(name: str, known: set[str]) -> set[str]:
    """rl_board modules that `name` imports at run time (imports under TYPE_CHECKING are not)."""
    tree = ast.parse(module_file(name).read_text(encoding="utf-8"))
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _is_type_checking(node.test)
        for n in ast.walk(node)
    }
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in known else node.module)
    return {m for m in out if m in known and m != name}


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def page_files() -> list[str]:
    """Streamlit page scripts (ui/views/*.py) are files, not importable modules: name them like modules."""
    return [f"rl_board.ui.views.{p.stem}" for p in sorted((PACKAGE / "ui" / "views").glob("*.py"))]


def import_graph() -> dict[str, set[str]]:
    names = sorted(set(all_modules()) | set(page_files()))
    known = set(names)
    return {n: imports_of(n, known | set(all_modules())) for n in names}


def test_data_layer_does_not_import_streamlit() -> None:
    modules = [m for m in all_modules() if not m.startswith("rl_board.ui") and m != "rl_board.__main__"]
    assert "rl_board.rollouts.store" in modules and "rl_board.cli" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'streamlit' or m.startswith('streamlit.'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of module names, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycles() -> None:
    assert find_cycle(import_graph()) is None, " -> ".join(find_cycle(import_graph()) or [])


def test_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_ui_imports_a_handful_of_data_modules() -> None:
    graph = import_graph()
    used = sorted(
        {
            dep
            for mod, deps in graph.items()
            if mod.startswith("rl_board.ui")
            for dep in deps
            if not dep.startswith("rl_board.ui")
        }
    )
    assert len(used) <= UI_DATA_MODULE_LIMIT, used


FRONT_DOOR = {
    "rl_board.api",
    "rl_board.public",
    "rl_board.config",
    "rl_board.errors",
    "rl_board.where",
    "rl_board.formats.fields",
}  # the data layer's front door, settings, errors and the field catalogue


def test_pages_and_cli_come_in_through_the_front_door() -> None:
    """A page or a CLI command asks the data layer through ``api`` / ``public`` only (plus settings, errors,
    the ``where`` of the served roots and the field catalogue); lazy imports inside functions count too."""
    graph = import_graph()
    past = sorted(
        (mod, dep)
        for mod, deps in graph.items()
        if mod.startswith(("rl_board.ui", "rl_board.cli"))
        for dep in deps
        if not dep.startswith(("rl_board.ui", "rl_board.cli")) and dep not in FRONT_DOOR
    )
    assert not past, past
    assert any(mod.startswith("rl_board.cli") and "rl_board.public" in deps for mod, deps in graph.items())


def test_scalar_rules_do_not_load_the_rollout_engine() -> None:
    code = (
        "import sys, rl_board.health.scalar_rules\n"
        "print(sorted(m for m in sys.modules if m.startswith('rl_board.rollouts')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = eval(out.stdout)  # a printed list of names
    assert "rl_board.rollouts.store" not in loaded and "rl_board.rollouts.read.ingest" not in loaded


def test_field_labels_are_spelled_only_in_the_catalogue() -> None:
    """A label of a field ("KL (mean)", "ref reward", ...) appears as a string literal in one module."""
    labels = {f.label for f in fields.FIELDS if len(f.label) > 3 and f.label != f.name}
    owner = module_file("rl_board.formats.fields")
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path == owner:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in labels:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert not offenders, offenders


def package_of(module: str) -> str:
    """rl_board.rollouts.read.ingest -> rl_board.rollouts; a top-level module is its own package."""
    return ".".join(module.split(".")[:2])


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for mod, deps in import_graph().items():
        graph.setdefault(package_of(mod), set()).update(
            package_of(d) for d in deps if package_of(d) != package_of(mod)
        )
    return graph


def test_packages_form_no_cycle() -> None:
    """Packages point one way: ui/cli -> api -> health -> metrics -> rollouts -> sources -> formats."""
    graph = package_graph()
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_formats_are_below_sources_and_rollouts() -> None:
    """Detection and adapters open no file and know nothing of the readers above them."""
    graph = package_graph()
    above = {
        "rl_board.sources",
        "rl_board.rollouts",
        "rl_board.metrics",
        "rl_board.health",
        "rl_board.ui",
        "rl_board.cli",
        "rl_board.api",
    }
    assert not graph["rl_board.formats"] & above, graph["rl_board.formats"]
    assert "rl_board.rollouts" not in graph["rl_board.sources"], graph["rl_board.sources"]


def test_the_front_door_names_each_name_once() -> None:
    """``api``'s names load on first use (``_LAZY``); the imports a type checker reads are the same names from
    the same places, and every exported name resolves."""
    from rl_board import api

    tree = ast.parse(module_file("rl_board.api").read_text(encoding="utf-8"))
    typed = {
        (a.asname or a.name): (n.module, a.name)
        for node in tree.body
        if isinstance(node, ast.If) and _is_type_checking(node.test)
        for n in node.body
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    }
    assert typed == api._LAZY
    assert all(getattr(api, name) is not None for name in api.__all__)


def test_served_roots_and_the_cache_travel_as_one_value() -> None:
    """The doors of ``api`` and the UI's caches take ``config.Served`` whole: no function there has both a
    cache folder and served roots as separate parameters, and no page module spells the pair by hand."""
    pairs = []
    for rel in ("api.py", "ui/cached.py", "ui/metrics_cached.py"):
        tree = ast.parse((PACKAGE / rel).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                names = {a.arg for a in (*node.args.args, *node.args.kwonlyargs)}
                if names & {"cache_dir", "cache_root"} and names & {"allowed", "allowed_roots", "roots"}:
                    pairs.append(f"{rel}:{node.lineno} {node.name}")
    assert not pairs, pairs
    by_hand = [
        str(p.relative_to(PACKAGE))
        for p in (PACKAGE / "ui").rglob("*.py")
        if any(spelled in p.read_text(encoding="utf-8") for spelled in ("allowed_roots=", "cache_dir="))
    ]
    assert not by_hand, by_hand
