"""The standalone cluster fixture itself: its workers register and run a Python job."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


def test_the_cluster_runs_a_python_job_on_its_workers(spark_cluster):
    from pyspark.sql import SparkSession

    assert spark_cluster.alive_workers() == 2
    spark = (SparkSession.builder.master(spark_cluster.master_url).appName("fixture-check")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1").getOrCreate())
    try:
        rows = spark.sparkContext.parallelize(range(100), 4).map(lambda x: x * 2).sum()
        assert rows == 9900
    finally:
        spark.stop()
