"""Two ``run-manifest`` processes started at the same moment into one output: one holds the output's lease and
lands every item once; the other stops at once with exit 75 naming the holder, or, with ``--wait-for-lock``,
waits and then reads only what is new (from the state the first saved)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from cli.test_driver_crash import command, files_of
from spark.test_pipeline import read_parquet, saved_state, serve

from framework.storage.lease import EXIT_BUSY, LEASE_KEY

pytestmark = pytest.mark.spark

HANGING = "2024-01-02T00:00:00Z"  # the holder waits here until the test lets it go on


def start(manifest: str, config: str, out: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(command(manifest, config, "--output", str(out), "--streams", "items", *args),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=out.parent,
                            start_new_session=True)


def finish(process: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    return process.returncode, err.decode()


def ids(out: Path) -> list[int]:
    return [row["id"] for row in read_parquet(out, "items")]


def test_two_syncs_at_once_one_is_refused_naming_the_holder(fake_api, tmp_path):
    shop = serve(fake_api)
    shop.hang_since = {HANGING}
    out = tmp_path / "out"
    manifest, config = files_of(tmp_path, shop)
    first, second = start(manifest, config, out), start(manifest, config, out)
    try:
        # whichever took the lease hangs on the second window; the other is refused meanwhile
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and first.poll() is None and second.poll() is None:
            time.sleep(0.2)  # polling real subprocesses
        refused, holder = (first, second) if first.poll() is not None else (second, first)
        code, err = finish(refused, 60)
        assert code == EXIT_BUSY, err[-3000:]
        assert f"pid {holder.pid} on " in err and "--wait-for-lock" in err and LEASE_KEY in err
    finally:
        shop.release.set()
    code, err = finish(holder)
    assert code == 0, err[-3000:]
    assert ids(out) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert not (out / LEASE_KEY).exists()


def test_with_wait_for_lock_the_second_sync_waits_and_reads_only_what_is_new(fake_api, tmp_path):
    shop = serve(fake_api)
    shop.hang_since = {HANGING}
    out = tmp_path / "out"
    manifest, config = files_of(tmp_path, shop)
    first, second = (start(manifest, config, out, "--wait-for-lock", "300"),
                     start(manifest, config, out, "--wait-for-lock", "300"))
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not shop.hanging.is_set():
            time.sleep(0.2)
        time.sleep(3)  # the other is waiting for the lease now
        assert first.poll() is None and second.poll() is None
    finally:
        shop.release.set()
    (code1, err1), (code2, err2) = finish(first), finish(second)
    assert (code1, code2) == (0, 0), (err1[-3000:], err2[-3000:])
    assert "waiting up to 300 s for the sync that holds the output" in err1 + err2
    # the second started from the first's state: item 8 again only, as every incremental sync reads the record
    # at its saved cursor value again (Airbyte's inclusive window start); nothing else twice
    assert ids(out) == [1, 2, 3, 4, 5, 6, 7, 8, 8]
    assert saved_state(out)["sync_id"] == 2


def test_a_killed_holder_is_taken_over_at_once_by_the_next_sync(fake_api, tmp_path):
    """SIGKILL leaves the lease behind (no `finally` runs); its pid is gone, so the next sync on this host takes
    it over at once, says so, and loses nothing."""
    shop = serve(fake_api)
    shop.hang_since = {HANGING}
    out = tmp_path / "out"
    manifest, config = files_of(tmp_path, shop)
    first = start(manifest, config, out)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not shop.hanging.is_set() and first.poll() is None:
            time.sleep(0.2)
        assert shop.hanging.is_set() and (out / LEASE_KEY).exists()
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(60)
    finally:
        shop.release.set()
    assert (out / LEASE_KEY).exists()  # left behind by the killed sync
    shop.hang_since = set()
    code, err = finish(start(manifest, config, out))
    assert code == 0, err[-3000:]
    assert f"took over the lease of the output from a sync that is gone (pid {first.pid} on " in err
    found = Counter(ids(out))
    assert sorted(found) == [1, 2, 3, 4, 5, 6, 7, 8]
    # twice at most the record at the killed sync's saved cursor value (the inclusive window start), once the rest
    assert sum(found.values()) - 8 <= 1
    assert not (out / LEASE_KEY).exists()
