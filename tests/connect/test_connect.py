"""``run-manifest --remote`` and ``normalize-output --remote`` against a local Spark Connect server.

Every Connect run is a subprocess (see conftest.py); the local-mode runs it is
compared with run in-process on the suite's SparkSession. The fake API lives
in the test process, on 127.0.0.1, where the server's Python workers reach it.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cdc.test_replicant_realtime import MANIFEST as CDC_MANIFEST
from cdc.test_replicant_realtime import op_files, stock_item
from cdc.test_replicant_realtime import shop as cdc_shop  # noqa: F401 - the fixture
from normalization.test_cli import tables
from spark.test_pipeline import MANIFEST, SECRET, config_for, data_files, read_parquet, saved_state, serve

from connect.server import REPO
from framework.cli.normalize import main as normalize_main
from framework.cli.run import main as run_main

pytestmark = pytest.mark.spark

VOLATILE = {"_airbyte_raw_id", "_airbyte_extracted_at"}  # new for every sync, whatever runs it


@pytest.fixture
def shop(fake_api):
    shop = serve(fake_api)
    yield shop
    shop.release.set()  # wake a handler left hanging


@pytest.fixture
def files(tmp_path, shop):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(config_for(shop)))
    return str(manifest), str(config)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.pop("SPARK_REMOTE", None)
    return env


def command(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def connect_run(*args: str, cwd: Path, timeout: float = 180, **env: str) -> tuple[int, list[dict], str]:
    """``run-manifest *args --log-format json`` in a subprocess: exit code, JSON events, stderr's other lines."""
    done = subprocess.run(command("framework.cli.run", *args, "--log-format", "json"), capture_output=True,
                          text=True, cwd=cwd, env={**_env(), **env}, timeout=timeout)
    events, other = [], []
    for line in done.stderr.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            other.append(line)
    return done.returncode, events, "\n".join(other)


def comparable(root: Path, stream: str) -> list[dict]:
    """The stream's rows without the columns that differ between any two syncs, in a stable order."""
    rows = [{k: v for k, v in row.items() if k not in VOLATILE}
            for path in data_files(root, stream) for row in pq.read_table(path).to_pylist()]
    return sorted(rows, key=lambda row: json.dumps(row, default=str, sort_keys=True))


def stable_state(root: Path) -> dict:
    """The saved streams' states; a per-partition state's partitions in a stable order, without its
    ``lookback_window`` (the seconds the previous sync took)."""
    streams = saved_state(root)["streams"]
    for entry in streams.values():
        state = entry.get("state") or {}
        state.pop("lookback_window", None)
        if isinstance(state.get("states"), list):
            state["states"].sort(key=lambda s: json.dumps(s, sort_keys=True))
    return streams


def test_a_sync_over_connect_lands_the_rows_and_state_of_local_mode(connect_server, spark, files, shop, tmp_path,
                                                                    capsys):
    local, remote = tmp_path / "local", tmp_path / "remote"
    assert run_main([*files[:1], "--config", files[1], "--output", str(local), "--quiet"], out=io.BytesIO()) == 0

    code, events, other = connect_run(files[0], "--config", files[1], "--remote", connect_server.url,
                                      "--output", str(remote), cwd=tmp_path)

    assert code == 0, other
    started = next(e for e in events if e["event"] == "started")
    assert started["master"] == "sc://127.0.0.1 (local[2])"
    assert not [e for e in events if e["event"] in ("failure", "warning")]
    summary = next(e for e in events if e["event"] == "summary")
    assert summary["ok"] and summary["records"] > 0
    assert SECRET not in other and "Traceback" not in other
    for stream in ("accounts", "items", "orders", "notes"):
        assert comparable(remote, stream) == comparable(local, stream), stream
    assert stable_state(remote) == stable_state(local)

    # the next sync over Connect is incremental: only what is newer is read
    shop.items.append({**shop.items[-1], "id": 9, "updated_at": "2024-01-04T20:00:00Z"})
    code, events, other = connect_run(files[0], "--config", files[1], "--remote", connect_server.url,
                                      "--output", str(remote), "--streams", "items", cwd=tmp_path)
    assert code == 0, other
    done = next(e for e in events if e["event"] == "stream_done")
    assert done["stream"] == "items" and done["records"] == 2  # from the saved cursor (item 8's, inclusive)
    assert saved_state(remote)["sync_id"] == 2
    assert sorted(r["id"] for r in read_parquet(remote, "items")) == [1, 2, 3, 4, 5, 6, 7, 8, 8, 9]


