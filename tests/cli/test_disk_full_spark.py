"""A disk that fills up during a Spark-mode sync: one line that names the file, exit 1, nothing half-written.

The disk is made "full" for the run-manifest process and every process it starts (the JVM, the Python
workers) with a file-size limit (``RLIMIT_FSIZE``, ``SIGXFSZ`` ignored): a write past it fails with an
``OSError`` as a full disk's does (errno 27 instead of 28), with no root and no small filesystem needed.
The state and the catalog are smaller than the limit; the stream's Parquet file is not.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys

import pytest
from cli import test_test_read as helpdesk
from cli.test_test_read import _write

pytestmark = pytest.mark.spark
api = helpdesk.api  # the helpdesk API of tests/cli/test_test_read.py, as a fixture of this module too

LIMIT = 1500  # bytes: the state (~150) and the catalog (~800) fit, a Parquet file of 25 tickets does not


def _full_disk() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_a_full_disk_is_one_line_naming_the_file_and_leaves_nothing_half_written(tmp_path, api):
    manifest, config = _write(tmp_path, api)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "framework.cli.run", manifest, "--config", config,
                           "--output", str(out)], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          preexec_fn=_full_disk)
    assert done.returncode == 1, done.stderr
    failed = [line for line in done.stderr.splitlines() if "FAILED" in line]
    assert len(failed) == 1, done.stderr
    assert f"{out}/tickets/" in failed[0] and ".parquet could not be written (File too large)" in failed[0]
    assert "nothing of the partitions it held was kept, and their state stays as it was" in failed[0]
    assert "  tickets: 0 records, 0 file(s), 0/1 partitions" in failed[0]  # what was committed: nothing
    # no Java stack trace, no Python traceback: the progress, the failure and the summary only
    assert "Traceback" not in done.stderr and "\tat " not in done.stderr and " ERROR " not in done.stderr
    assert len(done.stderr.splitlines()) < 12, done.stderr
    # nothing half-written: no data file, no temporary file, and a state that covers nothing of the stream
    left = [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()]
    assert not [p for p in left if not p.startswith((".metadata/", "_airbyte_state/"))], left
    assert not [p for p in left if p.endswith(".tmp")], left
    state = json.loads((out / "_airbyte_state" / "state.json").read_text())
    assert state["streams"]["tickets"].get("state") in (None, {}), state
    assert os.path.getsize(out / "_airbyte_state" / "state.json") < LIMIT
