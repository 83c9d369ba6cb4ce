"""The driver JVM of a local session, launched by this process: its stderr forwarded, and why it did not start.

:func:`launch_jvm` starts the JVM the way PySpark's ``getOrCreate`` would
(the same settings), from the Spark home of the session's plan
(:mod:`framework.spark.launch_home`), with its class-data archive
(:mod:`framework.spark.class_archive`: one the JVM does not start with is
dropped and the JVM started again without it), in a process group of its own
where it can be (so :mod:`framework.spark.pause` can hold it). Its stderr goes
through :func:`forward_jvm_stderr`, which drops one notice that tells a user
nothing; a JVM that does not start is a :class:`SparkStartFailed` naming the
reason and the fix. pyspark is imported lazily, by the launch itself.
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from framework.errors import ConfigError
from framework.spark.class_archive import ClassArchive
from framework.spark.home import under_spark_submit


class LaunchPlan(Protocol):
    """What a launch takes of a session's plan (:class:`framework.spark.session.SessionPlan`)."""

    @property
    def master(self) -> str | None: ...

    @property
    def settings(self) -> Mapping[str, str]: ...

    @property
    def archive(self) -> str | None: ...  # the class-data archive the driver JVM maps

    @property
    def home(self) -> str | None: ...  # the Spark home the driver JVM is launched from


# Spark 4's launcher starts every JVM with --add-modules=jdk.incubator.vector (its JavaModuleOptions, not a
# setting), and the JVM then says so on stderr at each start, a line that tells a user nothing. No JVM option
# turns that one notice off, so the driver JVM's stderr goes through a pipe that drops exactly that line and
# passes every other byte on to ours as it comes (a JVM that fails to start still says why).
_JVM_NOTICE = b"WARNING: Using incubator modules: jdk.incubator.vector"


def launch_jvm(plan: LaunchPlan, app_name: str,
               stopped: Callable[[], bool] = lambda: False) -> subprocess.Popen | None:
    """Start the driver JVM the way ``getOrCreate`` would (the same settings), its stderr (file descriptor 2,
    where it would write) filtered; its process (``spark-submit``'s), or None when a JVM is up already (an
    earlier session, ``spark-submit``) and nothing was started. ``stopped()`` says the launch was stopped
    on purpose (an abandoned :class:`framework.spark.session.SessionStart` killed it): then a JVM that did not
    start is not blamed on the class-data archive, which stays, and none is started again."""
    from pyspark import SparkConf
    from pyspark.core.context import SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or under_spark_submit():
        return None
    conf = SparkConf().setAppName(app_name)
    if plan.master:
        conf.setMaster(plan.master)
    for key, value in plan.settings.items():
        conf.set(key, value)
    read_end, write_end = os.pipe()
    said: collections.deque[bytes] = collections.deque(maxlen=3)  # the launcher's last lines, for the error
    forwarder = threading.Thread(target=forward_jvm_stderr, args=(read_end, 2, said),
                                 name="jvm-stderr", daemon=True)
    forwarder.start()
    try:
        with spark_home_set(plan.home), _local_ip_set(plan.settings.get("spark.driver.bindAddress")):
            try:
                gateway = launch_gateway(conf, popen_kwargs=_popen_kwargs(write_end))
            except Exception:
                if not plan.archive or stopped():
                    raise
                # a class-data archive the JVM did not start with: dropped (made again later), started without it
                ClassArchive(plan.archive).remove()
                conf.set("spark.driver.defaultJavaOptions", "")
                gateway = launch_gateway(conf, popen_kwargs=_popen_kwargs(write_end))
    except BaseException as exc:
        os.close(write_end)
        forwarder.join(timeout=5)  # the JVM's last words (why it did not start) reach stderr first
        if isinstance(exc, Exception):
            raise SparkStartFailed.of(exc, [line.decode(errors="replace") for line in said]) from None
        raise
    os.close(write_end)  # the JVM holds its own copy
    SparkContext._ensure_initialized(gateway=gateway)
    return getattr(gateway, "proc", None)


