"""The `real` extra is installed as the tier expects: the pinned trainers and a CPU-only torch.

Read from package metadata only, so torch is not imported into the pytest process.
"""

from __future__ import annotations

from importlib import metadata

import pytest

PINNED = {"trl": "1.16.0", "verl": "0.9.1"}


@pytest.mark.parametrize(("package", "version"), sorted(PINNED.items()))
def test_pinned_trainer_installed(package: str, version: str) -> None:
    assert metadata.version(package) == version


NOT_CUDA = frozenset({"nvidia-ml-py"})
"""Named nvidia-* but no CUDA runtime: NVML's pure-Python binding (~50 KB), which swanlab (the trackers
extra) pulls in for its GPU monitor; it loads no library until a GPU is asked about."""


def test_torch_is_the_cpu_build() -> None:
    """torch 2.13.0+cpu (the local wheel), and no CUDA runtime packages pulled in beside it."""
    assert metadata.version("torch") == "2.13.0+cpu"
    cuda = sorted(
        d.metadata["Name"]
        for d in metadata.distributions()
        if (d.metadata["Name"] or "").lower().startswith(("nvidia-", "cupy", "triton"))
        and (d.metadata["Name"] or "").lower() not in NOT_CUDA
    )
    assert cuda == []
