"""docs/tables.md's Iceberg section: its Python blocks run against a table two syncs' commits made."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest
from tables.iceberg_writes import batch, commit, write

from framework.tables.iceberg import open_iceberg_table

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tables.md"


def _blocks() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Apache Iceberg", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_section_has_its_reading_blocks():
    blocks = _blocks()
    assert len(blocks) >= 2 and any("pl.scan_iceberg" in block for block in blocks)
    assert any("to_duckdb" in block for block in blocks) and any("snapshot_id=" in block for block in blocks)


def test_the_python_blocks_run_and_see_each_record_once(tmp_path, monkeypatch):
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")
    output = tmp_path / "output"
    table = open_iceberg_table(str(output / "orders"), "shop", "orders",
                               {"type": "sqlite", "path": str(output / "_airbyte_state" / "iceberg_catalog.db")}, {})
    for version, ids in ((1, [1, 2, 3]), (2, [4, 5])):
        data = batch(ids)
        table.commit(commit([write(table.data_location(), data)], data.schema, version, app_id="shop/orders"))
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    namespace: dict = {}
    with contextlib.redirect_stdout(printed):
        for block in _blocks():
            exec(compile(block, str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own code
    out = printed.getvalue()
    assert "5 5" in out and "[(5, 5)]" in out, out
    assert '{"cursor":1}' in out and '{"cursor":2}' in out
    assert out.rstrip().splitlines()[-1] == "3", out  # time travel: the table after the first sync
    assert os.path.exists(output / "orders" / "metadata")


@pytest.mark.parametrize("name", ["Spark", "Trino", "DuckDB"])
def test_the_section_names_each_reader(name):
    assert name in PAGE.read_text(encoding="utf-8").split("## Apache Iceberg", 1)[1].split("\n## ", 1)[0]
