"""Shared fixtures: paths of the repo's example manifests and a writer for manifest files."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "shop" / "manifest.yaml"

#: Linux alone resizes pipes (framework.protocol.pipe); there such a test asserts, whatever fcntl offers.
LINUX_ONLY = pytest.mark.skipif(sys.platform != "linux", reason="pipes are resized on Linux only")

# The tests neither make nor map the per-user class-data archive of Spark's classes
# (framework.spark.class_archive): every Spark test starts its JVM the same way, whatever ran before it, and
# no sync leaves an archive builder running behind the suite. tests/spark/test_class_archive.py names its own
# folder for it.
os.environ.setdefault("FRAMEWORK_SPARK_CLASS_ARCHIVE", "off")


@pytest.fixture
def write_manifest(tmp_path):
    """Write YAML text (dedented) to a file in a temp folder and return its path."""

    def write(text: str, name: str = "manifest.yaml") -> str:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return str(path)

    return write


def corpus_dir() -> str | None:
    value = os.environ.get("MANIFEST_CORPUS")
    return value if value and os.path.isdir(value) else None


# The fake HTTP API (tests/fakes/api_server.py) as a fixture for every test module.
from fakes.api_server import fake_api  # noqa: E402,F401

#: The local S3 server (moto) and its buckets, for every test that lands on S3.
pytest_plugins = ["s3_fixtures"]


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory) -> Path:
    """The package's wheel, built once per session from a copy of the project's files (tests/wheel_env.py)."""
    from wheel_env import build_wheel

    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def wheel_env(built_wheel, tmp_path_factory) -> Path:
    """The ``bin/`` of a fresh venv with the wheel installed (not editable) with its spark and connect extras."""
    from wheel_env import install

    return install(built_wheel, tmp_path_factory.mktemp("fresh") / "env")


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession (two cores) for the whole test session, started on first use.

    Tests that take it are marked ``@pytest.mark.spark``. It is stopped when the session ends.
    """
    from framework.spark.session import spark_session

    # jdbc: normalization's PostgreSQL target is tested on this session too
    session = spark_session(master="local[2]", app_name="tests", jdbc=True, **{"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL server for the whole test session (tests/fakes/postgres_server.py).

    Yields a ``PostgresServer``: ``jdbc_url``, ``user``, ``password`` and ``sql(text) -> rows``.
    Tests that take it are marked ``@pytest.mark.postgres``. Missing server binaries fail the
    tests (they are not skipped): ``make setup`` installs them.
    """
    from fakes.postgres_server import PostgresServer, PostgresUnavailable

    try:
        server = PostgresServer.start()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    yield server
    server.stop()
