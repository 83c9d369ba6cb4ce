"""framework.spark.connect's choices without a server: the URL, where the services listen, the parallelism."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from spark.test_pipeline import MANIFEST, config_for, saved_state, serve, settings_for

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.errors import ConfigError
from framework.spark import connect
from framework.spark import pipeline as pipeline_module


@dataclass
class Conf:
    values: dict[str, str] = field(default_factory=dict)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


@dataclass
class Client:
    host: str


class ClassicSession:  # what connect.py asks of a classic session
    def __init__(self, **conf: str) -> None:
        self.conf = Conf(dict(conf))


class ConnectSession:
    def __init__(self, host: str, **conf: str) -> None:
        self.conf = Conf(dict(conf))
        self.client = Client(host)


ConnectSession.__module__ = "pyspark.sql.connect.session"  # how connect.is_connect tells the two apart


def test_the_remote_url_comes_from_the_flag_then_spark_remote(monkeypatch):
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert connect.remote_url(None) is None
    assert connect.remote_url("sc://spark.example:15002") == "sc://spark.example:15002"
    monkeypatch.setenv("SPARK_REMOTE", "sc://from-env:15002")
    assert connect.remote_url(None) == "sc://from-env:15002"
    assert connect.remote_url("sc://flag:1") == "sc://flag:1"


def test_a_master_with_a_remote_or_a_url_that_is_not_sc_is_refused(monkeypatch):
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    with pytest.raises(ConfigError, match=r"--master local\[2\] and --remote sc://h:1 were both given.*drop"):
        connect.remote_url("sc://h:1", "local[2]")
    monkeypatch.setenv("SPARK_REMOTE", "sc://h:1")
    with pytest.raises(ConfigError, match="and SPARK_REMOTE sc://h:1 were both given"):
        connect.remote_url(None, "spark://m:7077")
    with pytest.raises(ConfigError, match=r"--remote 'http://h:1' is not a Spark Connect URL; give sc://host:port"):
        connect.remote_url("http://h:1")


@pytest.mark.parametrize(("session", "services_host", "expected"), [
    (ClassicSession(**{"spark.master": "local[4]"}), None, ("127.0.0.1", None)),
    (ClassicSession(**{"spark.master": "spark://m:7077", "spark.driver.host": "10.0.0.5"}), None,
     ("0.0.0.0", "10.0.0.5")),
    (ConnectSession("127.0.0.1", **{"spark.master": "local[2]"}), None, ("127.0.0.1", None)),
    (ConnectSession("localhost", **{"spark.master": "local[*]"}), None, ("127.0.0.1", None)),
    (ConnectSession("::1", **{"spark.master": "local[*]"}), None, ("127.0.0.1", None)),
    (ConnectSession("127.0.0.1", **{"spark.master": "spark://m:7077"}), None, None),  # executors elsewhere
    (ConnectSession("spark.example", **{"spark.master": "local[*]"}), None, None),  # another machine
    (ConnectSession("spark.example", **{"spark.master": "yarn"}), "10.1.2.3", ("0.0.0.0", "10.1.2.3")),
    (ClassicSession(**{"spark.master": "spark://m:7077"}), "gateway.lan", ("0.0.0.0", "gateway.lan")),
])
def test_where_the_services_listen(session, services_host, expected):
    assert connect.services_bind(session, services_host) == expected  # type: ignore[arg-type]


def test_the_warning_without_services_names_them_and_the_fix():
    session = ConnectSession("spark.example", **{"spark.master": "yarn"})
    text = connect.no_services_warning(session, ["oauth:token", "budget"])  # type: ignore[arg-type]
    assert "sc://spark.example (yarn)" in text and "(budget, oauth:token)" in text
    assert "each task keeps its own" in text and "--services-host" in text


def test_the_parallelism_a_connect_server_configures_is_taken_without_a_job():
    session = ConnectSession("h", **{"spark.default.parallelism": "12"})
    assert connect.default_parallelism(session) == 12  # type: ignore[arg-type]


@pytest.mark.spark
def test_a_sync_whose_tasks_cannot_reach_the_driver_warns_and_runs_without_services(spark, fake_api, write_manifest,
                                                                                     tmp_path, monkeypatch):
    """What a Connect sync against a remote server does: the services are not served, each task runs its
    own handler, the user is told; the sync itself lands everything."""
    shop = serve(fake_api)
    manifest = write_manifest(MANIFEST)
    connector = open_connector(manifest, config_for(shop), sleep=lambda seconds: None)
    connector.context.services["budget"] = lambda payload: payload
    monkeypatch.setattr(connect, "services_bind", lambda session, host=None: None)
    warned: list[str] = []
    coordinators = []
    real_run_groups = pipeline_module._run_groups

    def run_groups(run, job, groups):
        coordinators.append(job.coordinator)
        return real_run_groups(run, job, groups)

    monkeypatch.setattr(pipeline_module, "_run_groups", run_groups)
    out = tmp_path / "out"
    result = pipeline_module.run_pipeline(connector, manifest, select_streams(connector.streams, None, ["items"]),
                                          settings_for(out), spark, warn=warned.append)

    assert not result.failed and result.streams[0].records == 8
    assert coordinators and coordinators == [None] * len(coordinators)
    assert len(warned) == 1 and "(budget) are not shared" in warned[0]
    assert json.dumps(saved_state(out)["streams"]["items"]["state"]) == '{"updated_at": "2024-01-04T18:00:00Z"}'


def test_the_warning_reaches_stderr_as_text_or_a_json_event_even_when_quiet():
    import io

    from framework.cli.progress import reporter_for
    from framework.cli.sync_command import _warner

    for log_format, quiet in (("text", False), ("text", True), ("json", True)):
        err = io.StringIO()
        _warner(reporter_for(err, log_format, quiet))("the services are not shared")
        if log_format == "json":
            event = json.loads(err.getvalue())
            assert (event["event"], event["message"]) == ("warning", "the services are not shared")
        else:
            assert err.getvalue() == "run-manifest: warning: the services are not shared\n"


def test_a_named_session_is_kept_open_and_any_other_released_at_exit():
    assert connect.session_id("sc://h:15002/;session_id=6d0c3c1e-6f7a-4f4e-9a51-3a1f0c2b9e11") == \
        "6d0c3c1e-6f7a-4f4e-9a51-3a1f0c2b9e11"
    assert connect.session_id("sc://h:15002/;user_id=me;session_id=abc") == "abc"
    assert connect.session_id("sc://h:15002") is None and connect.session_id("sc://h:1/;session_id=") is None
    named: dict[str, str] = {}
    connect.prepare_client("sc://h:1/;session_id=abc", named)
    own: dict[str, str] = {}
    connect.prepare_client("sc://h:1", own)
    assert named == {"SPARK_CONNECT_RELEASE_SESSION_ON_EXIT": "false"}
    assert own == {"SPARK_CONNECT_RELEASE_SESSION_ON_EXIT": "true"}
    chosen = {"SPARK_CONNECT_RELEASE_SESSION_ON_EXIT": "false"}  # the user's own choice stands
    connect.prepare_client("sc://h:1", chosen)
    assert chosen == {"SPARK_CONNECT_RELEASE_SESSION_ON_EXIT": "false"}


def test_the_parallelism_a_session_probed_once_is_taken_from_its_conf():
    session = ConnectSession("h", **{connect.PARALLELISM_KEY: "6"})
    assert connect.default_parallelism(session) == 6  # type: ignore[arg-type]


def test_postgres_statements_over_connect_take_their_values_as_literals():
    from framework.normalization.targets.postgres import _root_cause, _with_literals

    assert _with_literals("SELECT 1 WHERE a = ? AND b = ?::oid", ("it's", "42")) == \
        "SELECT 1 WHERE a = 'it''s' AND b = '42'::oid"
    with pytest.raises(ValueError, match="2 placeholders for 1 values"):
        _with_literals("? ?", ("x",))
    error = ("[FAILED_JDBC.CONNECTION] Failed JDBC jdbc:postgresql:*** on the operation: Couldn't connect\n"
             "JVM stacktrace:\norg.apache.spark.sql.AnalysisException\n\tat x.y(Z.scala:1)\n"
             'Caused by: org.postgresql.util.PSQLException: FATAL: password authentication failed for user "t"\n'
             "\tat org.postgresql.a(B.java:2)")
    assert _root_cause(error) == 'FATAL: password authentication failed for user "t"'
    assert _root_cause("no JVM trace here") == "no JVM trace here"
