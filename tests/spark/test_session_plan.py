"""The master and settings a session is built with (:func:`framework.spark.session.session_plan`): no JVM starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from framework.spark.session import environment_master, known_master, session_plan, submit_conf


def _conf_dir(tmp_path, text: str) -> dict[str, str]:
    (tmp_path / "spark-defaults.conf").write_text(text)
    return {"SPARK_CONF_DIR": str(tmp_path)}


def test_submit_args_give_conf_and_master():
    env = {"PYSPARK_SUBMIT_ARGS": "--master spark://m:7077 --conf spark.a=1 --conf=spark.b=x=y pyspark-shell"}
    assert submit_conf(env) == {"spark.master": "spark://m:7077", "spark.a": "1", "spark.b": "x=y"}
    assert environment_master(env) == "spark://m:7077"
    assert environment_master({"MASTER": "yarn"}) == "yarn"
    assert submit_conf({"PYSPARK_SUBMIT_ARGS": "--conf 'unclosed"}) == {}


def test_known_master_before_spark_starts(tmp_path):
    empty = {"SPARK_CONF_DIR": str(tmp_path)}
    assert known_master(None, None, empty) == "local[*]"
    assert known_master("spark://a:1", {"spark.master": "yarn"}, empty) == "spark://a:1"
    assert known_master(None, {"spark.master": "yarn"}, empty) == "yarn"
    assert known_master(None, None, {**empty, "SPARK_MASTER": "k8s://x"}) == "k8s://x"
    assert known_master(None, None, {**empty, "PYSPARK_GATEWAY_PORT": "1"}) is None  # spark-submit's: not known yet
    assert known_master(None, None, _conf_dir(tmp_path, "spark.master spark://file:7077\n")) == "spark://file:7077"


def test_a_local_master_is_quieted(tmp_path):
    plan = session_plan(None, None, environ={"SPARK_CONF_DIR": str(tmp_path)})
    assert plan.master == "local[*]" and plan.local and plan.quiet
    assert plan.settings["spark.ui.enabled"] == "false"
    assert "-XX:TieredStopAtLevel=1" in plan.settings["spark.driver.extraJavaOptions"]
    assert "-XX:TieredStopAtLevel" not in session_plan("local[2]", full_jit=True, environ={
        "SPARK_CONF_DIR": str(tmp_path)}).settings.get("spark.driver.extraJavaOptions", "")


def test_a_cluster_master_gets_nothing_forced(tmp_path):
    plan = session_plan("spark://m:7077", None, environ={"SPARK_CONF_DIR": str(tmp_path)})
    assert plan.master == "spark://m:7077" and not plan.local and not plan.quiet
    # what every run needs, not a local nicety: Arrow, workers forked with the framework imported (the
    # executors have it installed, they run its tasks), and Spark's TIME type, without which the session refuses
    # the landed Parquet's time columns; each is overridden by --conf or spark-defaults.conf
    assert set(plan.settings) == {"spark.sql.execution.arrow.pyspark.enabled", "spark.python.daemon.module",
                                  "spark.sql.timeType.enabled"}
    assert plan.settings["spark.sql.timeType.enabled"] == "true"
    kept = session_plan("spark://m:7077", {"spark.sql.timeType.enabled": "false"},
                        environ={"SPARK_CONF_DIR": str(tmp_path)})
    assert kept.settings["spark.sql.timeType.enabled"] == "false"
    under_submit = session_plan(None, None, environ={"SPARK_CONF_DIR": str(tmp_path), "PYSPARK_GATEWAY_PORT": "1"})
    assert under_submit.master is None and not under_submit.local and "spark.ui.enabled" not in under_submit.settings


def test_user_settings_win_over_ours(tmp_path):
    env = _conf_dir(tmp_path, "spark.ui.enabled true\nspark.log.level INFO\n")
    env["PYSPARK_SUBMIT_ARGS"] = "--conf spark.sql.shuffle.partitions=3 pyspark-shell"
    plan = session_plan("local[1]", {"spark.driver.extraJavaOptions": "-Dx=1", "spark.executor.cores": "2"},
                        environ=env)
    assert "spark.ui.enabled" not in plan.settings  # the file's value stands (Spark reads it itself)
    assert "spark.sql.shuffle.partitions" not in plan.settings
    assert plan.settings["spark.driver.extraJavaOptions"] == "-Dx=1" and plan.settings["spark.executor.cores"] == "2"
    assert not plan.quiet  # the file chose a log level
    file_master = session_plan(None, None, environ=_conf_dir(tmp_path, "spark.master spark://f:1\n"))
    assert file_master.master is None and not file_master.local  # Spark takes the file's master itself


def test_the_jdbc_jar_only_for_a_postgres_target(tmp_path):
    jar = tmp_path / "pg.jar"
    jar.write_bytes(b"")
    env = {"SPARK_CONF_DIR": str(tmp_path), "FRAMEWORK_JDBC_JARS": str(jar)}
    assert "spark.jars" not in session_plan("local[1]", environ=env).settings
    assert session_plan("local[1]", environ=env, jdbc=True).settings["spark.jars"] == str(jar)
    both = session_plan("local[1]", {"spark.jars": "/a.jar"}, environ=env, jdbc=True)
    assert both.settings["spark.jars"] == f"/a.jar,{jar}"


@pytest.mark.spark
def test_a_session_built_in_python_takes_spark_defaults_conf_and_conf_wins(tmp_path):
    """PySpark starts its JVM through spark-submit, which reads spark-defaults.conf: its keys reach the session,
    ours do not replace them, and a ``conf`` given to spark_session wins over the file. In a subprocess: this one
    may hold a session already."""
    (tmp_path / "spark-defaults.conf").write_text("spark.ui.enabled true\nspark.test.fromfile yes\n"
                                                  "spark.test.both file\n")
    script = (
        "from framework.spark.session import spark_session\n"
        "s = spark_session('local[1]', **{'spark.test.both': 'conf'})\n"
        "print(s.conf.get('spark.ui.enabled'), s.conf.get('spark.test.fromfile'), s.conf.get('spark.test.both'))\n"
        "s.stop()\n")
    env = {**os.environ, "SPARK_CONF_DIR": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["true", "yes", "conf"]


def test_a_local_driver_listens_on_loopback_unless_the_user_says_otherwise(tmp_path):
    empty = {"SPARK_CONF_DIR": str(tmp_path)}
    loopback = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    settings = session_plan("local[2]", None, environ=empty).settings
    assert {key: settings.get(key) for key in loopback} == loopback
    # the user's choice stands, whole: a host given keeps Spark's own bind address
    chosen = session_plan("local[2]", {"spark.driver.host": "10.0.0.5"}, environ=empty).settings
    assert chosen["spark.driver.host"] == "10.0.0.5" and "spark.driver.bindAddress" not in chosen
    for variable in ("SPARK_LOCAL_IP", "SPARK_LOCAL_HOSTNAME"):
        assert not set(loopback) & set(session_plan("local[2]", None, environ={**empty, variable: "x"}).settings)
    from_file = session_plan("local", None, environ=_conf_dir(tmp_path, "spark.driver.bindAddress 0.0.0.0\n"))
    assert not set(loopback) & set(from_file.settings)  # spark-defaults.conf: Spark reads it itself
    assert not set(loopback) & set(session_plan("spark://m:7077", None, environ=empty).settings)  # a cluster's own
