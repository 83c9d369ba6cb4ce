"""The process that makes a class-data archive (:mod:`framework.spark.class_archive`): ``python -m
framework.spark.class_archive_builder PATH``.

A sync that found no archive starts it once it is over
(:func:`framework.spark.class_archive.build_in_background`), on its own and at
the lowest CPU priority: it starts a local session with
``-XX:ArchiveClassesAtExit``, runs one ``mapInArrow`` job like a sync's,
stops, and moves the finished archive into place (written to a temporary name
first, then its size record, then renamed). A lock file keeps it to one at a
time; one older than 15 minutes is taken as left by a process that died. A
try that fails leaves a ``.failed`` marker (none is tried again for a day);
one that succeeds removes the folder's other archives made over a week ago.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from framework.spark.class_archive import ENVIRONMENT, QUIET_OPTION, ClassArchive
from framework.spark.session import classic_session, session_plan
from framework.values import replace

_BUILD_TIMEOUT_S = 10 * 60
_OLD_DAYS = 7.0


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
    with _locked(archive) as mine:
        if not mine or archive.usable():
            return archive.usable()
        temp = f"{archive.path}.{os.getpid()}.tmp"
        plan = session_plan("local[2]", environ={**os.environ, ENVIRONMENT: "off"})
        settings = dict(plan.settings)
        settings["spark.driver.defaultJavaOptions"] = f"-XX:ArchiveClassesAtExit={temp} {QUIET_OPTION}"
        try:
            session = classic_session(replace(plan, settings=settings), "class-archive")
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


__all__ = ["build"]


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
