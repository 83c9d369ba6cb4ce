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
  and, once it is over, starts ``python -m framework.spark.class_archive`` on
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
from collections.abc import Iterator, Mapping
from typing import Any

from msgspec import Struct

ENVIRONMENT = "FRAMEWORK_SPARK_CLASS_ARCHIVE"
_OFF = ("off", "0", "false", "no")
_QUIET = "-Xlog:cds*=off"  # the JVM's notes on classes it cannot archive, or on an archive it cannot use
_STALE_LOCK_S = 15 * 60
_BUILD_TIMEOUT_S = 10 * 60
_OLD_DAYS = 7.0
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
        return f"-XX:SharedArchiveFile={self.path} {_QUIET}"

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
    from framework.spark.launch_home import cache_folder, jars_of, launch_home
    from framework.spark.session import _pip_spark_home

    # the home a local driver JVM is launched from (framework.spark.launch_home): its class path is the archive's
    home = environ.get("SPARK_HOME") or launch_home(environ) or _pip_spark_home()
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
    import framework

    root = os.path.dirname(os.path.dirname(os.path.abspath(framework.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        return subprocess.Popen([sys.executable, "-m", "framework.spark.class_archive", archive.path],
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


@contextlib.contextmanager
def _locked(archive: ClassArchive) -> Iterator[bool]:
    """Hold the archive's lock file (True), or say another builder holds it (False)."""
    os.makedirs(os.path.dirname(archive.path), exist_ok=True)
    if os.path.exists(archive.lock) and not archive.building():
        with contextlib.suppress(OSError):
            os.unlink(archive.lock)  # a builder that died
    try:
        descriptor = os.open(archive.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        yield False
        return
    os.write(descriptor, str(os.getpid()).encode())
    os.close(descriptor)
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(archive.lock)


def _warm(batches: Iterator[Any]) -> Iterator[Any]:
    """The archive run's task: passes its batches on (a sync's tasks do their work in Python)."""
    yield from batches


def build(archive: ClassArchive, timeout: float = _BUILD_TIMEOUT_S) -> bool:
    """Make ``archive``: a local session with ``-XX:ArchiveClassesAtExit``, one ``mapInArrow`` job, the JVM's
    exit; True when the archive is in place (False: another builder is at it, or the JVM wrote nothing)."""
    from framework.spark.session import _classic_session, session_plan
    from framework.values import replace

    with _locked(archive) as mine:
        if not mine or archive.usable():
            return archive.usable()
        temp = f"{archive.path}.{os.getpid()}.tmp"
        plan = session_plan("local[2]", environ={**os.environ, ENVIRONMENT: "off"})
        settings = dict(plan.settings)
        settings["spark.driver.defaultJavaOptions"] = f"-XX:ArchiveClassesAtExit={temp} {_QUIET}"
        try:
            session = _classic_session(replace(plan, settings=settings), "class-archive")
            import pyarrow as pa
            from pyspark import SparkContext

            frame = session.createDataFrame(pa.table({"core": [0, 1]})).coalesce(1)
            frame.mapInArrow(_warm, "core bigint").toArrow()
            process = getattr(SparkContext._gateway, "proc", None)
            session.stop()
            if process is None:
                return False
            process.stdin.close()  # the gateway's JVM exits when its input ends, writing the archive first
            process.wait(timeout)
            size = os.stat(temp).st_size if os.path.exists(temp) else 0
            if process.returncode != 0 or size == 0:
                _mark_failed(archive)
                return False
            record = f"{archive.record}.{os.getpid()}.tmp"
            with open(record, "w", encoding="utf-8") as handle:
                json.dump({"size": size}, handle)
            os.replace(record, archive.record)
            os.replace(temp, archive.path)
            _drop_old(archive)
            with contextlib.suppress(OSError):
                os.unlink(archive.failed)
            return True
        except Exception:  # noqa: BLE001 - no Java, a folder that takes no files...: not tried again for a day
            _mark_failed(archive)
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp)


__all__ = ["ENVIRONMENT", "ClassArchive", "build", "build_in_background", "class_archive"]


def _mark_failed(archive: ClassArchive) -> None:
    with contextlib.suppress(OSError), open(archive.failed, "w", encoding="utf-8") as handle:
        handle.write(str(os.getpid()))


def _drop_old(kept: ClassArchive, days: float = _OLD_DAYS) -> None:
    """Remove the other archives of the folder made over ``days`` ago (an older Java or Spark's, most likely;
    one still in use is made again by its next sync)."""
    folder = os.path.dirname(kept.path)
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if not (name.startswith("spark-") and name.endswith(".jsa")) or path == kept.path:
            continue
        other = ClassArchive(path)
        try:
            made = os.stat(other.record).st_mtime
        except OSError:
            made = 0.0
        if time.time() - made > days * 86400:
            other.remove()


if __name__ == "__main__":
    with contextlib.suppress(OSError):
        os.nice(19)
    sys.exit(0 if build(ClassArchive(sys.argv[1])) else 1)
