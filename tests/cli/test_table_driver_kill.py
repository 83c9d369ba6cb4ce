"""A driver SIGKILLed between a table's data files and their commit (`run-manifest --format delta` in a
subprocess, killed by a hook at its first commit with files: deterministic), then a sync that lands each id once.

The killed sync leaves Parquet files in the table's data folder that no commit names: no reader sees them, the next
sync reads that work again from the table's state and commits it once, and the orphans go once past the grace
period."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from spark.test_pipeline import MANIFEST, config_for, serve

pytest.importorskip("deltalake", reason="the tables extra (deltalake) is not installed: pip install '.[tables]'")


from framework.tables.delta import DeltaLakeTable  # noqa: E402
from framework.tables.factory import app_id  # noqa: E402

pytestmark = pytest.mark.spark

#: run-manifest with DeltaLakeTable.commit replaced: the process kills itself at the first commit that carries files
KILLING = textwrap.dedent("""
    import os, signal, sys
    from framework.tables import delta
    from framework.cli.run import main

    committing = delta.DeltaLakeTable.commit

    def commit(self, change):
        if change.files:
            os.kill(os.getpid(), signal.SIGKILL)
        return committing(self, change)

    delta.DeltaLakeTable.commit = commit
    sys.exit(main(sys.argv[1:]))
""")


def run(tmp_path: Path, script: str | None, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", script, *args] if script else [sys.executable, "-m", "framework.cli.run", *args]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=300,
                          env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})


def test_a_driver_killed_before_the_commit_then_a_sync_that_lands_each_id_once(fake_api, tmp_path):
    shop = serve(fake_api)
    (tmp_path / "manifest.yaml").write_text(MANIFEST)
    (tmp_path / "config.json").write_text(json.dumps(config_for(shop)))
    out = tmp_path / "out"
    args = ("manifest.yaml", "--config", "config.json", "--output", str(out), "--format", "delta",
            "--streams", "items", "--no-check")

    killed = run(tmp_path, KILLING, *args)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    table = DeltaLakeTable(str(out / "items"))
    written = sorted(Path(table.data_location()).glob("*.parquet"))
    assert written, "the killed sync wrote no data file before its commit"
    assert table.last_state(app_id("items")) is None  # no commit carries data or state
    assert sorted(table.orphans()) == sorted(str(p) for p in written)

    again = run(tmp_path, None, *args)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    ids = pl.read_delta(table.location)["id"].to_list()  # polars: deltalake's pyarrow reader aborts at exit
    assert sorted(ids) == [1, 2, 3, 4, 5, 6, 7, 8]  # each once: the orphans are never read
    assert table.last_state(app_id("items")).state == {"updated_at": "2024-01-04T18:00:00Z"}  # type: ignore[union-attr]
    # younger than the grace period, the orphans stay (a writer may be about to commit them); then they go
    assert sorted(table.orphans()) == sorted(str(p) for p in written)
    assert sorted(table.remove_orphans(0)) == sorted(str(p) for p in written)
    assert table.orphans() == []
    assert sorted(pl.read_delta(table.location)["id"].to_list()) == [1, 2, 3, 4, 5, 6, 7, 8]
