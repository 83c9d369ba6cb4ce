"""examples/demo.sh end to end: the shop API, validate-manifest, two syncs on local Spark, the API stopped.

Slow (two runs of ``run-manifest``, 25-35 s each on a two-core machine), hence
the ``spark`` mark. The demo runs on a free port and writes into a temp folder.
It must end within two minutes, and within a minute apart from Spark's start-up.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LIMIT_SECONDS = 60


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_demo_syncs_twice_and_the_second_sync_reads_only_the_new_records(tmp_path):
    assert (BIN / "run-manifest").exists(), "run-manifest is not installed in this venv: run `make setup`"
    port = _free_port()
    output = tmp_path / "demo"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "DEMO_OUTPUT": str(output),
           "SHOP_PORT": str(port), "PYSPARK_PYTHON": sys.executable}
    started = time.monotonic()
    done = subprocess.run(["bash", str(REPO / "examples" / "demo.sh")], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=LIMIT_SECONDS * 2, check=False)
    elapsed = time.monotonic() - started
    shown = f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
    assert done.returncode == 0, shown
    out = done.stdout
    assert f"listening on http://127.0.0.1:{port}" in out
    assert "1 file checked: 0 errors, 0 warnings" in done.stderr
    assert "The incremental sync read exactly the records the API added or changed" in out, shown
    assert "701 orders;" in out  # the pyarrow line the demo prints was run, on the first sync's files
    assert "sync 2 ->" in done.stderr and "saved" in done.stderr
    assert out.rstrip().endswith("(rate limited)") and "shop API stopped" in out
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass  # the API is gone
    orders = pq.read_table(output / "orders")
    syncs = set(orders.column("_airbyte_meta").combine_chunks().field("sync_id").to_pylist())
    assert syncs == {1, 2} and (output / "_airbyte_state" / "state.json").exists()
    # Spark's own start-up (about 12 s per run here, much more on a busy machine) is not the demo's to
    # cut; everything else (API, validation, reading, writing, the steps between) must fit the budget.
    spark_start = sum(float(s) for s in re.findall(r"Spark ready in ([0-9.]+) s", done.stderr))
    assert elapsed - spark_start < LIMIT_SECONDS, f"the demo took {elapsed:.0f} s ({spark_start:.0f} s Spark start)"
