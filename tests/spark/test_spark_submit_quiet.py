"""``run-manifest --quiet`` under ``spark-submit``: Spark's own log lines are quieted too.

spark-submit starts its JVM (with Spark's default log4j profile, INFO) before run-manifest's Python runs, so
the level is set in that JVM before the SparkContext starts (framework/spark/session.py, ``quiet_conf`` and
``_level_before_context``). One real spark-submit of docs/cluster.md's two-line launcher on ``local[1]``,
waiting for Spark so that its tasks run; without the fix it printed some 40 INFO lines here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cluster.events_api import IDS, MANIFEST, rows, serve_events

from framework.spark.session import quiet_conf

REPO = Path(__file__).resolve().parents[2]
SUBMIT = Path(sys.executable).parent / "spark-submit"
SUBMITTED = {"PYSPARK_GATEWAY_PORT": "40000"}


def test_quiet_under_spark_submit_asks_for_errors_only():
    assert quiet_conf({}, True, SUBMITTED) == {"spark.log.level": "ERROR"}


@pytest.mark.parametrize(("conf", "quiet", "environ"), [
    ({}, False, SUBMITTED),  # not --quiet
    ({}, True, {}),  # not under spark-submit: a JVM launched here is quieted before it starts
    ({"spark.log.level": "WARN"}, True, SUBMITTED),  # the user's level stands
    ({}, True, {**SUBMITTED, "PYSPARK_SUBMIT_ARGS": "--conf spark.log.level=INFO pyspark-shell"}),
])
def test_the_level_is_left_alone_otherwise(conf, quiet, environ):
    assert quiet_conf(conf, quiet, environ) == conf


@pytest.mark.spark
def test_spark_submit_with_quiet_prints_no_spark_log_lines(fake_api, tmp_path):
    assert SUBMIT.exists(), "spark-submit is not in this venv: pip install -e '.[spark]' (make setup does)"
    events = serve_events(fake_api)
    (tmp_path / "events.yaml").write_text(MANIFEST)
    (tmp_path / "config.json").write_text(json.dumps(events.config()))
    (tmp_path / "run_manifest.py").write_text("import sys\nfrom framework.cli.run import main\nsys.exit(main())\n")
    out = tmp_path / "out"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run([str(SUBMIT), "--master", "local[1]", "run_manifest.py", "events.yaml", "--config",
                           "config.json", "--output", str(out), "--quiet", "--wait-for-spark"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert [r[0] for r in rows(out)] == IDS
    spark_lines = [line for line in done.stderr.splitlines() if " INFO " in line or " WARN " in line]
    assert spark_lines == [], "\n".join(spark_lines[:20])
    assert "Setting Spark log level" not in done.stderr
    # what is left: the JVM's own notice and Spark's profile line, printed before run-manifest's Python runs
    assert len(done.stderr.splitlines()) <= 2, done.stderr
