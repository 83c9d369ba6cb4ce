"""The SparkSession of a run: local by default, a cluster when asked.

pyspark is imported here and only here (lazily, by the commands that run the
pipeline): ``validate-manifest`` and protocol mode never pay for it.

* The master: ``master`` when given, else ``spark.master`` of the settings
  given, else ``SPARK_MASTER`` / ``MASTER`` / a ``--master`` in
  ``PYSPARK_SUBMIT_ARGS``, else the one ``spark-submit`` started the driver
  with, else ``spark.master`` of ``spark-defaults.conf``, else ``local[*]``.
* Settings, strongest first: ``conf`` (``run-manifest --conf``), then
  ``--conf`` of ``PYSPARK_SUBMIT_ARGS`` and ``spark-defaults.conf`` (in
  ``$SPARK_CONF_DIR``, else ``conf/`` of ``$SPARK_HOME`` or of the pip
  package's Spark: the ``spark-submit`` that PySpark starts the driver JVM
  with reads it itself), then this module's defaults, which never replace a
  key set in any of those.
* On a local master only, the driver listens on 127.0.0.1 (RPC, block manager
  and, when enabled, the web UI) unless ``spark.driver.host``,
  ``spark.driver.bindAddress``, ``SPARK_LOCAL_IP`` or ``SPARK_LOCAL_HOSTNAME``
  says otherwise; and the defaults quiet a short run: the web UI and the
  console progress bar off, the driver JVM logging errors only, the quick JIT
  tier (unless ``full_jit``), 8 shuffle partitions; the driver JVM is
  launched from a Spark home without ``spark-mllib`` unless ``SPARK_HOME``
  names one (:mod:`framework.spark.launch_home`). On any other master
  nothing is forced: the cluster's settings stand. Arrow for PySpark is on
  everywhere unless a setting says otherwise, and so is Spark 4's TIME type
  (``spark.sql.timeType.enabled``), so that the session reads the time-of-day
  columns of the Parquet files the sink lands (:data:`READS_OUR_OUTPUT`).
* JDBC drivers (for the PostgreSQL target of normalization) join
  ``spark.jars`` only when ``jdbc`` (a PostgreSQL target is used): the jars
  named by ``FRAMEWORK_JDBC_JARS`` (comma separated), else Debian's
  ``/usr/share/java/postgresql.jar`` when installed.
* Executors run the framework's Python code, so they need the package and
  its dependencies (compiled ones: pyarrow, orjson, pydantic-core...). A wheel
  in ``--py-files`` is not enough, as compiled modules cannot be imported from
  a zip: install the package into every node's Python, or ship a packed
  virtual environment with ``spark.archives`` and point ``PYSPARK_PYTHON`` at
  its ``bin/python`` (docs/cluster.md). Locally the driver's own interpreter
  is used.
* ``remote`` (``--remote sc://host:port``, or ``SPARK_REMOTE``): a Spark
  Connect session against that server (:mod:`framework.spark.connect`). The
  server owns its master, JVM settings and log level: only ``conf`` (SQL
  settings the server lets a session change) is passed on. The channel is
  tried first (:func:`framework.spark.connect_channel.tls_mismatch`: TLS
  where the URL asks for it, a certificate grpc trusts), and a token the
  server refuses is said as such; messages show the URL without its token.

Where Spark's pieces are (pip's Spark home, ``spark-defaults.conf``, the JDBC
jars) is :mod:`framework.spark.home`'s; launching the driver JVM (its stderr
forwarded, a failed start explained) is :mod:`framework.spark.launch`'s.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shlex
import signal
import sys
import tempfile
import threading
import urllib.parse
from collections.abc import Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from framework.errors import ConfigError
from framework.spark.class_archive import class_archive
from framework.spark.connect import prepare_client, remote_url
from framework.spark.connect_channel import TOKEN_VARIABLE, shown_url, tls_mismatch
from framework.spark.connect_wait import wait_for_server, wait_limit
from framework.spark.home import jdbc_jars, spark_defaults, under_spark_submit
from framework.spark.launch import SparkStartFailed, launch_jvm
from framework.spark.launch_home import launch_home
from framework.spark.pause import StartPause, children, jvm_groups, spark_children

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


#: The settings a session needs to read what the sink lands: Parquet ``TIME(MICROS, isAdjustedToUTC=false)``
#: columns are refused (UNSUPPORTED_TIME_TYPE) unless Spark's TIME type is on. A SQL setting: a session made
#: elsewhere takes it with ``spark.conf.set("spark.sql.timeType.enabled", "true")``.
READS_OUR_OUTPUT: Mapping[str, str] = {"spark.sql.timeType.enabled": "true"}


def spark_session(master: str | None = None, app_name: str = "run-manifest", *, full_jit: bool = False,
                  jdbc: bool = False, remote: str | None = None, **conf: str) -> SparkSession:
    """A SparkSession for the pipeline (created, or the active one reused); see the module docs.

    ``conf`` are Spark settings that win over every other source. A local
    JVM runs the quick JIT tier only unless ``full_jit``: that halves the
    start of a sync, whose JVM mostly passes Arrow batches along, but costs
    work done in the JVM itself (normalization: about 2x at 1,000,000 records
    in bench/normalization.py), which asks for the full JIT.
    """
    url = remote_url(remote, master)
    if url:
        return _connect_session(url, app_name, conf)
    plan = session_plan(master, conf, full_jit=full_jit, jdbc=jdbc)
    return classic_session(plan, app_name)


def classic_session(plan: SessionPlan, app_name: str,
                    start: SessionStart | None = None) -> SparkSession:
    """The classic session of ``plan``; ``start`` (a background start) is told when this process launches
    the driver JVM and, once it runs and before the SparkContext is made, its process (a
    ``subprocess.Popen``; None when the JVM was running already: not its to kill)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if plan.master:
        builder = builder.master(plan.master)
    # under spark-submit a log level is set in its JVM before the context starts (_level_before_context), not
    # by the context (which would announce its version, OS and Java first, and then the change)
    early_level = plan.settings.get("spark.log.level") if under_spark_submit() else None
    for key, value in plan.settings.items():
        if not (early_level and key == "spark.log.level"):
            builder = builder.config(key, value)
    if start is not None:
        from pyspark import SparkContext

        process = None
        with SparkContext._lock:  # the JVM first, with the settings getOrCreate would start it with
            if SparkContext._gateway is None:  # else a JVM this process runs already (not ours to kill)
                start._launching_beside = set(jvm_groups())  # JVMs launched before this one: never paused
                start._launching.set()
                process = launch_jvm(plan, app_name, stopped=lambda: start._abandoned)
        start._launched(process)
    else:
        launch_jvm(plan, app_name)
    if early_level:
        _level_before_context(early_level)
    session = builder.getOrCreate()
    if plan.quiet:
        session.sparkContext.setLogLevel("ERROR")
    return session


