"""A Spark-mode sync warns of data that looks wrong as ``--test-read`` does, and its stderr carries no noise.

The helpdesk API and manifest of tests/cli/test_test_read.py, broken the way a new user breaks them:
the sync still exits 0 (records that land, or none, are not a failure), and says what looks wrong with
the fix, once per stream: a line in text, a ``warning`` event in JSON lines.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from cli import test_test_read as helpdesk
from cli.test_test_read import _test_read, _write

from framework.cli.run import main

pytestmark = pytest.mark.spark
api = helpdesk.api  # the helpdesk API, as a fixture of this module too

EMPTY_WARNING = ("tickets: field_path: ['data'] found no records, but the response has a list of 10 objects at "
                 "`tickets`; fix: set the record selector's extractor to field_path: ['tickets']")


def test_a_wrong_field_path_warns_in_a_spark_sync_as_the_test_read_does(tmp_path, api):
    """Run as a user does (its own process and Spark): the warning, the empty pages said as such, exit 0,
    and none of the JVM's start-up notice."""
    manifest, config = _write(tmp_path, api, field_path="[data]")
    _, test_read = _test_read(manifest, config)
    assert "! field_path: ['data'] found no records, but the response has a list of 10 objects at `tickets`" in (
        test_read) and "fix: set the record selector's extractor to field_path: ['tickets']" in test_read
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "framework.cli.run", manifest, "--config", config,
                           "--output", str(out)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines.count(f"run-manifest: warning: {EMPTY_WARNING}") == 1, done.stderr
    assert any(line.startswith("  tickets: no records (3 empty pages), 0 file(s), 1/1 partitions")
               for line in lines), done.stderr
    assert "Using incubator modules" not in done.stderr and "jdk.incubator" not in done.stderr
    assert "0 pages" not in done.stderr and "s3cret-token" not in done.stderr


def test_json_lines_carry_each_kind_once_as_a_warning_event(tmp_path, api, spark, capsys):
    manifest, config = _write(tmp_path, api, path="/pages/tickets", primary_key="ticket_id",
                              paginator="""\
        type: DefaultPaginator
        page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
        pagination_strategy: {type: PageIncrement, page_size: 10}
""")
    capsys.readouterr()
    code = main([manifest, "--config", config, "--output", str(tmp_path / "out"), "--log-format", "json"],
                out=io.BytesIO())
    events = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert code == 0
    warnings = [(e["stream"], e["kind"], e["message"]) for e in events if e["event"] == "warning"]
    assert [kind for _, kind, _ in warnings] == ["repeated-page", "missing-key"]
    assert all(stream == "tickets" for stream, _, _ in warnings)
    assert "pages 1 and 2 have the same 10 records" in warnings[0][2] and "start_from_page: 1" in warnings[0][2]
    assert "have no primary key `ticket_id`" in warnings[1][2]


def test_a_right_manifest_syncs_without_warnings(tmp_path, api, spark, capsys):
    manifest, config = _write(tmp_path, api)
    capsys.readouterr()
    code = main([manifest, "--config", config, "--output", str(tmp_path / "out")], out=io.BytesIO())
    err = capsys.readouterr().err
    assert code == 0, err
    assert "warning" not in err and "  tickets: 25 records, " in err
