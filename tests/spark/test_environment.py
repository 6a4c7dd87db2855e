"""The `spark` extra and the Java runtime are what the tier (and the README) say was tested."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from tests.helpers.spark import JAVA_MIN, java_major, readme_recipe

PYSPARK = "4.3.0"


def test_pyspark_and_java_versions(spark: Any) -> None:
    assert metadata.version("pyspark") == PYSPARK and spark.version == PYSPARK
    assert java_major() >= JAVA_MIN
    assert spark.sparkContext.master == "local[2]"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_the_readme_names_the_versions_it_was_tested_with() -> None:
    for kind in ("json", "parquet"):
        assert "tested" in readme_recipe(kind)
    assert f"tested: {PYSPARK}, Java {JAVA_MIN}" in readme_recipe("parquet")
