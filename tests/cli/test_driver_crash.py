"""A driver killed mid-sync, in local mode (``run-manifest`` in a subprocess): the windows that finished
beyond a hanging one are kept in the state and not read again, a task that outlives its driver never
makes its files visible, and the next run loses nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from spark.test_pipeline import MANIFEST, config_for, read_parquet, saved_state, serve

from framework.storage.state_store import STAGING_PREFIX

pytestmark = pytest.mark.spark

HANGING = "2024-01-02T00:00:00Z"  # the second of four one-day windows (items 3 and 4)


def command(manifest: str, config: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "framework.cli.run", manifest, "--config", config, *args]


def files_of(tmp_path: Path, shop) -> tuple[str, str]:
    manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
    manifest.write_text(MANIFEST)
    config.write_text(json.dumps(config_for(shop)))
    return str(manifest), str(config)


def staged(out: Path) -> list[Path]:
    root = out / STAGING_PREFIX
    return [p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")] if root.exists() else []


def visible_or_publishing(out: Path) -> list[int]:
    """The ids in the visible files, and in the staged files the saved state lists as still to publish (the
    driver was killed between saving that state and moving them: the next run moves them first)."""
    pending = [pq.read_table(out / item["staged"]).column("id").to_pylist()
               for item in saved_state(out).get("publishing", [])
               if (out / item["staged"]).exists()]  # else moved already, before the next save dropped the list
    return sorted([r["id"] for r in read_parquet(out, "items")] + [i for ids in pending for i in ids])


def beyond_saved(out: Path) -> bool:
    """Whether the saved state has the first window and keeps the windows finished after the hanging one."""
    try:
        state = saved_state(out)["streams"]["items"]["state"]
    except (FileNotFoundError, KeyError, json.JSONDecodeError):
        return False
    return state.get("state_type") == "date-range" and [(s["start"], s["end"]) for s in state["slices"]] == [
        ("2024-01-01T00:00:00Z", "2024-01-01T18:00:00Z"), ("2024-01-03T00:00:00Z", "2024-01-04T23:59:59Z")]


def kill_when_beyond_saved(process: subprocess.Popen, out: Path, shop, *, group: bool,
                           before_kill: Callable[[], None] | None = None) -> str:
    """Wait until windows 1, 3 and 4 are saved and window 2 hangs; (call ``before_kill``;) SIGKILL the driver
    (only it, or its whole process group); return its stderr."""
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            if beyond_saved(out) and shop.hanging.is_set():
                break
            time.sleep(0.2)  # polling a real subprocess
        else:
            error = process.stderr.read().decode()[-3000:] if process.poll() is not None and process.stderr else ""
            pytest.fail(f"the sync never saved the windows beyond the hanging one (exit {process.poll()}): {error}")
    finally:
        if before_kill is not None:
            before_kill()
        if process.poll() is None:
            if group:
                os.killpg(process.pid, signal.SIGKILL)
            else:
                os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    assert process.stderr is not None
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    return stderr


def test_a_killed_driver_leaves_the_windows_beyond_saved_and_the_next_run_reads_only_the_gap(fake_api, tmp_path):
    shop = serve(fake_api)
    out = tmp_path / "out"
    manifest, config = files_of(tmp_path, shop)
    shop.hang_since = {HANGING}
    # --no-check: the requests counted below are the sync's own (the check reads a first page before Spark).
    # --wait-for-spark: every window runs as a Spark task, the hanging one too, so that it is a task that
    # outlives its driver. (Read by the driver while Spark starts, the hanging window would hold the driver's
    # own thread, and the windows beyond it would be saved only once it timed out, twice, moments before the
    # process ends: the kill would race the exit.)
    process = subprocess.Popen(command(manifest, config, "--output", str(out), "--streams", "items", "--no-check",
                                       "--wait-for-spark"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path,
                               start_new_session=True)
    try:
        kill_when_beyond_saved(process, out, shop, group=False)  # the driver alone: its Spark may go on a while
        shop.release.set()  # a task still running now finishes its window: a zombie, if Spark is still up
        time.sleep(3)
    finally:
        shop.release.set()
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever of it is left
        except ProcessLookupError:
            pass
    assert visible_or_publishing(out) == [1, 2, 5, 6, 7, 8]  # what the state covers; the zombie's: not visible
    state = saved_state(out)["streams"]["items"]["state"]
    assert state["slices"][0] == {"start": "2024-01-01T00:00:00Z", "end": "2024-01-01T18:00:00Z",
                                  "most_recent_cursor_value": "2024-01-01T18:00:00Z"}

    shop.hang_since = set()
    before = len(fake_api.received("/items"))
    rerun = subprocess.run(command(manifest, config, "--output", str(out), "--streams", "items", "--quiet",
                                   "--no-check"),
                           capture_output=True, cwd=tmp_path, timeout=300)
    assert rerun.returncode == 0, rerun.stderr.decode()
    asked = {(r.param("since"), r.param("until")) for r in fake_api.received("/items")[before:]}
    # the gap, from the saved value up to the windows finished beyond it; then the last of those is read again
    # from its end only (inclusive, as from a resume value: as airbyte-cdk reads such a state)
    end = ("2024-01-04T23:59:59Z", "2024-01-04T23:59:59Z")
    gap = asked - {end}
    assert end in asked and min(gap)[0] == "2024-01-01T18:00:00Z"
    assert max(until for _, until in gap) == "2024-01-02T23:59:59Z"
    ids = sorted(r["id"] for r in read_parquet(out, "items"))
    assert set(ids) == set(range(1, 9))  # nothing lost
    # read twice: only the record at the saved value (the gap starts there, inclusive); windows 3 and 4 once
    assert [i for i in set(ids) if ids.count(i) > 1] == [2]
    assert saved_state(out)["streams"]["items"]["state"] == {"updated_at": "2024-01-04T18:00:00Z"}
    assert staged(out) == [] and "publishing" not in saved_state(out)
