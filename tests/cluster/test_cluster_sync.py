"""``run-manifest --master spark://...`` against the standalone cluster of the ``spark_cluster`` fixture.

* the same rows and state as local mode, with a relative ``--output``: data and
  state both in the driver's folder, nothing in the workers' work folders;
* an executor killed with SIGKILL in the middle of a task: no record lost, none
  written twice, and the temp file the killed task left is gone after the next run;
* a local ``--output`` on the cluster without ``--shared-path``: refused (exit 2)
  before Spark starts (no application reaches the master).

The cluster runs are subprocesses (this process may hold a local SparkSession);
the local runs are in-process, on the suite's session.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from cluster.events_api import IDS, MANIFEST, rows, serve_events, state, temps
from framework.cli.run import main

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

REPO = Path(__file__).resolve().parents[2]

@pytest.fixture
def events(fake_api):
    served = serve_events(fake_api)
    yield served
    served.release.set()


@pytest.fixture
def files(tmp_path, events):
    manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
    manifest.write_text(MANIFEST)
    config.write_text(json.dumps(events.config()))
    return str(manifest), str(config)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver listens where the workers (on 127.0.0.1) reach it
    env.pop("SPARK_REMOTE", None)
    return env


def on_cluster(cluster, files, *args: str) -> list[str]:
    return [sys.executable, "-m", "framework.cli.run", files[0], "--config", files[1], "--master",
            cluster.master_url, "--conf", "spark.cores.max=2", "--quiet", *args]


def run_local(files, *args: str) -> tuple[int, str]:
    """The same command in local mode, in-process (the suite's local session)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([files[0], "--config", files[1], "--master", "local[2]", "--quiet", *args], out=io.BytesIO())
    return code, err.getvalue()


def test_same_rows_and_state_as_local_mode_with_a_relative_output(spark_cluster, spark, files, tmp_path,
                                                                  monkeypatch):
    driver = tmp_path / "driver"
    driver.mkdir()
    done = subprocess.run(on_cluster(spark_cluster, files, "--output", "out", "--shared-path"),
                          cwd=driver, env=_env(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    local = tmp_path / "local"
    local.mkdir()
    monkeypatch.chdir(local)
    code, stderr = run_local(files, "--output", "out")
    assert code == 0, stderr

    cluster_out, local_out = driver / "out", local / "out"
    assert [r[0] for r in rows(cluster_out)] == IDS
    assert rows(cluster_out) == rows(local_out)
    assert state(cluster_out) == state(local_out) and state(cluster_out)
    for work in spark_cluster.work_dirs():  # nothing landed where an executor runs
        landed = [p for p in work.rglob("*") if p.name == "out" or p.suffix == ".parquet"
                  or p.name == "_airbyte_state"]
        assert landed == [], landed


def _holder_of(out: Path) -> tuple[int, Path] | None:
    """A process under an executor JVM holding a temp file of ``out`` open (the Python worker running the task),
    and the file. The driver's own temp files (the state it saves as the first groups return, the write probe)
    are not a task's: a driver caught writing one is passed over."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith(str(out)) and target.endswith(".tmp") and _executor(int(pid)) is not None:
                    return int(pid), Path(target)
        except OSError:  # gone, or not ours to look at
            continue
    return None


def test_an_executor_killed_mid_task_loses_nothing_and_leaves_nothing(spark_cluster, spark, files, events,
                                                                      tmp_path):
    out = tmp_path / "out"
    events.hang = ("2024-03-03T00:00:00Z", "2")  # the third window: its first page is written, then it waits
    process = subprocess.Popen(on_cluster(spark_cluster, files, "--output", str(out), "--shared-path"),
                               cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        assert events.hanging.wait(180), "the task never reached the hanging request"
        holder = None
        deadline = time.monotonic() + 30
        while holder is None and time.monotonic() < deadline:
            holder = _holder_of(out)
            time.sleep(0.2)  # polling real processes
        assert holder is not None, "no task holds a temp file of the output"
        worker, temp = holder
        executor = _executor(worker)
        assert executor is not None, "the Python worker has no executor JVM above it"
        os.kill(executor, signal.SIGKILL)
        os.kill(worker, signal.SIGKILL)
        events.release.set()
        _, stderr = process.communicate(timeout=240)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, stderr.decode()[-3000:]
    assert [r[0] for r in rows(out)] == IDS  # the task ran again elsewhere: nothing lost, nothing twice
    # the killed task wrote under the staging folder, which the driver clears once every file is published:
    # nothing of it is left (a temp file outside staging would go at the next run, see test_stale_temporaries)
    assert not temp.exists() and temps(out) == []

    code, stderr = run_local(files, "--output", str(out))
    assert code == 0, stderr
    assert temps(out) == []
    ids = [r[0] for r in rows(out)]
    assert sorted(set(ids)) == IDS and len(ids) - len(IDS) <= 1  # at most the record at the inclusive cursor


def _executor(pid: int) -> int | None:
    """The executor JVM above a Python worker (``CoarseGrainedExecutorBackend``), walking up its parents."""
    current = pid
    while current > 1:
        try:
            cmdline = Path(f"/proc/{current}/cmdline").read_bytes()
            parent = int(Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            return None
        if b"CoarseGrainedExecutorBackend" in cmdline:
            return current
        current = parent
    return None


def _applications(cluster) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{cluster.web_port}/json/", timeout=5) as answer:
        found = json.loads(answer.read())
    return len(found.get("activeapps", [])) + len(found.get("completedapps", []))


def test_a_local_output_on_the_cluster_is_refused_without_shared_path(spark_cluster, files, tmp_path):
    before = _applications(spark_cluster)
    done = subprocess.run(on_cluster(spark_cluster, files, "--output", "out"), cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"--output {tmp_path / 'out'} is a folder on this machine, but the master {spark_cluster.master_url}" \
        in done.stderr
    assert "use s3://bucket/prefix, or a folder every node mounts at the same path and pass --shared-path" \
        in done.stderr
    assert not (tmp_path / "out").exists() and _applications(spark_cluster) == before  # Spark never started
