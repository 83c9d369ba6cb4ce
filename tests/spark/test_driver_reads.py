"""The driver reads groups while Spark starts: the same files, rows and state as when Spark reads them all.

In-process, the session is a :class:`SessionStart` stand-in whose future the test completes (or never
does); the comparison run hands every group to the suite's shared SparkSession. The subprocess test runs
``run-manifest`` as a user does, with and without ``--wait-for-spark``: same rows and state, nothing on
stderr but the progress, and no JVM left behind when the sync was over before Spark was up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from spark.test_pipeline import MANIFEST, config_for, data_files, saved_state, serve, settings_for

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.spark.pipeline import PipelineOptions, PipelineResult, run_pipeline
from framework.spark.session import SessionStart, local_cores, session_plan
from framework.values import replace

pytestmark = pytest.mark.spark

STREAMS = ["items", "accounts", "orders", "notes"]  # incremental windows, a parent and its substream, no schema


class NeverUp(Future):
    """A session that never comes up: asking for it fails the test instead of hanging."""

    def result(self, timeout: float | None = None) -> Any:
        raise AssertionError("the sync asked for the Spark session")


class Starting(SessionStart):
    """A local session "starting": its future is the test's (no thread, no JVM); what the pipeline asks of its
    start (pause, resume) is recorded in ``asked``."""

    def __init__(self, future: Future):
        self.plan = session_plan("local[2]", {})
        self.future = future
        self.asked: list[str] = []

    def pause(self) -> None:
        self.asked.append("pause")

    def resume(self) -> None:
        self.asked.append("resume")


@pytest.fixture
def shop(fake_api):
    shop = serve(fake_api)
    yield shop
    shop.release.set()


@pytest.fixture
def manifest(write_manifest) -> str:
    return write_manifest(MANIFEST)


def sync(session: Any, manifest: str, shop: Any, out: Path, **hooks: Any) -> PipelineResult:
    connector = open_connector(manifest, config_for(shop), sleep=lambda seconds: None)
    return run_pipeline(connector, manifest, select_streams(connector.streams, None, STREAMS), settings_for(out),
                        session, options=PipelineOptions(), **hooks)


VOLATILE = ("_airbyte_raw_id", "_airbyte_extracted_at")  # a fresh UUID and the read time, per record


def landed(out: Path) -> dict[str, Any]:
    """What a reader sees: every stream's rows (all but the per-read columns) and its saved cursor state."""
    state = saved_state(out)
    return {name: (sorted(json.dumps({k: v for k, v in row.items() if k not in VOLATILE}, sort_keys=True, default=str)
                          for path in data_files(out, name) for row in pq.read_table(path).to_pylist()),
                   _timeless(state["streams"][name].get("state")))
            for name in STREAMS}


def _same(got: dict[str, Any], expected: dict[str, Any]) -> None:
    for name in STREAMS:
        assert got[name][0] == expected[name][0], f"{name}: rows differ"
        assert got[name][1] == expected[name][1], f"{name}: states differ"


def _timeless(state: Any) -> Any:
    """A state without Airbyte's ``lookback_window`` (the seconds the parent read took: a clock reading), its
    per-partition entries in a fixed order (they come in the order the groups finished, on Spark too)."""
    if isinstance(state, dict):
        return {k: _timeless(v) for k, v in state.items() if k != "lookback_window"}
    if isinstance(state, list):
        return sorted((_timeless(v) for v in state), key=lambda v: json.dumps(v, sort_keys=True))
    return state


def test_a_sync_read_on_the_driver_alone_lands_what_spark_lands(spark, shop, manifest, tmp_path):
    on_spark = sync(spark, manifest, shop, tmp_path / "spark")
    on_driver = sync(Starting(NeverUp()), manifest, shop, tmp_path / "driver")

    assert not on_spark.failed and not on_driver.failed
    _same(landed(tmp_path / "driver"), landed(tmp_path / "spark"))
    assert all(data_files(tmp_path / "driver", name) for name in ["items", "orders"])
    assert not list((tmp_path / "driver").rglob("_staging*"))  # every staged file was published
    driver = {s.name: (s.records, s.units, s.units_done) for s in on_driver.streams}
    assert driver == {s.name: (s.records, s.units, s.units_done) for s in on_spark.streams}


