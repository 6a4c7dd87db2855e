"""One configuration object: every environment variable and byte size is read in config.py, when asked for."""

from __future__ import annotations

import ast
from pathlib import Path

from rl_board import config
from rl_board.rollouts.read import ingest

PACKAGE = Path(config.__file__).parent
# Modules that may touch the environment: config reads it; serve builds its server's; the trainer-side writer
# reads the trainer's own RANK (it runs inside the training job and imports nothing of rl-board).
ALLOWED = {"config.py", "cli/serve.py", "writer.py"}


def test_only_config_reads_the_environment() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv"}:
                offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, offenders


def test_no_byte_size_is_a_module_constant_outside_config() -> None:
    """A size like ``16 * 1024 * 1024`` at module level is a setting: it belongs in ``config.Sizes``."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "config.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            numbers = [
                n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, int)
            ]
            names = [t.id for t in getattr(node, "targets", ()) if isinstance(t, ast.Name)]
            if isinstance(node, ast.Assign) and (1024 in numbers or any(n.endswith("_BYTES") for n in names)):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)[:60]}")
    assert not offenders, offenders


def test_sizes_come_from_the_environment_when_asked_for(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RL_BOARD_BLOCK_BYTES", "4096")
    monkeypatch.setenv("RL_BOARD_MAX_LINE_BYTES", "not a number")  # ignored: the default stays
    monkeypatch.setenv("RL_BOARD_REMOTE_EVERY", "2.5")
    config.reset()
    assert config.sizes().block_bytes == 4096
    assert config.sizes().max_line_bytes == config.Sizes().max_line_bytes
    assert config.settings().remote_every == 2.5
    path = tmp_path / "r.jsonl"
    path.write_text("".join(f'{{"step": {i}, "pad": "{"x" * 100}"}}\n' for i in range(200)))
    blocks = ingest.plan_blocks(path, 0, path.stat().st_size)
    assert len(blocks) > 1 and all(e - s <= 4096 + 200 for s, e in blocks)
