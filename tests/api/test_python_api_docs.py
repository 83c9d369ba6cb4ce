"""docs/python-api.md's notebook cell, run as written against the example shop API on the shared session."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "python-api.md"
SHOP = REPO / "examples" / "shop"


def notebook_cell() -> str:
    """The ``python`` block after the page's ``<!-- doc-test: notebook -->`` marker."""
    found = re.search(r"<!-- doc-test: notebook -->\s*```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert found, f"{PAGE}: no python block after <!-- doc-test: notebook -->"
    return found.group(1)


def shop_api():
    spec = importlib.util.spec_from_file_location("shop_api_for_docs", SHOP / "api.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.spark
def test_the_notebook_cell_runs_as_written(spark, tmp_path, monkeypatch, capsys):
    api = shop_api()
    # the repository's example, its config pointed at this test's API (the cell names the files as they are)
    copy = tmp_path / "examples" / "shop"
    shutil.copytree(SHOP, copy, ignore=shutil.ignore_patterns("__pycache__"))
    config = json.loads((SHOP / "config.json").read_text())
    monkeypatch.chdir(tmp_path)
    with api.ShopApi() as running:
        (copy / "config.json").write_text(json.dumps({**config, "base_url": running.url}))
        cell: dict = {}
        exec(compile(notebook_cell(), str(PAGE), "exec"), cell)  # noqa: S102 - the page's own code

    report = cell["report"]
    assert report.ok and [s.name for s in report.streams] == ["accounts", "events"]
    assert all(s.records > 0 and s.files and s.state for s in report.streams)
    assert {name: p.event for name, p in cell["shown"].items()} == {"accounts": "done", "events": "done"}
    assert (tmp_path / "output" / "_airbyte_state" / "state.json").exists()
    assert cell["by_country"].count() > 0
    assert cell["frames"]["accounts"].count() == report.stream("accounts").records
    printed = capsys.readouterr().out
    assert "accounts:" in printed and "records in" in printed
