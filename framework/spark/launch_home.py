"""The Spark home a local driver JVM is launched from: pip's Spark without ``spark-mllib``.

Every ``SparkSession`` runs the session extensions that ``ServiceLoader``
finds on the class path, and ``spark-mllib`` ships one
(``org.apache.spark.sql.ml.InternalFunctionRegistration``): building its
functions initialises Spark's error classes, which parse a large JSON file
with Jackson's Scala module, about 0.9 CPU-s of a local session's start with
the class-data archive and 2 CPU-s without it (bench/README.md, "fifth
pass"). No setting turns a provider off; only a class path without the jar
does. The framework never uses Spark ML, so a local sync's JVM is launched
from a home of its own: a folder whose ``jars/`` links every jar of pip's
Spark but ``spark-mllib_*`` and whose other entries (``bin``, ``python``,
``conf``...) link pip's, so that ``spark-submit`` builds the class path
from it and reads the same configuration.

* Only where nothing else names Spark: no ``SPARK_HOME`` (a Spark of the
  user's own, their jars, stays as it is), not under ``spark-submit``, a
  local master, POSIX (symbolic links). ``FRAMEWORK_SPARK_HOME=off`` turns it
  off; ``FRAMEWORK_SPARK_HOME=FOLDER`` names where the homes are kept.
* Kept with the class-data archives (``$XDG_CACHE_HOME/manifest-framework``
  or ``~/.cache/manifest-framework``), named by a digest of pip's jars folder
  (its path, file names and time of change): a new Spark gets a home of its
  own, and the class-data archive of the home's class path
  (:mod:`framework.spark.class_archive`) is keyed on it too. A home is made
  under a temporary name and renamed into place, so two syncs making it at
  once both end with the same whole folder.
* Anything that fails (a folder that takes no files, no links) leaves the
  launch as it was: pip's Spark home, the extension included.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Mapping

from framework.spark.home import jars_of, pip_spark_home

ENVIRONMENT = "FRAMEWORK_SPARK_HOME"
_OFF = ("off", "0", "false", "no")
_LEFT_OUT = ("spark-mllib_",)  # jar names starting so are not linked (spark-mllib-local has no extension)


def launch_home(environ: Mapping[str, str] | None = None) -> str | None:
    """The Spark home to launch a local driver JVM from (made on first use), or None to launch as Spark would
    (see the module docs)."""
    environ = os.environ if environ is None else environ
    given = environ.get(ENVIRONMENT, "").strip()
    if given.lower() in _OFF or os.name != "posix" or environ.get("SPARK_HOME") \
            or "PYSPARK_GATEWAY_PORT" in environ:
        return None
    pip_home = pip_spark_home()
    if not pip_home:
        return None
    jars = jars_of(pip_home)
    if jars is None:
        return None
    names = jars[1]
    if not any(name.startswith(_LEFT_OUT) for name in names):
        return None  # nothing to leave out: pip's home as it is
    key = hashlib.sha256(json.dumps(list(jars)).encode()).hexdigest()[:20]
    home = os.path.join(cache_folder(environ, given), f"spark-home-{key}")
    if os.path.isdir(os.path.join(home, "jars")):
        return home
    return home if _make(home, pip_home, names) else None


def cache_folder(environ: Mapping[str, str], given: str = "") -> str:
    """Where the framework keeps its Spark files (launch homes, class-data archives): ``given`` (a folder the
    user named), else ``$XDG_CACHE_HOME/manifest-framework``, else ``~/.cache/manifest-framework``."""
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return given or os.path.join(cache, "manifest-framework")


def _make(home: str, pip_home: str, names: list[str]) -> bool:
    """Make ``home`` (see the module docs); True when it is in place (made here or by another process)."""
    temp = f"{home}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.join(temp, "jars"))
        for entry in os.listdir(pip_home):
            if entry != "jars":
                os.symlink(os.path.join(pip_home, entry), os.path.join(temp, entry))
        for name in names:
            if not name.startswith(_LEFT_OUT):
                os.symlink(os.path.join(pip_home, "jars", name), os.path.join(temp, "jars", name))
        try:
            os.rename(temp, home)
        except OSError:  # another process made it first: its folder is the same
            if not os.path.isdir(os.path.join(home, "jars")):
                return False
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(temp)


__all__ = ["ENVIRONMENT", "cache_folder", "launch_home"]
