"""The ``spark_cluster`` fixture: one standalone cluster (a master, two one-core workers) per test session."""

from __future__ import annotations

import shutil

import pytest

from cluster.standalone import StandaloneCluster


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    if shutil.which("java") is None and not __import__("os").environ.get("JAVA_HOME"):
        pytest.skip("no Java: a standalone cluster needs Java 17 (make setup installs it)")
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster
