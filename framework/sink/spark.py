"""The SparkSession of a run: local by default, a cluster when asked.

pyspark is imported here and only here (lazily, by the commands that run the
pipeline): ``validate-manifest`` and protocol mode never pay for it.

* ``master=None``: under ``spark-submit`` (or with ``SPARK_MASTER`` /
  ``spark.master`` set) the session takes the master it is given; otherwise
  ``local[*]``, which needs nothing but the install.
* Executors run the framework's Python code, so they need the package: on a
  cluster, install ``manifest-framework`` on every node (or ship a wheel with
  ``--py-files`` / ``spark.archives``) and point ``PYSPARK_PYTHON`` at that
  Python. Locally the driver's own interpreter is used.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def spark_session(master: str | None = None, app_name: str = "run-manifest", **conf: str) -> Any:
    """A SparkSession for the pipeline (created, or the active one reused)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif not _master_given():
        builder = builder.master("local[*]")
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.shuffle.partitions": "8",
        "spark.python.worker.reuse": "true",
        "spark.driver.extraJavaOptions": "-Dlog4j.rootLogger=ERROR,console",
    }
    settings.update(conf)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _master_given() -> bool:
    if os.environ.get("SPARK_MASTER") or os.environ.get("MASTER"):
        return True
    # Under spark-submit the JVM is already up with its master, and hands its port to Python.
    return "PYSPARK_GATEWAY_PORT" in os.environ or "--master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


__all__ = ["spark_session"]