def test_a_driver_that_finishes_alone_pauses_the_start_and_leaves_it_so(shop, manifest, tmp_path):
    starting = Starting(NeverUp())
    result = sync(starting, manifest, shop, tmp_path / "driver")

    assert not result.failed
    # the last stream's few units cost the driver far less CPU than Spark's start: paused after its first group
    assert starting.asked[-1] == "pause"  # left paused: whoever needs the session lets it go on, else abandons it


def test_when_spark_comes_up_mid_stream_the_rest_goes_to_it(spark, shop, manifest, tmp_path):
    reference = sync(spark, manifest, shop, tmp_path / "spark")
    future: Future = Future()
    events: list[tuple[str, str]] = []

    def progress(event: str, result: Any) -> None:
        events.append((event, result.name))
        if event == "group" and not future.done():  # up after the driver's first group
            future.set_result(spark)

    mixed = sync(Starting(future), manifest, shop, tmp_path / "mixed", progress=progress)

    assert not reference.failed and not mixed.failed
    _same(landed(tmp_path / "mixed"), landed(tmp_path / "spark"))
    assert future.done()


def test_local_cores_of_a_master():
    assert local_cores("local") == 1
    assert local_cores("local[3]") == 3 and local_cores("local[4,2]") == 4
    assert local_cores("local[*]") == (os.cpu_count() or 1)


# ----------------------------------------------------------------------------------- the command


def _java_with(marker: str) -> list[int]:
    """Live processes whose command line carries ``marker`` (the JVM a run-manifest started)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def test_run_manifest_lands_the_same_with_and_without_wait_for_spark_and_leaves_no_jvm(shop, tmp_path):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(config_for(shop)))
    runs = {}
    for name, more in (("early", []), ("waiting", ["--wait-for-spark"])):
        marker = f"speed-test-{uuid.uuid4().hex[:8]}"
        # -X importtime: the driver's imports, to see that pyarrow's lookup of pandas found none (pyspark imports
        # pandas itself when its JVM starts; pyarrow's pandas layer stays unloaded: framework/typed/pandas_lookup.py)
        command = [sys.executable, "-X", "importtime", "-m", "framework.cli.run", str(manifest), "--config", str(config),
                   "--output", str(tmp_path / name), "--log-format", "json", "--conf", f"spark.test.marker={marker}",
                   *more]
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300,
                              env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
        assert done.returncode == 0, done.stderr
        events = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
        imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                    if line.startswith("import time:")]
        assert "framework.typed.pandas_lookup" in imported and "pyarrow.pandas_compat" not in imported
        noise = [line for line in done.stderr.splitlines() if not line.startswith(("{", "import time:"))
                 and "incubator modules" not in line]  # the JVM's own start-up line, as in every Spark run
        assert noise == [], done.stderr
        runs[name] = events
        deadline = time.monotonic() + 20
        while _java_with(marker) and time.monotonic() < deadline:
            time.sleep(0.2)  # polling real processes
        assert _java_with(marker) == []  # the JVM it started is gone (killed, or ended with the process)
    started = {name: next(e for e in events if e["event"] == "started") for name, events in runs.items()}
    assert started["early"]["background"] is True
    assert started["waiting"]["background"] is False
    _same(landed(tmp_path / "early"), landed(tmp_path / "waiting"))


ABANDON_THEN_START = """
import sys, time
from framework.spark.session import SessionStart, spark_session
first = SessionStart(**{"spark.test.marker": sys.argv[1]})
time.sleep(0.2)
first.abandon()  # before or while spark-submit launches
second = SessionStart(**{"spark.test.marker": sys.argv[1]})
second._launch_over.wait(120)
second.abandon()  # the JVM runs: killed
spark = spark_session()  # a later session in the same process starts a JVM of its own
print("rows", spark.range(3).count())
"""


def test_an_abandoned_start_leaves_no_jvm_and_a_later_session_still_starts(tmp_path):
    marker = f"speed-test-{uuid.uuid4().hex[:8]}"
    done = subprocess.run([sys.executable, "-c", ABANDON_THEN_START, marker], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    assert done.returncode == 0 and "rows 3" in done.stdout, done.stderr
    noise = [line for line in done.stderr.splitlines() if "incubator modules" not in line]
    assert noise == [], done.stderr
    deadline = time.monotonic() + 20
    while _java_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)  # polling real processes
    assert _java_with(marker) == []


def test_without_java_the_user_is_told_why_spark_did_not_start_and_the_fix(shop, tmp_path):
    """JAVA_HOME pointing nowhere: the session fails at once, and the user gets one line naming the cause and
    the fix, never a traceback. ``--wait-for-spark``: the sync needs Spark before it reads, so its start is
    not held (this sync of a few pages, read by the driver, may end before the launch hold does and never
    launch Java: nothing to tell then); it stops there, exit 2 (bad input: the machine's Java). A driver that
    read every group before the session failed (the sync stands, one warning) is the next test's."""
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(config_for(shop)))
    command = [sys.executable, "-m", "framework.cli.run", str(manifest), "--config", str(config),
               "--output", str(tmp_path / "out"), "--log-format", "json", "--wait-for-spark"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env=dict(os.environ, PYSPARK_PYTHON=sys.executable, JAVA_HOME=str(tmp_path / "no-java")))
    assert "Traceback" not in done.stderr, done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    told = [e.get("message") or e.get("error") for e in events if e["event"] in ("warning", "failure")]
    about_spark = [text for text in told if text and text.startswith("Spark could not start")]
    assert about_spark, done.stderr
    assert all("no-java/bin/java" in text and "install Java 17 or newer" in text for text in about_spark)
    assert done.returncode == 2 and len(about_spark) == 1
    assert not any(e["event"] == "summary" for e in events)  # nothing was read: no stream to report


