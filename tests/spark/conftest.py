"""The `spark` tier: real PySpark in local mode writes the datasets rl-board reads, and reads rl-board's.

One SparkSession (one JVM) serves the whole test session: it starts with the tier's first test and
stops after its last one (package scope), and its JVM with it, so the JVM's memory is not held
through the rest of the suite. Nothing here skips: without pyspark (the `spark` extra) or a Java 17+
runtime every test of the tier fails with what is missing and how tests/run.sh provides it. Select or leave
the tier out with ``-m spark`` / ``-m "not spark"``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.spark import SESSION_ENV, SparkUnavailable, start_session, stop_session


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of this folder is in the `spark` tier. pyspark 4.3 warns that it does not fully support
    pandas 3 when a Python UDF starts; the tier hands Spark no pandas (Arrow batches and rows only)."""
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas"))


@pytest.fixture(scope="package")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The tier's SparkSession, stopped (its JVM gone) after the tier's last test."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in SESSION_ENV.items():
            mp.setenv(name, value)
        try:
            session = start_session(tmp_path_factory.mktemp("spark"))
        except SparkUnavailable as e:
            pytest.fail(str(e), pytrace=False)
        try:
            yield session
        finally:
            stop_session(session)
