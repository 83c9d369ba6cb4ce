"""Python workers are forked from a daemon that imported the framework already (framework/spark/daemon.py)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def _preloaded(_: object) -> bool:
    import sys

    # pandas: pyarrow's lookup of it was made before the fork (framework.typed.pandas_lookup)
    return all(name in sys.modules for name in ("framework.spark.tasks", "pydantic", "pyarrow.parquet", "pandas"))


def test_every_worker_starts_with_the_framework_imported(spark):
    assert spark.conf.get("spark.python.daemon.module") == "framework.spark.daemon"
    assert spark.sparkContext.parallelize(range(4), 4).map(_preloaded).collect() == [True] * 4


def _pyspark_file(_: object) -> str:
    import pyspark

    return str(pyspark.__file__)


def test_workers_import_the_installed_pyspark_not_sparks_zip_of_the_same_version(spark):
    (found,) = set(spark.sparkContext.parallelize(range(2), 2).map(_pyspark_file).collect())
    assert ".zip" not in found and found.endswith("pyspark/__init__.py")