@contextlib.contextmanager
def spark_home_set(home: str | None) -> Iterator[None]:
    """``SPARK_HOME`` set to ``home`` while the driver JVM is launched (pyspark's launcher takes the environment
    whole: its ``spark-submit`` then builds the class path from that home), as it was afterwards."""
    if home is None:
        yield
        return
    before = os.environ.get("SPARK_HOME")
    os.environ["SPARK_HOME"] = home
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SPARK_HOME", None)
        else:
            os.environ["SPARK_HOME"] = before


@contextlib.contextmanager
def _local_ip_set(bind_address: str | None) -> Iterator[None]:
    """``SPARK_LOCAL_IP`` set to a loopback ``bind_address`` while the driver JVM is launched: Spark's web UI
    binds to it (else to every interface), which no setting says; unset again afterwards."""
    if bind_address != "127.0.0.1" or os.environ.get("SPARK_LOCAL_IP"):
        yield
        return
    os.environ["SPARK_LOCAL_IP"] = bind_address
    try:
        yield
    finally:
        os.environ.pop("SPARK_LOCAL_IP", None)


def _popen_kwargs(stderr: int) -> dict[str, Any]:
    """How ``spark-submit`` is started: its stderr to ``stderr`` and, on POSIX with Python 3.11 or later, in a
    process group of its own, so that the JVM and every process under it can be paused as one
    (:mod:`framework.spark.pause`; elsewhere a launched JVM is never paused)."""
    own_group = os.name == "posix" and sys.version_info >= (3, 11)
    return {"stderr": stderr, **({"process_group": 0} if own_group else {})}


class SparkStartFailed(ConfigError):
    """The local Spark session could not start (most often: no Java); the message says why and the fix."""

    @classmethod
    def of(cls, error: BaseException, said: Sequence[str] = ()) -> SparkStartFailed:
        """The failure of a start that raised ``error``, the launcher having said ``said`` (its last lines)."""
        if isinstance(error, SparkStartFailed):
            return error
        reason = next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)
        lines = [line.strip() for line in said if line.strip()]
        told = f" (the launcher said: {' / '.join(lines)})" if lines else ""
        launch = "JAVA_GATEWAY_EXITED" in reason or any("java" in line.lower() for line in lines)
        fix = ("install Java 17 or newer and put it on PATH or in JAVA_HOME" if launch
               else "see Spark's lines above on stderr")
        return cls(f"Spark could not start: {reason}{told}; fix: {fix}")


def forward_jvm_stderr(source: int, target: int, said: collections.deque[bytes] | None = None) -> None:
    """Copy lines from file descriptor ``source`` to ``target`` until the writers close it, leaving out
    the JVM's incubator-module notice (:data:`_JVM_NOTICE`); ``source`` is closed at the end. ``said``
    (a bounded deque) gets the lines passed on, to quote when the JVM did not start."""
    with os.fdopen(source, "rb", buffering=0) as pipe:
        pending = b""
        continued = False  # the line in ``pending`` began in bytes passed on already: never the notice
        while True:
            chunk = pipe.read(65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            kept = b"".join(line + b"\n" for number, line in enumerate(lines)
                            if (continued and number == 0) or line.rstrip(b"\r") != _JVM_NOTICE)
            if lines:
                continued = False
            if pending and (continued or not _JVM_NOTICE.startswith(pending)):  # cannot be the notice
                kept, pending, continued = kept + pending, b"", True
            if kept:
                _write_all(target, kept)
                if said is not None:
                    said.extend(kept.splitlines())
        if pending and (continued or pending.rstrip(b"\r") != _JVM_NOTICE):
            _write_all(target, pending)
            if said is not None:
                said.append(pending)


def _write_all(target: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(target, data):]
    except OSError:  # our stderr is gone (a closed pipe): nothing to tell anyone
        pass


__all__ = ["LaunchPlan", "SparkStartFailed", "forward_jvm_stderr", "launch_jvm", "spark_home_set"]
