"""docs/tables.md runs: its marked blocks (`<!-- doc-test: run -->`) against the example shop API, in order.

The bash block starts the shop API (on a free port here, the config pointed at it) and syncs the shop connector
into Delta tables twice (`run-manifest --format delta`, in a subprocess each, its `output/lake` in a temp folder);
the API gets new data between the two syncs. The python blocks then run as written, in that folder, reading the
tables back with polars and deltalake. The tables hold every record the two syncs read, each once, and the second
sync read only what was new (and the records at its cursor's inclusive boundary, as Airbyte's cursors do).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import urllib.request

import pytest
from docs.test_examples import REPO, blocks_of

pytest.importorskip("deltalake", reason="the tables extra (deltalake) is not installed: pip install '.[tables]'")

PAGE = REPO / "docs" / "tables.md"
MARK = "<!-- doc-test: run -->"

pytestmark = pytest.mark.spark


def marked_blocks() -> list:
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    found = []
    for block in blocks_of(PAGE):
        previous = next((lines[i].strip() for i in range(block.line - 2, -1, -1) if lines[i].strip()), "")
        if previous == MARK:
            found.append(block)
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_page_has_its_runnable_blocks():
    blocks = marked_blocks()
    assert [b.language for b in blocks] == ["bash", "python", "python"]
    assert "--format delta" in blocks[0].text


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_the_pages_commands_sync_twice_and_read_the_tables_back(tmp_path, fmt, monkeypatch):
    """The page's commands as written (delta), and the same with ``--format iceberg`` (read back with polars over
    pyiceberg's scan instead of the page's Delta snippets)."""
    bash, *python = marked_blocks()
    port = free_port()
    config = json.loads((REPO / "examples/shop/config.json").read_text())
    config["base_url"] = f"http://127.0.0.1:{port}"
    (tmp_path / "config.json").write_text(json.dumps(config))
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(REPO)}
    api: subprocess.Popen | None = None
    syncs = []
    try:
        for line in (line.strip() for line in bash.text.splitlines() if line.strip()):
            words = shlex.split(line.rstrip("&").replace("--format delta", f"--format {fmt}"))
            if words[:2] == ["python", "examples/shop/api.py"]:
                api = subprocess.Popen([sys.executable, str(REPO / words[1]), "--port", str(port)],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                assert api.stdout is not None
                assert api.stdout.readline().startswith("listening on"), "the shop API did not start"
                continue
            assert words[0] == "run-manifest", line
            if syncs:  # new data in the API between the two syncs
                request = urllib.request.Request(f"http://127.0.0.1:{port}/_admin/advance", method="POST")
                with urllib.request.urlopen(request, timeout=30) as answer:
                    answer.read()
            args = [str(REPO / w) if w.startswith("examples/") and w != "examples/shop/config.json" else
                    str(tmp_path / "config.json") if w == "examples/shop/config.json" else w for w in words[1:]]
            done = subprocess.run([sys.executable, "-m", "framework.cli.run", *args, "--log-format", "json"],
                                  cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
            summary = next(json.loads(x) for x in done.stderr.splitlines() if '"event": "summary"' in x
                           or '"event":"summary"' in x)
            syncs.append({s["stream"]: s["records"] for s in summary["streams"]})
    finally:
        if api is not None:
            api.terminate()
            api.wait(timeout=30)
    assert len(syncs) == 2
    # polars reads the files pyiceberg's scan plans (polars' own planner is a package of its own)
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")
    for stream in ("accounts", "orders", "events"):
        table = read_table(tmp_path / "output/lake", stream, fmt)
        raw_ids = table["_airbyte_raw_id"].to_list()
        assert len(raw_ids) == len(set(raw_ids)) == syncs[0][stream] + syncs[1][stream]  # each record once
        assert 0 < syncs[1][stream] < syncs[0][stream]  # the second sync read what was new, not everything
    if fmt != "delta":
        return
    for block in python:
        ran = subprocess.run([sys.executable, "-c", block.text], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)
        assert ran.returncode == 0, f"{block.where}: {ran.stderr[-2000:]}"
        assert re.search(r"\d", ran.stdout)
    first = subprocess.run([sys.executable, "-c", python[0].text], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120).stdout.split()
    rows, unique, files = int(first[0]), int(first[1]), int(first[2])
    assert rows == syncs[0]["orders"] + syncs[1]["orders"] and 0 < unique <= rows and files >= 1


def read_table(output, stream: str, fmt: str):
    """The stream's table as a polars frame: Delta through polars' reader, Iceberg through its SQLite catalog."""
    import polars as pl

    if fmt == "delta":
        return pl.read_delta(str(output / stream))
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("airbyte", uri=f"sqlite:///{output}/_airbyte_state/iceberg_catalog.db",
                         warehouse=f"file://{output}")
    return pl.scan_iceberg(catalog.load_table(("airbyte", stream))).collect()
