"""SIGTERM and SIGHUP stop ``run-manifest`` as Ctrl-C does, end to end: a subprocess reads the shop until
a window hangs, gets the signal, answers 143 (SIGTERM) or 129 (SIGHUP) with one line, leaves no temporary
file, and the next run lands every id (Spark mode, protocol mode)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli.test_run_manifest_spark import command
from cli.test_run_manifest_spark import files as files  # noqa: F401  (the fixture)
from cli.test_run_manifest_spark import run as run  # noqa: F401  (the fixture)
from cli.test_run_manifest_spark import shop as shop  # noqa: F401  (the fixture)
from spark.test_pipeline import read_parquet, saved_state

pytestmark = pytest.mark.spark


def signal_when_hanging(process: subprocess.Popen, shop, signum: int, folder: Path | None = None,
                        running: list[str] | None = None) -> str:
    """Send ``signum`` to the command (its process only: a scheduler's `kill`) once a window hangs; its stderr.
    ``running`` gets the processes working in ``folder`` (the command's) just before."""
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None and not shop.hanging.is_set():
            time.sleep(0.2)  # polling a real subprocess; nothing here runs on a fake clock
        assert shop.hanging.is_set(), "the sync did not reach the hanging window in time"
        time.sleep(1)  # let the finished windows be saved
        if running is not None and folder is not None:
            running.extend(left_running(folder, 0))
        os.kill(process.pid, signum)
        process.wait(timeout=90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
    assert process.stderr is not None
    stderr = process.stderr.read().decode()
    process.stderr.close()
    return stderr


MARK = "TERMINATION_TEST_RUN"  # in the command's environment, which Spark's JVM and its Python workers inherit


def left_running(folder: Path, wait: float = 30.0) -> list[str]:
    """The processes of the command started for ``folder`` (its environment marked by :data:`MARK`) still
    there once ``wait`` seconds have passed without them all gone."""
    mark = f"{MARK}={folder}".encode()
    deadline = time.monotonic() + wait
    while True:
        found = []
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and mark in (proc / "environ").read_bytes().split(b"\0"):
                    found.append(f"{proc.name}: {(proc / 'cmdline').read_bytes()[:120]!r}")
            except OSError:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)  # polling real processes


def covers(state: dict, updated_at: str) -> bool:
    """Whether a saved state of the shop's items covers a record updated at ``updated_at`` (a cursor value,
    or the finished windows of a date-range state)."""
    if "updated_at" in state:
        return updated_at <= state["updated_at"]
    return any("most_recent_cursor_value" in window and window["start"] <= updated_at <= window["end"]
               for window in state.get("slices", []))


def temporary_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.name.endswith(".tmp"))


def staged_files(folder: Path) -> list[str]:
    staging = folder / "_airbyte_state" / "staging"
    return sorted(p.as_posix() for p in staging.rglob("*") if p.is_file()) if staging.exists() else []


@pytest.mark.parametrize(("signum", "code", "flags"), [
    (signal.SIGTERM, 143, ()),  # the driver reads while Spark starts (a local master's default)
    (signal.SIGTERM, 143, ("--wait-for-spark",)),  # Spark's tasks read: its JVM and Python workers are up
    (signal.SIGHUP, 129, ()),
], ids=["term", "term-in-spark-tasks", "hup"])
def test_a_spark_sync_stopped_by_a_signal_says_so_and_the_next_run_lands_every_id(files, shop, run, tmp_path,
                                                                                   signum, code, flags):
    out = tmp_path / "out"
    shop.hang_since = {"2024-01-04T00:00:00Z"}
    process = subprocess.Popen(command(*files, "--output", str(out), "--streams", "items", *flags),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path,
                               start_new_session=True, env={**os.environ, MARK: str(tmp_path)})
    running: list[str] = []
    stderr = signal_when_hanging(process, shop, signum, tmp_path, running)
    if flags:
        assert len(running) >= 3, running  # the command, Spark's JVM and its Python worker(s)
    name = signal.Signals(signum).name
    assert process.returncode == code, stderr
    assert f"run-manifest: terminated by {name}; the files and state saved so far are complete" in stderr
    assert "Traceback" not in stderr and "py4j" not in stderr, stderr
    assert temporary_files(out) == []
    assert staged_files(out) == []
    assert left_running(tmp_path) == []  # the JVM and its Python workers stopped with the command
    landed = sorted(r["id"] for r in read_parquet(out, "items"))
    assert landed == [1, 2, 3, 4, 5, 6]  # the finished windows, each record once

    shop.hang_since = set()
    shop.release.set()
    again, _, stderr = run("--output", str(out), "--streams", "items", "--quiet")
    assert again == 0, stderr
    ids = sorted(r["id"] for r in read_parquet(out, "items"))
    # every id landed; the saved cursor value's record (id 6) is read again, as Airbyte's inclusive
    # incremental start does after any stop
    assert set(ids) == set(range(1, 9)) and [i for i in ids if ids.count(i) > 1] == [6, 6]
    assert saved_state(out)["sync_id"] == 2


def test_a_protocol_read_stopped_by_sigterm_keeps_its_last_state_and_the_next_read_finishes(files, shop, tmp_path):
    shop.hang_since = {"2024-01-04T00:00:00Z"}
    out = tmp_path / "messages.jsonl"
    with out.open("wb") as sink:
        process = subprocess.Popen(command(*files, "--protocol", "--streams", "items"), stdout=sink,
                                   stderr=subprocess.PIPE, cwd=tmp_path, start_new_session=True)
        stderr = signal_when_hanging(process, shop, signal.SIGTERM)
    assert process.returncode == 143, stderr
    assert "run-manifest: terminated by SIGTERM; the last state printed is where the next run resumes (records it does not cover are read again)" in stderr
    assert "Traceback" not in stderr
    messages = [json.loads(line) for line in out.read_text().splitlines()]
    last_state = max(i for i, m in enumerate(messages) if m["type"] == "STATE")
    saved = messages[last_state]["state"]["stream"]["stream_state"]
    seen = {m["record"]["data"]["id"]: m["record"]["data"]["updated_at"] for m in messages if m["type"] == "RECORD"}
    first = [m["record"]["data"]["id"] for m in messages if m["type"] == "RECORD"]

    shop.hang_since = set()
    shop.release.set()
    state = tmp_path / "state.json"
    state.write_text(json.dumps([messages[last_state]["state"]]))
    done = subprocess.run(command(*files, "--protocol", "--streams", "items", "--state", str(state)),
                          capture_output=True, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()
    second = [json.loads(line)["record"]["data"]["id"] for line in done.stdout.splitlines()
              if json.loads(line)["type"] == "RECORD"]
    assert set(first + second) == set(range(1, 9))  # every id
    # the records the last state covers are not read again, but for the one at its cursor value (the next
    # window starts there, inclusive)
    again = {i for i in second if i in seen and covers(saved, seen[i])}
    assert len(again) <= 1, (saved, second)