def test_remote_and_master_together_or_an_unreachable_server_exit_2_at_once(files, tmp_path):
    # a refused connection is waited for up to FRAMEWORK_CONNECT_WAIT_S (a server starting): 0 fails at once
    code, events, other = connect_run(files[0], "--config", files[1], "--remote", "sc://127.0.0.1:9",
                                      "--output", str(tmp_path / "out"), cwd=tmp_path, timeout=60,
                                      FRAMEWORK_CONNECT_WAIT_S="0")
    assert code == 2, other
    failure = next(e for e in events if e["event"] == "failure")
    assert "the Spark Connect server at sc://127.0.0.1:9 could not be reached" in failure["error"]
    assert "not listening yet" not in other

    code, events, other = connect_run(files[0], "--config", files[1], "--remote", "sc://127.0.0.1:9",
                                      "--output", str(tmp_path / "out"), cwd=tmp_path, timeout=60,
                                      FRAMEWORK_CONNECT_WAIT_S="1")
    assert code == 2, other
    assert "is not listening yet (127.0.0.1:9: connection refused); waiting up to 1 s" in other
    assert "could not be reached (127.0.0.1:9: Connection refused for 1 s)" in next(
        e for e in events if e["event"] == "failure")["error"]

    code, events, other = connect_run(files[0], "--config", files[1], "--remote", "sc://127.0.0.1:9",
                                      "--master", "local[1]", "--output", str(tmp_path / "out"), cwd=tmp_path)
    assert code == 2, other
    assert "drop --master" in next(e for e in events if e["event"] == "failure")["error"]


def test_normalization_over_connect_makes_the_tables_local_spark_makes(connect_server, spark, files, tmp_path):
    output = tmp_path / "out"
    code, events, other = connect_run(files[0], "--config", files[1], "--remote", connect_server.url,
                                      "--output", str(output), "--streams", "items", "--normalize", cwd=tmp_path)
    assert code == 0, other
    normalized = next(e for e in events if e["event"] == "stream_normalized")
    assert normalized["stream"] == "items" and normalized["error"] is None
    over_connect = tables(str(output))
    assert {"items", "_airbyte_raw_items"} <= set(over_connect) and len(over_connect["items"]) == 8

    assert normalize_main(["--output", str(output), "--full-refresh", "--quiet"]) == 0  # local Spark, in-process
    assert tables(str(output)) == over_connect

    done = subprocess.run(command("framework.cli.normalize", "--remote", connect_server.url, "--output",
                                  str(output), "--full-refresh", "--quiet"),
                          capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=180)
    assert done.returncode == 0, done.stderr
    assert tables(str(output)) == over_connect


