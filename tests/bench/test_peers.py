"""bench/peers.py's own logic: the process-tree memory it samples, the watchers of output lines, the report.

Nothing here runs a benchmark: the modes are represented by hand-made
results, and the memory test measures a child that holds a known amount.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))  # the bench scripts import their neighbours by name (after tests/, which has a
# `normalization` package of its own that bench/normalization.py must not shadow)

import peers  # noqa: E402 - after the path above
from peers import CDK, DLT, PROTOCOL, SPARK, JsonLog, RecordLines, Result  # noqa: E402


def result(mode: str, records: int = 1000, run: float = 1.0, wall: float = 2.0, expected: int = 1000,
           **more) -> Result:
    return Result(peers.LABELS[mode], records, expected, 0.5, run, wall, 50.0, **more)


def test_tree_rss_counts_the_children_too():
    holder = "import sys; b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); print('ok', flush=True); " \
             "sys.stdin.read()"
    parent = (f"import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', {holder!r}], "
              "stdin=sys.stdin, stdout=sys.stdout); p.wait()")
    outer = subprocess.Popen([sys.executable, "-c", parent], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert outer.stdout.readline() == "ok\n"  # the grandchild holds its 200 MiB now
        assert peers.tree_rss(outer.pid) > 200 * 2**20
    finally:
        outer.stdin.close()
        outer.wait(timeout=30)
    assert peers.tree_rss(outer.pid) == 0  # gone


def test_record_lines_count_ours_the_cdks_and_the_bare_loops():
    watcher = RecordLines()
    lines = [b'{"type":"TRACE","trace":{"type":"STREAM_STATUS","stream_status":{"status":"STARTED"}}}\n',
             b'{"type":"RECORD","record":{"stream":"records","data":{}}}\n',
             b'{"type": "RECORD", "record": {"stream": "records", "data": {}}}\n',
             b'{"type":"LOG","log":{"message":"RECORD"}}\n',
             b"records 40\n"]
    for moment, line in enumerate(lines):
        watcher.feed(line, float(moment))
    assert (watcher.records, watcher.first, watcher.error) == (42, 0.0, None)
    watcher.feed(b'{"type":"TRACE","trace":{"type":"ERROR","error":{"message":"401 at /records"}}}\n', 9.0)
    assert watcher.error == "401 at /records"


def test_json_log_takes_start_end_records_and_failures():
    watcher = JsonLog()
    watcher.feed(b"Traceback (most recent call last):\n", 0.0)
    watcher.feed(b'{"event":"started","time":"t","master":"local[2]"}\n', 1.0)
    watcher.feed(b'{"event":"failure","time":"t","stream":"records","error":"boom"}\n', 2.0)
    watcher.feed(b'{"event":"summary","time":"t","records":7,"ok":false}\n', 3.0)
    assert (watcher.first, watcher.last, watcher.records, watcher.error) == (1.0, 3.0, 7, "boom")
    assert watcher.other == ["Traceback (most recent call last):"]


def test_json_log_takes_when_spark_was_ready_on_this_process_clock():
    watcher = JsonLog()
    ready_at = datetime.fromtimestamp(time.time() - 2.0, timezone.utc).isoformat().replace("+00:00", "Z")
    watcher.feed(b'{"event":"spark_ready","time":"t","stream":"records","ready_at":"%s","records":250000}\n'
                 % ready_at.encode(), 10.0)
    assert watcher.ready == pytest.approx(8.0, abs=0.5) and watcher.ready_records == 250_000


def test_once_up_counts_the_records_landed_after_spark_was_ready_over_the_time_after():
    spark = result(SPARK, records=2_000_000, run=14.5, up=5.0, up_records=500_000)  # started at 0.5 s, ends at 15
    assert spark.rate_once_up == pytest.approx(150_000)  # 1,500,000 records in 10 s
    lines = peers.ratio_lines({SPARK: spark, peers.BARE: result(peers.BARE, records=2_000_000, run=10.0)})
    assert lines == ["Spark once up (spark_ready at 5.00 s, 500,000 records landed by then): 150,000 records/s, "
                     "0.75x the bare loop's  target >= 0.7: met"]
    assert result(SPARK, run=4.0, up=5.0).rate_once_up is None  # ready after the run's end: nothing to say


def test_ratios_name_a_missing_peer_instead_of_a_number():
    missing = Result(peers.LABELS[DLT], 0, 1000, 0.0, 0.0, 0.0, 0.0, missing="dlt not installed")
    lines = peers.ratio_lines({PROTOCOL: result(PROTOCOL, run=0.5), peers.BARE: result(peers.BARE, run=0.25),
                               SPARK: result(SPARK, expected=200_000), DLT: missing,
                               CDK: result(CDK, run=10.0, wall=20.0, expected=200_000)})  # Spark's target: from 200,000
    assert lines[0].startswith("protocol / bare loop: 0.50x records/s") and lines[0].endswith("target >= 0.7 over the wall time: met")
    assert lines[1] == "Spark / dlt: n/a (dlt rest_api -> Parquet: not run)"
    assert lines[2].startswith("protocol / airbyte-cdk: 20.00x records/s (start-up left out), 10.00x over the wall")
    assert lines[3].startswith("Spark / airbyte-cdk: 10.00x") and lines[3].endswith("target >= 3 over the wall time: met")
    assert lines[4] == "Spark once up: n/a (no spark_ready event: the driver read every group before Spark was ready)"
    table = peers.markdown_table([result(PROTOCOL), missing])
    assert "| dlt rest_api -> Parquet | 1,000 | not run: dlt not installed |" in table
    assert "| run-manifest --protocol | 1,000 | 0.50 | 1.00 | 1,000 | 2.00 | 500 | 50 |" in table


def test_best_keeps_the_fastest_run_and_the_highest_memory_and_a_failure_wins():
    slow, fast = result(PROTOCOL, run=2.0), result(PROTOCOL, run=1.0)
    picked = peers.best([replace(slow, peak_mib=80.0), fast])
    assert (picked.run, picked.peak_mib) == (1.0, 80.0)
    failed = result(PROTOCOL, error="exit code 1")
    assert peers.best([fast, failed]) is failed
    assert peers.checked(result(PROTOCOL, records=999)).error == "delivered 999 records, expected 1,000"


@pytest.mark.parametrize("argv", [["--records", "2e5"], ["--modes", "bare,spork"]])
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        peers.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "give whole numbers" in err or "unknown spork" in err


def test_record_lines_count_blocks_as_lines_would():
    lines = [b'{"type":"TRACE","trace":{"type":"STREAM_STATUS","stream_status":{"status":"STARTED"}}}\n',
             *[b'{"type":"RECORD","record":{"stream":"r","data":{"note":"{\\"type\\":\\"RECORD\\"}"}}}\n'] * 5,
             b'{"type":"STATE","state":{}}\n',
             *[b'{"type": "RECORD", "record": {"stream": "r", "data": {}}}\n'] * 3]
    text = b"".join(lines)
    for cut in range(0, len(text), 37):  # blocks of whole lines, as measure() hands them over
        watcher = RecordLines()
        head, tail = text[:cut], text[cut:]
        end = head.rfind(b"\n") + 1
        if end:
            watcher.feed_lines(head[:end], 1.0)
        watcher.feed_lines(head[end:] + tail, 2.0)
        assert watcher.records == 8
        assert watcher.first == (1.0 if end else 2.0)


def test_spark_against_dlt_is_judged_by_the_target_of_its_size_over_the_wall_time():
    """The speed targets: 3x dlt at 200,000 records, 10x at 2,000,000, both over the wall time."""
    def verdict(records: int, spark_wall: float) -> str:
        lines = peers.ratio_lines({SPARK: Result(peers.LABELS[SPARK], records, records, 0.5, 1.0, spark_wall, 50.0),
                                   DLT: Result(peers.LABELS[DLT], records, records, 0.5, 1.0, 100.0, 50.0)})
        line = next(line for line in lines if line.startswith("Spark / dlt"))
        return line.split("  ", 1)[1] if "  " in line else ""

    assert verdict(1_000, 50.0) == ""  # no ratio target at 1,000 records (their own: near a bare session)
    assert verdict(200_000, 20.0) == "target >= 3 over the wall time: met"  # 5x
    assert verdict(2_000_000, 20.0) == "target >= 10 over the wall time: NOT met"  # 5x
    assert verdict(2_000_000, 9.0) == "target >= 10 over the wall time: met"  # 11.1x


def test_another_checkouts_spark_mode_is_compared_with_this_ones_or_not_run_without_a_path(tmp_path):
    """sparkagainst: --against's checkout first on the workers' and the driver's path; without it, not run."""
    against = peers.SPARK_AGAINST
    setup = peers.Setup("http://127.0.0.1:1", 16, 1000, tmp_path, "m.yaml", "c.json", None, None, 60.0)
    absent = peers.run_spark_against(setup, tmp_path)
    assert not absent.ok and absent.missing.startswith("no checkout: give --against PATH")
    lines = peers.ratio_lines({SPARK: result(SPARK, run=1.0, wall=2.0), against: result(against, run=2.0, wall=4.0)})
    assert "Spark / Spark (the --against checkout): 2.00x records/s (start-up left out), 2.00x over the wall time" in lines
    assert against in peers.OPTIONAL  # run only when named in --modes
    with pytest.raises(SystemExit) as stop:
        peers.main(["--modes", "spork", "--against", str(tmp_path)])
    assert stop.value.code == 2


def test_busy_loops_spin_in_sessions_of_their_own_for_the_block():
    with peers.busy_loops(2) as loops:
        assert len(loops) == 2
        assert all(loop.poll() is None for loop in loops)
        assert all(os.getsid(loop.pid) == loop.pid != os.getsid(0) for loop in loops)  # not the benchmark's session
    assert all(loop.returncode is not None for loop in loops)
    with peers.busy_loops(0) as none:
        assert none == []
