"""The driver of a sync on the standalone cluster killed mid-sync, with a task still running on an executor
(a zombie once the driver is gone): the next run loses nothing, reads no finished window again, and nothing
the zombie wrote becomes visible. (A standalone executor usually stops its tasks soon after its driver is
gone; a zombie that does stage its files is tested deterministically in tests/spark/test_pipeline.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from cli.test_driver_crash import HANGING, command, files_of, kill_when_beyond_saved, staged, visible_or_publishing
from spark.test_pipeline import read_parquet, saved_state, serve

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


def test_a_killed_driver_and_its_zombie_task_leave_no_duplicates(spark_cluster, fake_api, tmp_path):
    shop = serve(fake_api)
    out = tmp_path / "out"
    manifest, config = files_of(tmp_path, shop)
    shop.hang_since = {HANGING}
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    # one machine: the output folder is the same path for the driver and every worker
    args = ["--output", str(out), "--shared-path", "--streams", "items", "--master", spark_cluster.master_url]
    process = subprocess.Popen(command(manifest, config, *args), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, cwd=tmp_path, env=env, start_new_session=True)
    try:
        def let_it_go() -> None:  # the hanging window's task goes on, slowly, and outlives its driver
            fake_api.fault(hang=3, path="/items")
            shop.release.set()

        kill_when_beyond_saved(process, out, shop, group=True, before_kill=let_it_go)  # the executors live on
        time.sleep(4)  # while it may still stage (Spark usually stops an executor's tasks once its driver is gone)
    finally:
        shop.release.set()
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert visible_or_publishing(out) == [1, 2, 5, 6, 7, 8]  # what the state covers; none of the zombie's

    shop.hang_since = set()
    rerun = subprocess.run(command(manifest, config, *args, "--quiet"), capture_output=True, cwd=tmp_path,
                           env=env, timeout=300)
    assert rerun.returncode == 0, rerun.stderr.decode()[-3000:]
    ids = sorted(r["id"] for r in read_parquet(out, "items"))
    assert set(ids) == set(range(1, 9))  # nothing lost
    assert [i for i in set(ids) if ids.count(i) > 1] == [2]  # only the record at the saved value, again
    assert saved_state(out)["streams"]["items"]["state"] == {"updated_at": "2024-01-04T18:00:00Z"}
    assert staged(out) == []