def test_realtime_change_data_over_connect(connect_server, cdc_shop, tmp_path):  # noqa: F811
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(CDC_MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": cdc_shop.api.url, "end": "2021-01-03T23:59:59Z"}))
    out = tmp_path / "out"
    destination = tmp_path / "destination.json"
    destination.write_text(json.dumps({"output": str(out), "format": {
        "format_type": "replicant_json", "mode": "realtime", "schema": "io_blitzz"}}))
    args = (str(manifest), "--config", str(config), "--remote", connect_server.url, "--destination",
            str(destination), "--streams", "stock")

    cdc_shop.stock = [stock_item("w1", 1, "a,b", 3, 1), stock_item("w1", 2, None, 5, 1)]
    code, _, other = connect_run(*args, cwd=tmp_path)
    assert code == 0, other
    cdc_shop.stock = [stock_item("w1", 1, "a,b", 4, 2), stock_item("w1", 2, None, 5, 2, deleted="2021-01-02")]
    code, _, other = connect_run(*args, cwd=tmp_path)
    assert code == 0, other

    operations = [json.loads(line) for path in op_files(out, "stock", ".json")
                  for line in path.read_text(encoding="utf-8").splitlines()]
    changes = [(op["opType"], op["before"]["sku"], op["after"]["sku"], op["after"]["count"]) for op in operations]
    assert changes == [("I", "null", "1", "3"), ("I", "null", "2", "5"),  # the first sync: both rows new
                       ("U", "1", "null", "4"), ("D", "2", "null", "null")], operations  # then changed, deleted


def test_an_interrupted_sync_over_connect_stops_its_jobs(connect_server, files, shop, tmp_path):
    """Ctrl-C while a task hangs on the API: the client interrupts the jobs of its tag on the server (its
    tasks are killed there) and exits at once instead of waiting for the hanging request; the state
    covers only the windows that finished."""
    out = tmp_path / "out"
    shop.hang_since = {"2024-01-04T00:00:00Z"}
    marks = ("Asked to cancel jobs with tag", "Executor killed task")  # the server's log lines
    before = [connect_server.log().count(mark) for mark in marks]
    process = subprocess.Popen(command("framework.cli.run", *files[:1], "--config", files[1], "--remote",
                                       connect_server.url, "--output", str(out), "--streams", "items"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path, env=_env())
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            state_file = out / "_airbyte_state" / "state.json"
            if state_file.exists() and shop.hanging.is_set() and saved_state(out)["streams"].get(
                    "items", {}).get("state") == {"updated_at": "2024-01-03T18:00:00Z"}:
                break
            time.sleep(0.2)  # polling a real subprocess
        else:
            pytest.fail(f"the sync did not reach the hanging window (exit {process.poll()})")
        process.send_signal(signal.SIGINT)
        # Without the interruption the client would wait for the hanging request (released after 300 s).
        process.wait(timeout=60)
    finally:
        killed = process.poll() is None
        if killed:
            process.kill()
            process.wait()
        stderr = process.stderr.read().decode() if process.stderr else ""
        if process.stderr:
            process.stderr.close()

    assert not killed and process.returncode == 130, stderr  # run-manifest's clean exit on Ctrl-C
    assert not shop.release.is_set()  # the request still hangs: the client did not wait for it
    deadline = time.monotonic() + 30  # the job is cancelled, then its task killed on the server
    while any(connect_server.log().count(mark) <= count for mark, count in zip(marks, before)):
        assert time.monotonic() < deadline, f"the server did not cancel the sync's job and kill its task: {marks}"
        time.sleep(0.2)
    assert saved_state(out)["streams"]["items"]["state"] == {"updated_at": "2024-01-03T18:00:00Z"}
    assert sorted(r["id"] for r in read_parquet(out, "items")) == [1, 2, 3, 4, 5, 6]


def server_daemons(server_pid: int) -> set[int]:
    """The Python worker daemons the server's JVM started (one per session that ran Python tasks)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command_line = handle.read()
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        if parent == server_pid and b"pyspark.worker" in command_line:
            found.add(int(entry))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="counts the server's processes in /proc")
def test_syncs_that_join_one_named_session_share_the_servers_warm_python_workers(connect_server, files, tmp_path):
    """The server starts a Python worker daemon per session: the second sync in a named session starts
    none (its tasks run in the warm workers), and finds the session open (the first did not release it)."""
    assert connect_server.process is not None
    url = f"{connect_server.url}/;session_id={uuid.uuid4()}"
    before = server_daemons(connect_server.process.pid)
    for number, stream in enumerate(("items", "accounts")):
        code, events, other = connect_run(files[0], "--config", files[1], "--remote", url, "--output",
                                          str(tmp_path / f"out{number}"), "--streams", stream, cwd=tmp_path)
        assert code == 0, other
        assert next(e for e in events if e["event"] == "summary")["records"] > 0
        if number == 0:
            first = server_daemons(connect_server.process.pid)
    assert len(first - before) == 1  # the session's daemon
    assert server_daemons(connect_server.process.pid) - first == set()  # none new for the second sync


def test_a_closed_named_session_cannot_be_joined_and_the_message_says_what_to_give(connect_server, files, tmp_path):
    session = str(uuid.uuid4())
    url = f"{connect_server.url}/;session_id={session}"
    closer = ("import sys\nfrom pyspark.sql import SparkSession\n"
              "spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()\nspark.range(1).count()\nspark.stop()\n")
    done = subprocess.run([sys.executable, "-c", closer, url], capture_output=True, text=True, cwd=tmp_path,
                          env=_env(), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]

    code, events, other = connect_run(files[0], "--config", files[1], "--remote", url, "--output",
                                      str(tmp_path / "out"), cwd=tmp_path, timeout=120)
    assert code == 2, other
    error = next(e for e in events if e["event"] == "failure")["error"]
    assert "was closed on the server" in error and "give a new session_id" in error
