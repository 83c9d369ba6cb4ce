"""What differs between a classic SparkSession and a Spark Connect one, in one place.

Spark Connect (``--remote sc://host:port`` or ``SPARK_REMOTE``) runs the
DataFrame API against a server: the client has no ``SparkContext`` and no
JVM, so everything the pipeline asked of ``sparkContext`` is asked here
instead, for either kind of session:

* :func:`default_parallelism`: the classic context's, or (Connect) the
  server's ``spark.default.parallelism`` when set, else the partitions of a
  ``spark.range`` that takes the server's default (one small job);
* :func:`tag_jobs` / :func:`cancel_jobs`: a job group (classic) or a job tag
  (Connect's ``addTag`` / ``interruptTag``), both per thread, to stop the
  jobs of an interrupted sync;
* :func:`services_bind`: where the driver's sync-wide services
  (:mod:`framework.coordination`) listen, and the address the tasks get, or
  None when the tasks cannot reach this process (see the function);
* :func:`session_id` and :func:`prepare_client`: a sync that joins a named
  session (``sc://host:port/;session_id=UUID``) keeps it open for the next
  one; any other sync releases its own session when it ends.

Why a named session, for a scheduler that runs many syncs on one warm server
(docs/cluster.md, "Running many connectors"): the server starts its Python
workers per session (a worker daemon per session's artifact id, pyspark's
``SPARK_JOB_ARTIFACT_UUID``), so every new session pays a daemon's start, the
framework's imports and the connector's build again; syncs that share one
session reuse warm workers, which keep the last connector built. The
parallelism probe's answer is kept in the session's conf too.

The task functions handed to ``mapInArrow`` are pickled by the Connect client
(cloudpickle) and run by the server's Python workers, which must import
``framework``: install the package into the server's Python (docs/cluster.md,
"Spark Connect").
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from framework.errors import ConfigError
from framework.spark.connect_channel import shown_url

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: How many rows the parallelism probe spreads: more than any cluster has cores, few enough to count at once.
_PROBE_ROWS = 1 << 16
#: Where a Connect session keeps the probe's answer for the next sync that joins it (a session conf of ours).
PARALLELISM_KEY = "spark.manifestFramework.defaultParallelism"
#: Settings for a Spark Connect server that runs syncs (its ``--conf``): Python workers forked with the
#: framework imported (framework/spark/daemon.py) and kept for the next task.
SERVER_CONF = {"spark.python.daemon.module": "framework.spark.daemon", "spark.python.worker.reuse": "true"}


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (its class lives in ``pyspark.sql.connect``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def remote_url(remote: str | None, master: str | None = None) -> str | None:
    """The Spark Connect URL to use: ``remote`` (``--remote``), else ``SPARK_REMOTE``; None for classic Spark.

    A master and a remote together are refused (Spark Connect's server has its own master).
    """
    url = remote or os.environ.get("SPARK_REMOTE") or None
    if url and master:
        source = "--remote" if remote else "SPARK_REMOTE"
        raise ConfigError(f"--master {master} and {source} {shown_url(url)} were both given: a Spark Connect server "
                          f"has its own master; drop --master (or unset SPARK_REMOTE) to run on the cluster you mean")
    if url and not (url.startswith("sc://") or url.startswith("local")):
        raise ConfigError(f"{'--remote' if remote else 'SPARK_REMOTE'} {shown_url(url)!r} is not a Spark Connect URL; "
                          "give sc://host:port (15002 is the server's default port)")
    return url


def default_parallelism(spark: SparkSession) -> int:
    """How many tasks the session's cluster runs at once (at least 1)."""
    if not is_connect(spark):
        return max(1, int(spark.sparkContext.defaultParallelism))
    for key in ("spark.default.parallelism", PARALLELISM_KEY):
        given = spark.conf.get(key, None)
        if given:
            return max(1, int(given))
    from pyspark.sql import functions as F

    # spark.range without a partition count is cut into the server's default parallelism (as
    # sparkContext.defaultParallelism, or spark.sql.leafNodeDefaultParallelism when set): count them.
    parts = spark.range(0, _PROBE_ROWS).select(F.spark_partition_id().alias("part"))
    row = parts.agg(F.max("part").alias("last")).first()
    found = max(1, int(row["last"]) + 1) if row is not None and row["last"] is not None else 1
    spark.conf.set(PARALLELISM_KEY, str(found))  # the next sync in this session asks no job
    return found


def session_id(url: str) -> str | None:
    """The ``session_id`` parameter of a Spark Connect URL (``sc://host:port/;session_id=UUID``), or None."""
    for param in url.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip() == "session_id" and value.strip():
            return value.strip()
    return None


def prepare_client(url: str, environ: MutableMapping[str, str] | None = None) -> None:
    """Before the Connect client starts: a sync in a session of its own releases it on the server when it
    ends (its state and artifacts go at once, not after the server's idle timeout); one that joined a named
    session leaves it open for the next sync (pyspark's ``SPARK_CONNECT_RELEASE_SESSION_ON_EXIT``)."""
    target = os.environ if environ is None else environ
    target.setdefault("SPARK_CONNECT_RELEASE_SESSION_ON_EXIT", "false" if session_id(url) else "true")


def describe(spark: SparkSession) -> str:
    """Where the session runs, for people: the master, or ``sc://host:port (the server's master)``."""
    if not is_connect(spark):
        return spark.sparkContext.master or ""
    master = spark.conf.get("spark.master", None) or "?"
    return f"sc://{spark.client.host} ({master})"


def tag_jobs(spark: SparkSession, tag: str, description: str) -> None:
    """Mark the jobs this thread starts from now on with ``tag`` (a job group on classic Spark)."""
    if is_connect(spark):
        spark.addTag(tag)
    else:
        spark.sparkContext.setJobGroup(tag, description, interruptOnCancel=True)


def untag_jobs(spark: SparkSession, tag: str) -> None:
    """Stop marking this thread's jobs with ``tag`` (a pool thread may run other work next)."""
    if is_connect(spark):  # a classic job group is replaced by the next one the thread sets
        spark.removeTag(tag)


def cancel_jobs(spark: SparkSession, tag: str) -> None:
    """Cancel the running jobs marked with ``tag`` (their tasks are killed, their Python workers too)."""
    if is_connect(spark):
        spark.interruptTag(tag)
    else:
        spark.sparkContext.cancelJobGroup(tag)


def services_bind(spark: SparkSession, services_host: str | None = None) -> tuple[str, str | None] | None:
    """Where the driver's sync-wide services listen and the host the tasks dial (None: the bound address).

    * ``services_host`` given (``--services-host``): every interface, reached at that name or address;
    * classic Spark: loopback on a local master; else every interface at Spark's own
      ``spark.driver.host``, which the executors reach already;
    * Spark Connect: loopback when the server is on this machine (a loopback address in the URL) and
      runs a local master, so its tasks run here too; otherwise None: the tasks cannot be assumed to
      reach this client, and the sync runs without the services (see :func:`no_services_warning`).
    """
    if services_host:
        return "0.0.0.0", services_host
    master = spark.conf.get("spark.master", None) or "local"
    if not is_connect(spark):
        if master.startswith("local"):
            return "127.0.0.1", None
        return "0.0.0.0", spark.conf.get("spark.driver.host", None) or socket.gethostname()
    if master.startswith("local") and _loopback(spark.client.host):
        return "127.0.0.1", None
    return None


def no_services_warning(spark: SparkSession, services: list[str]) -> str:
    """What running without the driver's services means, for the user (``services``: their names)."""
    return (f"the Spark Connect server at {describe(spark)} may run its tasks where this client cannot be "
            f"reached, so the sync-wide services ({', '.join(sorted(services))}) are not shared: each task "
            "keeps its own (its own OAuth token, its own API budget, so the API may see up to one budget per "
            "task); give --services-host with an address of this machine that the executors reach to share them")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


__all__ = ["PARALLELISM_KEY", "SERVER_CONF", "cancel_jobs", "default_parallelism", "describe", "is_connect",
           "no_services_warning", "prepare_client", "remote_url", "services_bind", "session_id", "tag_jobs",
           "untag_jobs"]
