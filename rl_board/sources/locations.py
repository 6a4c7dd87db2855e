"""A place that holds logs, named by a local path or a URL, as an fsspec filesystem and a path on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def fsspec_of(location: str | Path) -> tuple[Any, str]:
    """(fsspec filesystem, the path there without a trailing slash) for a local path or any fsspec URL."""
    import fsspec  # only commands and pages that reach a bucket or write a dataset pay for it

    text = str(location)
    fs, path = fsspec.core.url_to_fs(text if "://" in text else str(Path(text).expanduser().resolve()))
    return fs, path.rstrip("/")
