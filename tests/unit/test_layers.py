"""The data layer must stay importable without Streamlit."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import rl_board.data


def data_modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(rl_board.data.__path__, "rl_board.data.")]


def test_data_layer_does_not_import_streamlit() -> None:
    modules = data_modules()
    assert "rl_board.data.store" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules + ['rl_board.cli']!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'streamlit' or m.startswith('streamlit.'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