def quiet_conf(conf: Mapping[str, str], quiet: bool, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``conf`` with ``spark.log.level=ERROR`` added for a quiet run (``--quiet``) under ``spark-submit``: its
    JVM runs already, with Spark's default log4j profile (INFO), so the level is set in it before the
    SparkContext starts (:func:`classic_session`). Not when the level is set already (``--conf``,
    spark-defaults.conf, ``PYSPARK_SUBMIT_ARGS``); a JVM this process launches is quieted before it starts
    (:func:`session_plan`)."""
    environ = os.environ if environ is None else environ
    conf = dict(conf)
    if quiet and under_spark_submit(environ) and "spark.log.level" not in conf \
            and "spark.log.level" not in {**spark_defaults(environ), **submit_conf(environ)}:
        conf["spark.log.level"] = "ERROR"
    return conf


def _level_before_context(level: str) -> None:
    """Set the root log level of spark-submit's running JVM to ``level`` before the SparkContext starts, so
    that none of the context's start-up lines nor its jobs' INFO lines show. Spark loads its default profile
    (INFO, with a line saying so) the first time it logs, which would undo a level set before: that first
    time is made now, then the level is set. Spark applies ``spark.log.level`` itself too, but only once the
    context has announced its version, OS and Java."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        return  # a context runs already: its level is Spark's to set
    SparkContext._ensure_initialized()  # connects to spark-submit's JVM (PYSPARK_GATEWAY_PORT); starts nothing
    jvm: Any = SparkContext._jvm
    getattr(getattr(jvm.org.apache.spark.util, "Utils$"), "MODULE$").initializeLogIfNecessary(False)
    log4j = jvm.org.apache.logging.log4j
    jvm.org.apache.spark.util.Utils.setLogLevel(log4j.Level.toLevel(level.upper(), log4j.Level.ERROR))


class SessionStart:
    """A classic SparkSession starting in a background thread, as soon as this is made.

    ``future`` holds the session (or the error that stopped its start); ``plan`` is
    known at once, so a local master's parallelism is too (:meth:`parallelism`).
    :meth:`pause` holds the start at no CPU cost while the driver will not need it
    (:mod:`framework.spark.pause`: the launch waits, or the JVM this start launched
    is stopped) and :meth:`resume` lets it go on; :attr:`future` is only ever
    answered while not paused, so a caller that needs the session asks
    :meth:`session`, which resumes first. ``hold`` (seconds) begins the start
    held that long, until :meth:`pause` or :meth:`resume` says otherwise
    (:data:`framework.spark.pause.LAUNCH_HOLD_S`).
    :meth:`abandon` is for a run that ended before the session was needed: the
    JVM is killed (SIGKILL, so that none of its shutdown hooks speaks). One still
    being launched (``spark-submit`` has not handed its port over yet) is killed
    with every process under it where ``/proc`` lists them (Linux), else waited
    for first: a JVM left to start on its own would print its start-up lines after
    the command ended.
    """

    def __init__(self, master: str | None = None, app_name: str = "run-manifest", *, full_jit: bool = False,
                 jdbc: bool = False, hold: float = 0.0, **conf: str):
        self.plan = session_plan(master, conf, full_jit=full_jit, jdbc=jdbc)
        self.future: Future[SparkSession] = Future()
        self.future.set_running_or_notify_cancel()
        self._lock = threading.Lock()
        self._abandoned = False
        self._process: Any = None
        self._launch_over = threading.Event()  # the JVM runs (or its start failed)
        self._launching = threading.Event()  # this process is launching a JVM of its own (spark-submit)
        self._launching_beside: set[int] = set()  # the JVM process groups this process ran before that launch
        self._pause = StartPause(self._own_groups, hold=hold)  # `hold`: seconds to wait for pause() or resume()
        self._thread = threading.Thread(target=self._start, args=(app_name,), name="spark-start", daemon=True)
        self._thread.start()

    def parallelism(self) -> int:
        """The tasks a local master runs at once (``spark.default.parallelism`` when set)."""
        given = self.plan.settings.get("spark.default.parallelism")
        return max(1, int(given)) if given else local_cores(self.plan.master or "local[*]")

    def session(self, timeout: float | None = None) -> SparkSession:
        """The session, once up: a held or paused start goes on first (:meth:`resume`)."""
        self.resume()
        return self.future.result(timeout)

    def pause(self) -> None:
        """Hold the start where it is, at no CPU cost, until :meth:`resume` (or :meth:`abandon`)."""
        self._pause.pause()

    def resume(self) -> None:
        """Let a paused start go on (nothing when not paused)."""
        self._pause.resume()

    def _own_groups(self) -> list[int]:
        """The process group of the JVM this start launched (none while it launches none)."""
        if not self._launching.is_set():
            return []
        return [group for group in jvm_groups() if group not in self._launching_beside]

    def abandon(self, wait: float = 30.0) -> None:
        """Stop the session's start (or the session) quietly: this run does not need it."""
        # the lost connection is expected now: py4j logs it (on its loggers, and with logging.exception on root)
        logging.getLogger("py4j").setLevel(logging.CRITICAL)
        logging.getLogger().addFilter(_not_from_py4j)
        with self._lock:
            self._abandoned = True
            process = self._process
        self._pause.end()  # the JVM's process group killed (stopped or not, as one); a held launch goes, abandoned
        if process is None and not self._launch_over.is_set():
            # spark-submit is being launched: kill it and what runs under it where /proc says (Linux), else
            # wait until it hands its port over. Not launching yet: the start thread stops before it does.
            launching = _spark_submits() if self._launching.is_set() else []
            if launching is not None:
                for pid in launching:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                self._thread.join(2)
                self._forget()
                return
            self._launch_over.wait(wait)
        with self._lock:
            process = self._process
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
            self._thread.join(2)
            self._forget()

    def _forget(self) -> None:
        """PySpark forgets the gateway of the killed JVM, so a later session in this process starts a new one."""
        if not self._launching.is_set():
            return
        from pyspark import SparkContext

        with SparkContext._lock:  # there was no gateway before this start launched its own
            SparkContext._gateway = None
            SparkContext._jvm = None
            SparkContext._active_spark_context = None

    def _launched(self, process: Any) -> None:
        with self._lock:
            self._process = process
            self._launch_over.set()
            if not self._abandoned:
                return
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
        raise _Abandoned

    def _start(self, app_name: str) -> None:
        try:
            self._pause.wait()
            if self._abandoned:
                raise _Abandoned
            session = classic_session(self.plan, app_name, self)
        except BaseException as exc:  # noqa: BLE001 - the future carries it to whoever needs the session
            if isinstance(exc, Exception):  # a stream that needed Spark fails with why and the fix
                self.future.set_exception(SparkStartFailed.of(exc))
            elif not self._abandoned:
                self.future.set_exception(exc)
            return
        finally:
            self._launch_over.set()
        self.future.set_result(session)


def _not_from_py4j(record: logging.LogRecord) -> bool:
    """A logging filter: drop what py4j's own code logs (its connection to a JVM killed on purpose)."""
    return f"{os.sep}py4j{os.sep}" not in record.pathname


def _spark_submits() -> list[int] | None:
    """This process's children running ``spark-submit`` (the launching JVM) and every process under them; None
    where ``/proc`` cannot tell."""
    launching = spark_children()
    if launching is None:
        return None
    pending, tree = list(launching), []
    while pending:
        pid = pending.pop()
        tree.append(pid)
        with contextlib.suppress(OSError):
            pending.extend(children(pid))
    return tree


class _Abandoned(BaseException):
    """The run no longer needs the session being started."""


def local_cores(master: str) -> int:
    """How many tasks a local master (``local``, ``local[N]``, ``local[*]``, ``local[N,F]``) runs at once."""
    match = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if match is not None and match.group(1) is None:
        return 1
    if match is not None and match.group(1) != "*":
        return max(1, int(match.group(1)))
    return max(1, os.cpu_count() or 1)


def _connect_session(url: str, app_name: str, conf: dict[str, str]) -> SparkSession:
    """A Spark Connect session on ``url``; a server that cannot be reached is a :class:`ConfigError` naming it."""
    from pyspark.sql import SparkSession

    try:
        import pyspark.sql.connect.session  # noqa: F401 - its packages (grpcio, ...) are the `connect` extra
    except ImportError as exc:
        raise ConfigError(f"Spark Connect needs its client packages ({exc.name} is missing): "
                          "pip install 'manifest-framework[connect]'") from None
    _check_reachable(url)
    mismatch = tls_mismatch(url)  # at once: the client would retry a failed TLS handshake for minutes
    if mismatch:
        raise ConfigError(mismatch)
    prepare_client(url)  # a session of its own is released at exit; a named one stays open (connect.py)
    builder = SparkSession.builder.remote(url).appName(app_name)
    for key, value in {"spark.sql.execution.arrow.pyspark.enabled": "true", **READS_OUR_OUTPUT, **conf}.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
        session.conf.get("spark.master", None)  # the first call reaches the server
    except Exception as exc:  # noqa: BLE001 - gRPC's errors: the server is down or the URL is wrong
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "UNAUTHENTICATED" in str(exc):  # the server's spark.connect.authenticate.token: none or another
            raise ConfigError(f"the Spark Connect server at {shown_url(url)} refused the connection ({detail}): "
                              f"give the token it was started with, as ;token=... in the URL or in "
                              f"{TOKEN_VARIABLE}") from None
        if "SESSION_CLOSED" in detail:
            raise ConfigError(f"the Spark Connect session in {shown_url(url)} was closed on the server and cannot be "
                              "joined again; give a new session_id (a random UUID)") from None
        raise ConfigError(f"the Spark Connect server at {shown_url(url)} could not be reached ({detail}); start it "
                          f"(sbin/start-connect-server.sh) or fix --remote / SPARK_REMOTE") from None
    return session


def _check_reachable(url: str) -> None:
    """Fail when nothing listens at an ``sc://`` URL (the Connect client would retry for minutes), after waiting
    up to a limit for a server that refuses connections, as one that is starting does
    (:mod:`framework.spark.connect_wait`)."""
    if not url.startswith("sc://"):
        return  # "local": pyspark starts a Connect server of its own
    parsed = urllib.parse.urlparse("http://" + url[len("sc://"):].split(";", 1)[0])
    host, port = parsed.hostname or "localhost", parsed.port or 15002
    wait_for_server(host, port, shown_url(url), wait_limit())


class SessionPlan(Struct, frozen=True):
    """What :func:`spark_session` hands the builder: the master to set (None: Spark's own), the settings to
    set, and whether the driver's log level goes down to errors."""

    master: str | None
    local: bool
    settings: Mapping[str, str]
    quiet: bool
    archive: str | None = None  # the class-data archive the driver JVM maps (framework.spark.class_archive)
    home: str | None = None  # the Spark home the driver JVM is launched from (framework.spark.launch_home)


LOOPBACK = "127.0.0.1"
_ADDRESS_KEYS = ("spark.driver.host", "spark.driver.bindAddress")


def loopback_driver(given: Mapping[str, str], conf: Mapping[str, str], environ: Mapping[str, str]) -> bool:
    """Whether a local master's driver is bound to loopback: unless the user chose its address (either key in
    the settings, or ``SPARK_LOCAL_IP`` / ``SPARK_LOCAL_HOSTNAME``)."""
    return not any(key in given or key in conf for key in _ADDRESS_KEYS) and not (
        environ.get("SPARK_LOCAL_IP") or environ.get("SPARK_LOCAL_HOSTNAME"))


def session_plan(master: str | None = None, conf: Mapping[str, str] | None = None, *, full_jit: bool = False,
                 jdbc: bool = False, environ: Mapping[str, str] | None = None) -> SessionPlan:
    """The master and settings of a session (see the module docs); pure but for reading spark-defaults.conf
    and, on a local master, finding (the first time, making) the Spark home the JVM is launched from
    (:func:`framework.spark.launch_home.launch_home`) and its class-data archive."""
    environ = os.environ if environ is None else environ
    conf = dict(conf or {})
    given = {**spark_defaults(environ), **submit_conf(environ)}  # what Spark reads itself: ours never replace it
    chosen = master or conf.get("spark.master") or environment_master(environ)
    to_set = chosen
    if not chosen and not under_spark_submit(environ) and not given.get("spark.master"):
        chosen = to_set = "local[*]"
    elif not chosen:
        chosen = given.get("spark.master")  # None under spark-submit: its master, unknown until the session runs
    local = chosen is not None and chosen.startswith("local")
    settings = {"spark.sql.execution.arrow.pyspark.enabled": "true", **READS_OUR_OUTPUT,
                # workers forked with the framework imported already (framework/spark/daemon.py); executors
                # have the framework installed wherever they run a task
                "spark.python.daemon.module": "framework.spark.daemon"}
    if local:
        settings.update({
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "8",
            "spark.python.worker.reuse": "true",
        })
        java_options = []
        log_config = _quiet_log_config()
        if log_config:
            java_options.append(f"-Dlog4j2.configurationFile={log_config}")
        if not full_jit:
            # A local sync is short and its JVM mostly passes Arrow batches around: the quick JIT tier
            # starts Spark in about half the time (measured in bench/pipeline.py), at no cost there.
            java_options.append("-XX:TieredStopAtLevel=1")
        if java_options:
            settings["spark.driver.extraJavaOptions"] = " ".join(java_options)
        if loopback_driver(given, conf, environ):
            # A local Spark is this machine's alone: its driver (RPC, block manager) listens on loopback, not
            # on the machine's network address (framework.spark.launch sets SPARK_LOCAL_IP for the web UI)
            settings.update({"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK})
    settings = {key: value for key, value in settings.items() if key not in given and key not in conf}
    archive = home = None
    if local:
        home = launch_home(environ)
    if local and "spark.driver.defaultJavaOptions" not in given and "spark.driver.defaultJavaOptions" not in conf:
        found = class_archive(environ)  # of the class path launch_home gives, as the JVM's
        if found is not None and found.usable():
            settings["spark.driver.defaultJavaOptions"] = found.java_options()
            archive = found.path
    jars = jdbc_jars(environ) if jdbc else None
    if jars:
        present = conf.get("spark.jars") or given.get("spark.jars")
        conf["spark.jars"] = f"{present},{jars}" if present else jars
    settings.update(conf)
    quiet = local and "spark.log.level" not in given and "spark.log.level" not in conf
    return SessionPlan(to_set, local, settings, quiet, archive, home)


def submit_conf(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``--conf key=value`` (and ``--master``, as ``spark.master``) of ``PYSPARK_SUBMIT_ARGS``."""
    environ = os.environ if environ is None else environ
    try:
        words = shlex.split(environ.get("PYSPARK_SUBMIT_ARGS", ""))
    except ValueError:
        return {}
    found: dict[str, str] = {}
    for word, following in zip(words, [*words[1:], ""]):
        if word in ("--conf", "-c") and "=" in following:
            key, _, value = following.partition("=")
            found[key] = value
        elif word.startswith("--conf=") and "=" in word[7:]:
            key, _, value = word[7:].partition("=")
            found[key] = value
        elif word == "--master" and following:
            found["spark.master"] = following
    return found


def environment_master(environ: Mapping[str, str] | None = None) -> str | None:
    """The master the environment names (``SPARK_MASTER``, ``MASTER``, a ``--master`` of
    ``PYSPARK_SUBMIT_ARGS``), or None."""
    environ = os.environ if environ is None else environ
    return (environ.get("SPARK_MASTER") or environ.get("MASTER") or submit_conf(environ).get("spark.master")
            or None)


def known_master(master: str | None = None, conf: Mapping[str, str] | None = None,
                 environ: Mapping[str, str] | None = None) -> str | None:
    """The master a session would use, as far as it is known before Spark starts (None under
    ``spark-submit`` when nothing else names it: only the session knows it then)."""
    environ = os.environ if environ is None else environ
    chosen = master or (conf or {}).get("spark.master") or environment_master(environ)
    if chosen:
        return chosen
    from_file = spark_defaults(environ).get("spark.master")
    if from_file:
        return from_file
    return None if under_spark_submit(environ) else "local[*]"


# Spark's own start-up chatter (WARN lines, "Using Spark's default log4j profile", "Setting default log
# level") would drown the progress on stderr: the driver JVM logs errors only. The root stays at WARN so
# Spark does not announce a changed shell level; the appender drops everything below ERROR. A failed task
# (a full disk, say) comes back to the pipeline, which says in one line what failed and what was kept: the
# executor's and the scheduler's own report of it (the task's stack trace, some 170 lines, at ERROR) stay
# off the console. Anything else at ERROR still shows.
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = fatal
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = fatal
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


__all__ = ["READS_OUR_OUTPUT", "SessionPlan", "SessionStart", "classic_session", "environment_master", "known_master",
           "local_cores", "session_plan", "spark_session", "submit_conf"]
