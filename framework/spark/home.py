"""Where a local Spark's pieces are: pip's Spark home, what it holds (its jars, its ``spark-defaults.conf``),
the JDBC driver jars a session adds, and whether ``spark-submit`` started this process.

Nothing here imports pyspark. :mod:`framework.spark.launch_home` and
:mod:`framework.spark.class_archive` build on it, and the session's plan
(:mod:`framework.spark.session`) reads the settings it finds.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping


def pip_spark_home() -> str | None:
    """The folder of the installed pyspark package (pip's Spark home), found without importing it (about 0.1 s
    of a sync's start that a sync which never starts Spark does not pay)."""
    try:
        spec = importlib.util.find_spec("pyspark")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return os.path.dirname(os.path.abspath(spec.origin))


def under_spark_submit(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``spark-submit`` started this process: the JVM is already up with its master, and hands its
    port to Python."""
    return "PYSPARK_GATEWAY_PORT" in (os.environ if environ is None else environ)


def jars_of(home: str) -> tuple[str, list[str], int] | None:
    """The jars folder of the Spark ``home``: its real path, its file names (sorted) and its time of change (a
    jar added, removed or replaced: pip removes, then writes), what a cached file made from it is keyed on;
    None when it cannot be read."""
    jars = os.path.join(home, "jars")
    try:
        return os.path.realpath(jars), sorted(os.listdir(jars)), os.stat(jars).st_mtime_ns
    except OSError:
        return None


def spark_defaults(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings of the ``spark-defaults.conf`` that ``spark-submit`` reads (empty when there is none).

    The folder is ``$SPARK_CONF_DIR``, else ``conf/`` of ``$SPARK_HOME``, else
    ``conf/`` of the pip package's Spark. The file is Java properties: ``key
    value`` (or ``key=value``, ``key: value``) a line, ``#`` and ``!`` start
    comments.
    """
    environ = os.environ if environ is None else environ
    folder = environ.get("SPARK_CONF_DIR")
    if not folder:
        home = environ.get("SPARK_HOME") or pip_spark_home()
        folder = os.path.join(home, "conf") if home else None
    if not folder:
        return {}
    try:
        with open(os.path.join(folder, "spark-defaults.conf"), encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _PROPERTY.match(line)
        if match and not line.lstrip().startswith(("#", "!")):
            found[match.group("key")] = match.group("value").strip()
    return found


_PROPERTY = re.compile(r"^\s*(?P<key>[^\s=:]+)\s*(?:[=:]|\s)\s*(?P<value>.*)$")


# Debian's libpostgresql-jdbc-java puts the PostgreSQL JDBC driver here (the PostgreSQL target of
# normalization writes through it). FRAMEWORK_JDBC_JARS (comma-separated jar paths or URLs) wins.
_DEBIAN_POSTGRES_JAR = "/usr/share/java/postgresql.jar"


def jdbc_jars(environ: Mapping[str, str] | None = None) -> str | None:
    """The JDBC driver jars to put on the session's classpath, or None when there are none."""
    given = (os.environ if environ is None else environ).get("FRAMEWORK_JDBC_JARS", "").strip()
    if given:
        return given
    return _DEBIAN_POSTGRES_JAR if os.path.isfile(_DEBIAN_POSTGRES_JAR) else None


__all__ = ["jars_of", "jdbc_jars", "pip_spark_home", "spark_defaults", "under_spark_submit"]
