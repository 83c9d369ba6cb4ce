"""The standalone cluster fixture itself: its workers register and run a Python job (in a process of its own:
the test session's local SparkSession must not be replaced, nor stopped)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

JOB = """
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master(sys.argv[1]).appName("fixture-check").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").getOrCreate())
print(spark.sparkContext.parallelize(range(100), 4).map(lambda x: x * 2).sum())
spark.stop()
"""


def test_the_cluster_runs_a_python_job_on_its_workers(spark_cluster):
    assert spark_cluster.alive_workers() == 2
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", JOB, spark_cluster.master_url], capture_output=True, text=True,
                          env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "9900"
