"""bench/decoders.py runs, small: every format reads every record, in-process and over HTTP."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))

import decoders  # noqa: E402 - after the path above


def test_the_bench_reads_every_record_of_every_format(capsys):
    assert decoders.main(["--records", "3000", "--runs", "1", "--big-mb", "2", "--http-mb", "1"]) == 0
    out = capsys.readouterr().out
    for name in ("JSON (pages of 1,000)", "JsonlDecoder", "CsvDecoder", "GzipDecoder(JsonlDecoder)"):
        assert name in out
    assert "records (of " in out and "exit 0" in out
