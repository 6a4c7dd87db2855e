"""The dependency floors exclude releases with known vulnerabilities that touch what rl-board reads."""

from __future__ import annotations

from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
FIXED = {  # package -> first release without the vulnerability
    "pyarrow": "14.0.1",  # CVE-2023-47248: code execution reading IPC (the cache is IPC)
    "orjson": "3.9.15",  # CVE-2024-27454: recursion in deeply nested input
    "protobuf": "6.31.1",  # CVE-2025-4565: recursion parsing untrusted data (event files)
    "ujson": "5.4.0",  # CVE-2022-31116 / 31117
}


def test_floors_admit_no_vulnerable_release() -> None:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = {}
    for text in deps:
        req = Requirement(text)
        lows = [Version(s.version) for s in req.specifier if s.operator in (">=", "==", "~=")]
        floors[req.name] = max(lows) if lows else None
    for name, fixed in FIXED.items():
        assert floors.get(name) is not None and floors[name] >= Version(fixed), (name, floors.get(name))


def test_install_scripts_upgrade_setuptools_too() -> None:
    for script in ("start.sh", "tests/run.sh"):
        assert "--upgrade pip setuptools" in (REPO / script).read_text(), script
