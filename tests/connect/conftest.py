"""The ``connect_server`` fixture: one local Spark Connect server (``local[2]``) per test session.

Tests talk to it through ``run-manifest --remote`` / ``normalize-output --remote``
in subprocesses: a Spark Connect client switches pyspark into its Connect mode
for the whole process (``SPARK_CONNECT_MODE_ENABLED``), which the suite's own
classic SparkSession must not see.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

from connect.server import ConnectServer


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java: a Spark Connect server needs Java 17 (make setup installs it)")
    if importlib.util.find_spec("grpc") is None:
        pytest.skip("the Spark Connect client packages are missing: pip install -e '.[connect]' (make setup does)")
    from framework.spark.home import jdbc_jars

    # the PostgreSQL JDBC driver on the server's classpath, as a server for normalization's postgres target needs
    jars = tuple(filter(None, (jdbc_jars() or "").split(",")))
    with ConnectServer(tmp_path_factory.mktemp("spark-connect"), jars=jars) as server:
        yield server
