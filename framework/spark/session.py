"""The SparkSession of a run: local by default, a cluster when asked.

pyspark is imported here and only here (lazily, by the commands that run the
pipeline): ``validate-manifest`` and protocol mode never pay for it.

* ``master=None``: under ``spark-submit`` (or with ``SPARK_MASTER`` /
  ``spark.master`` set) the session takes the master it is given; otherwise
  ``local[*]``, which needs nothing but the install.
* The driver JVM logs errors only (its start-up warnings would bury the
  progress on stderr); pass ``spark.driver.extraJavaOptions`` to change that.
* JDBC drivers (for the PostgreSQL target of normalization) join the classpath
  through ``spark.jars``: the jars named by ``FRAMEWORK_JDBC_JARS`` (comma
  separated), else Debian's ``/usr/share/java/postgresql.jar`` when installed.
* Executors run the framework's Python code, so they need the package: on a
  cluster, install ``manifest-framework`` on every node (or ship a wheel with
  ``--py-files`` / ``spark.archives``) and point ``PYSPARK_PYTHON`` at that
  Python. Locally the driver's own interpreter is used.
* ``remote`` (``--remote sc://host:port``, or ``SPARK_REMOTE``): a Spark
  Connect session against that server (:mod:`framework.spark.connect`). The
  server owns its master, JVM settings and log level: only ``conf`` (SQL
  settings the server lets a session change) is passed on.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import tempfile
import urllib.parse
from typing import TYPE_CHECKING

from framework.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def spark_session(master: str | None = None, app_name: str = "run-manifest", *, full_jit: bool = False,
                  remote: str | None = None, **conf: str) -> SparkSession:
    """A SparkSession for the pipeline (created, or the active one reused).

    A local JVM runs the quick JIT tier only unless ``full_jit``: that halves
    the start of a sync, whose JVM mostly passes Arrow batches along, but
    costs work done in the JVM itself (normalization: about 2x at 1,000,000
    records in bench/normalization.py), which asks for the full JIT.
    """
    from framework.spark.connect import remote_url

    url = remote_url(remote, master)
    if url:
        return _connect_session(url, app_name, conf)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    local = False
    if master:
        builder = builder.master(master)
        local = master.startswith("local")
    elif not _master_given():
        builder = builder.master("local[*]")
        local = True
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.shuffle.partitions": "8",
        "spark.python.worker.reuse": "true",
    }
    java_options = []
    log_config = _quiet_log_config()
    if log_config:
        java_options.append(f"-Dlog4j2.configurationFile={log_config}")
    if local and not full_jit:
        # A local sync is short and its JVM mostly passes Arrow batches around: the quick JIT tier
        # starts Spark in about half the time (measured in bench/pipeline.py), at no cost there.
        java_options.append("-XX:TieredStopAtLevel=1")
    if java_options:
        settings["spark.driver.extraJavaOptions"] = " ".join(java_options)
    jars = _jdbc_jars()
    if jars:
        given = conf.get("spark.jars")
        settings["spark.jars"] = f"{given},{jars}" if given else jars
        conf = {key: value for key, value in conf.items() if key != "spark.jars"}
    settings.update(conf)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _connect_session(url: str, app_name: str, conf: dict[str, str]) -> SparkSession:
    """A Spark Connect session on ``url``; a server that cannot be reached is a :class:`ConfigError` naming it."""
    from pyspark.sql import SparkSession

    try:
        import pyspark.sql.connect.session  # noqa: F401 - its packages (grpcio, ...) are the `connect` extra
    except ImportError as exc:
        raise ConfigError(f"Spark Connect needs its client packages ({exc.name} is missing): "
                          "pip install 'manifest-framework[connect]'") from None
    _check_reachable(url)
    builder = SparkSession.builder.remote(url).appName(app_name)
    for key, value in {"spark.sql.execution.arrow.pyspark.enabled": "true", **conf}.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
        session.conf.get("spark.master", None)  # the first call reaches the server
    except Exception as exc:  # noqa: BLE001 - gRPC's errors: the server is down or the URL is wrong
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"the Spark Connect server at {url} could not be reached ({detail}); start it "
                          f"(sbin/start-connect-server.sh) or fix --remote / SPARK_REMOTE") from None
    return session


def _check_reachable(url: str) -> None:
    """Fail at once when nothing listens at an ``sc://`` URL (the Connect client would retry for minutes)."""
    if not url.startswith("sc://"):
        return  # "local": pyspark starts a Connect server of its own
    parsed = urllib.parse.urlparse("http://" + url[len("sc://"):].split(";", 1)[0])
    host, port = parsed.hostname or "localhost", parsed.port or 15002
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as exc:
        raise ConfigError(f"the Spark Connect server at {url} could not be reached ({host}:{port}: "
                          f"{exc.strerror or exc}); start it (sbin/start-connect-server.sh) or fix --remote / "
                          "SPARK_REMOTE") from None


# Spark's own start-up chatter (WARN lines, "Using Spark's default log4j profile", "Setting default log
# level") would drown the progress on stderr: the driver JVM logs errors only. The root stays at WARN so
# Spark does not announce a changed shell level; the appender drops everything below ERROR.
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
appender.console.filter.threshold.type = ThresholdFilter
appender.console.filter.threshold.level = error
"""


def _quiet_log_config() -> str | None:
    """A ``file:`` URL of the log4j2 configuration above, written once to the temp folder (None if it cannot be)."""
    digest = hashlib.sha256(_LOG4J2.encode()).hexdigest()[:12]
    path = os.path.join(tempfile.gettempdir(), f"manifest-framework-log4j2-{digest}.properties")
    try:
        if not os.path.exists(path):
            temp = f"{path}.{os.getpid()}.tmp"
            with open(temp, "w", encoding="utf-8") as handle:
                handle.write(_LOG4J2)
            os.replace(temp, path)
    except OSError:  # a read-only temp folder: Spark's own logging then
        return None
    return "file:" + path


# Debian's libpostgresql-jdbc-java puts the PostgreSQL JDBC driver here (the PostgreSQL target of
# normalization writes through it). FRAMEWORK_JDBC_JARS (comma-separated jar paths or URLs) wins.
_DEBIAN_POSTGRES_JAR = "/usr/share/java/postgresql.jar"


def _jdbc_jars() -> str | None:
    """The JDBC driver jars to put on the session's classpath, or None when there are none."""
    given = os.environ.get("FRAMEWORK_JDBC_JARS", "").strip()
    if given:
        return given
    return _DEBIAN_POSTGRES_JAR if os.path.isfile(_DEBIAN_POSTGRES_JAR) else None


def _master_given() -> bool:
    if os.environ.get("SPARK_MASTER") or os.environ.get("MASTER"):
        return True
    # Under spark-submit the JVM is already up with its master, and hands its port to Python.
    return "PYSPARK_GATEWAY_PORT" in os.environ or "--master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


__all__ = ["spark_session"]