def test_a_session_that_failed_while_the_driver_read_everything_is_one_warning():
    from framework.cli.sync_command import _spark_did_not_start
    from framework.spark.launch import SparkStartFailed
    from framework.spark.pipeline import StreamResult

    failed: Future = Future()
    failed.set_exception(SparkStartFailed("Spark could not start: no java; fix: install Java 17 or newer"))
    said: list[str] = []
    complete = PipelineResult(1, [StreamResult("a", records=3), StreamResult("b", records=0)])
    _spark_did_not_start([Starting(failed)], complete, said.append)
    assert len(said) == 1 and said[0].startswith("Spark could not start: no java") and "complete" in said[0]
    told = PipelineResult(1, [StreamResult("a", error="Spark could not start: no java; fix: install Java 17 or newer")])
    _spark_did_not_start([Starting(failed)], told, said.append)  # the stream's own error says it already
    up: Future = Future()
    up.set_result(object())
    _spark_did_not_start([Starting(up)], complete, said.append)
    _spark_did_not_start([], complete, said.append)
    assert len(said) == 1


def test_spark_is_ready_for_groups_once_a_warm_up_job_ran_and_a_failed_start_stays_failed(spark, shop, manifest):
    from framework.engine.worker import ConnectorSource
    from framework.spark.launch import SparkStartFailed
    from framework.spark.warmup import warmed

    connector = open_connector(manifest, config_for(shop), sleep=lambda seconds: None)
    source = ConnectorSource.of_connector(connector, manifest, Path(manifest).read_text())
    session: Future = Future()
    tag = f"test-warm-up-{uuid.uuid4().hex[:8]}"
    ready = warmed(session, source, 2, tag)
    assert not ready.done()  # not before the session is up
    session.set_result(spark)
    assert ready.result(timeout=240) is spark
    tracker = spark.sparkContext.statusTracker()
    warm_ups = [tracker.getJobInfo(job) for job in tracker.getJobIdsForGroup(tag)]
    assert [info.status for info in warm_ups] == ["SUCCEEDED"]  # one job, done before the groups may go
    broken = warmed(_done(spark), replace(source, manifest_text="not: [a manifest"), 2, "test-broken")
    assert broken.result(timeout=240) is spark  # the groups' own jobs say what is wrong with the connector
    failed: Future = Future()
    failed.set_exception(SparkStartFailed("Spark could not start: no java"))
    with pytest.raises(SparkStartFailed, match="no java"):
        warmed(failed, source, 2, "test-failed").result(timeout=5)


def _done(value: Any) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future
