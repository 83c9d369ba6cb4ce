"""A class-data archive of Spark's classes for the local driver JVM: its start takes about a third less.

A local sync's driver JVM spends most of its start loading, parsing and
verifying some 10,000 classes from Spark's jars, and Spark's first job loads
more. Java 13 and newer can write the classes a run loaded into an archive at
its exit (``-XX:ArchiveClassesAtExit``) and map that archive into later JVMs
(``-XX:SharedArchiveFile``), which then skip that work: on 2 cores the session
start and the first job took 2.2 s less (7.2 s to 5.0 s, bench/README.md).

* **Where.** One archive per Java and Spark (``spark-<key>.jsa``, 150 MB or
  so, with a small ``.json`` record of its size) in
  ``$FRAMEWORK_SPARK_CLASS_ARCHIVE`` when that names a folder, else
  ``$XDG_CACHE_HOME/manifest-framework`` or ``~/.cache/manifest-framework``.
  The key is a digest of the ``java`` that Spark's launcher runs (its path and
  the JDK's ``release`` file), Spark's jars folder (its path, file names and
  time of change: the folder of the home the JVM is launched from,
  :mod:`framework.spark.launch_home`) and its configuration folder: a new Java
  or Spark gets an archive of its own.
  ``FRAMEWORK_SPARK_CLASS_ARCHIVE=off`` turns all of it off. Making one
  removes the folder's other archives made over a week ago.
* **Made in the background.** A sync that finds no archive runs without one
  and, once it is over, starts ``python -m framework.spark.class_archive_builder`` on
  its own (a new session, at the lowest CPU priority, output discarded): that
  process starts a local session with ``-XX:ArchiveClassesAtExit``, runs one
  ``mapInArrow`` job like a sync's, stops, and moves the finished archive into
  place (written to a temporary name first, then its size record, then
  renamed). A lock file keeps it to one at a time; one older than 15 minutes
  is taken as left by a process that died. None is started where the folder
  cannot take files, nor for a day after one failed (a ``.failed`` marker).
* **Never fails a sync.** An archive is used only when its size is the one
  recorded; the JVM checks the rest (its own version, the jars' sizes and
  times, the class path) and quietly runs without it when they differ
  (``-Xlog:cds*=off``). A driver JVM that does not start with it is started
  again without it, and the archive is removed, to be made again.
* The options go in ``spark.driver.defaultJavaOptions`` (placed before
  ``spark.driver.extraJavaOptions``), and only on a local master, when that
  setting is not given.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping

from msgspec import Struct

from framework.spark.home import jars_of, pip_spark_home
from framework.spark.launch_home import cache_folder, launch_home

ENVIRONMENT = "FRAMEWORK_SPARK_CLASS_ARCHIVE"
_OFF = ("off", "0", "false", "no")
#: The JVM's notes on classes it cannot archive, or on an archive it cannot use, off.
QUIET_OPTION = "-Xlog:cds*=off"
_STALE_LOCK_S = 15 * 60
_RETRY_AFTER_S = 24 * 3600


class ClassArchive(Struct, frozen=True):
    """The archive for this Java and Spark: ``path`` (the ``.jsa``), whether or not it exists yet."""

    path: str

    @property
    def record(self) -> str:
        """The small JSON file holding the archive's size, written before the archive is moved into place."""
        return self.path[:-len(".jsa")] + ".json"

    @property
    def lock(self) -> str:
        return self.path + ".lock"

    @property
    def failed(self) -> str:
        """A marker: the last try to make this archive failed (none is tried again for a day)."""
        return self.path + ".failed"

    def usable(self) -> bool:
        """The archive is there, whole (its size is the recorded one)."""
        try:
            with open(self.record, encoding="utf-8") as handle:
                size = json.load(handle)["size"]
            return isinstance(size, int) and size > 0 and os.stat(self.path).st_size == size
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def java_options(self) -> str:
        """The driver JVM's options that map the archive."""
        return f"-XX:SharedArchiveFile={self.path} {QUIET_OPTION}"

    def remove(self) -> None:
        """Drop the archive (a JVM did not start with it): the next sync makes it again."""
        for path in (self.record, self.path):
            with contextlib.suppress(OSError):
                os.unlink(path)

    def building(self) -> bool:
        """A builder holds the lock (and is not a dead one's leftover)."""
        try:
            return time.time() - os.stat(self.lock).st_mtime < _STALE_LOCK_S
        except OSError:
            return False


def class_archive(environ: Mapping[str, str] | None = None) -> ClassArchive | None:
    """The archive for the Java and Spark a local session would start (None when turned off, or when no
    ``java`` or no Spark jars are found)."""
    environ = os.environ if environ is None else environ
    given = environ.get(ENVIRONMENT, "").strip()
    if given.lower() in _OFF:
        return None
    java = _java(environ)
    # the home a local driver JVM is launched from (framework.spark.launch_home): its class path is the archive's
    home = environ.get("SPARK_HOME") or launch_home(environ) or pip_spark_home()
    if java is None or not home:
        return None
    jars = jars_of(home)
    if jars is None:
        return None
    java_home = os.path.dirname(os.path.dirname(java))
    try:
        with open(os.path.join(java_home, "release"), "rb") as handle:
            release = handle.read()
    except OSError:
        release = b""
    conf_dir = environ.get("SPARK_CONF_DIR") or os.path.join(home, "conf")
    key = hashlib.sha256(json.dumps([java, release.decode(errors="replace"), *jars,
                                     os.path.realpath(conf_dir)]).encode()).hexdigest()[:20]
    return ClassArchive(os.path.join(cache_folder(environ, given), f"spark-{key}.jsa"))


def _java(environ: Mapping[str, str]) -> str | None:
    """The ``java`` Spark's launcher runs (``$JAVA_HOME/bin/java``, else the one on PATH), resolved."""
    home = environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java", path=environ.get("PATH"))
    return os.path.realpath(found) if found and os.path.isfile(found) else None


def build_in_background(archive: ClassArchive) -> subprocess.Popen[bytes] | None:
    """Start a process, on its own and at the lowest CPU priority, that makes ``archive`` (None when one is
    at it already or it cannot be started)."""
    if archive.building() or archive.usable() or _failed_lately(archive) or not _writable(archive.path):
        return None
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the package's folder's parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        return subprocess.Popen([sys.executable, "-m", "framework.spark.class_archive_builder", archive.path],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, env=env)
    except OSError:
        return None


def _failed_lately(archive: ClassArchive) -> bool:
    try:
        return time.time() - os.stat(archive.failed).st_mtime < _RETRY_AFTER_S
    except OSError:
        return False


def _writable(path: str) -> bool:
    """Whether the nearest existing folder above ``path`` takes new files."""
    folder = os.path.dirname(path)
    while folder and not os.path.isdir(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return bool(folder) and os.access(folder, os.W_OK | os.X_OK)


__all__ = ["ENVIRONMENT", "QUIET_OPTION", "ClassArchive", "build_in_background", "class_archive"]
