"""The metric kinds' plug: one registry lists them, and each kind's name is spelled in its own module only."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import rl_board
from rl_board.metrics import kinds
from rl_board.metrics.kind import MetricKind

PACKAGE = Path(rl_board.__file__).parent
REGISTRY = Path(inspect.getfile(kinds))


def test_the_registry_lists_every_kind_once_with_a_label() -> None:
    names = [k.name for k in kinds.KINDS]
    assert len(names) == len(set(names)) and all(names)
    assert all(isinstance(k, MetricKind) and k.label for k in kinds.KINDS)
    assert {"tensorboard", "di-engine", "text-log", "trainer-state"} <= set(names)
    for kind in kinds.KINDS:
        assert kinds.by_name(kind.name) is kind
        assert kinds.label(kind.name) == kind.label


def test_a_kind_name_is_spelled_only_in_its_module_and_the_registry() -> None:
    """A new kind is one module and one registry line: no other file branches on its name."""
    owners = {kind.name: Path(inspect.getfile(type(kind))) for kind in kinds.KINDS}
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path == REGISTRY:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            spelled = isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in owners
            if spelled and owners[node.value] != path:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert not offenders, offenders


def test_the_check_finds_a_name_spelled_elsewhere(tmp_path: Path) -> None:
    """The scan above looks at string constants: a branch on a kind's name is one."""
    code = 'if info.kind == "tensorboard":\n    pass\n'
    found = [n.value for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Constant)]
    assert "tensorboard" in found


def test_each_run_kind_has_a_label() -> None:
    for name in kinds.names():
        assert kinds.label(name) and kinds.label(name) != name  # a word for people, not the code's name


def test_a_settled_appending_store_is_not_read_again(tmp_path: Path, monkeypatch) -> None:
    """An appending run whose files have not changed (and settled: no change could hide in the same mtime)
    is answered from its cache entry without opening it; a line appended later is read on."""
    import os
    import time

    from rl_board.metrics.reader import load_metrics
    from rl_board.metrics.stdout import TextLogKind

    log = tmp_path / "metrics.jsonl"
    log.write_text("".join(f'{{"step": {s}, "loss": {1 / (s + 1)}}}\n' for s in range(5)))
    past = time.time() - 10
    os.utime(log, (past, past))
    cache = tmp_path / "cache"
    calls = []
    real = TextLogKind.read_from
    monkeypatch.setattr(TextLogKind, "read_from", lambda self, *a: calls.append(a) or real(self, *a))
    first = load_metrics(log, cache_dir=cache)
    again = load_metrics(log, cache_dir=cache)
    assert len(calls) == 1 and len(first.scalars) == len(again.scalars) == 5
    assert again.runs[0].to_dict() == first.runs[0].to_dict()
    with log.open("a") as handle:
        handle.write('{"step": 5, "loss": 0.1}\n')
    grown = load_metrics(log, cache_dir=cache)
    assert len(calls) == 2 and len(grown.scalars) == 6
