"""examples/shop_plugins: a custom extractor and a custom partition router over the example shop API.

Read in protocol mode twice (the second sync reads only what changed, per account), and in Spark mode
with components.py gone from the disk (the executors get it from the driver): the same rows.
"""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import sys
from pathlib import Path

import orjson
import pytest

from framework.cli.run import main as run_manifest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "shop_plugins"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


shop_api = _load("shop_api_plugins_example", REPO / "examples" / "shop" / "api.py")


@pytest.fixture
def api():
    with shop_api.ShopApi() as running:  # data over the 60 days before now, as the manifest reads
        yield running


@pytest.fixture
def connector(tmp_path, api) -> tuple[Path, Path]:
    """The example copied into a temp folder, with a config for the running API."""
    folder = tmp_path / "shop_plugins"
    shutil.copytree(EXAMPLE, folder)
    config = json.loads((EXAMPLE / "config.json").read_text())
    config.update(base_url=api.url, accounts="1-3,7")
    (folder / "config.json").write_text(json.dumps(config))
    return folder / "manifest.yaml", folder / "config.json"


def protocol(manifest: Path, config: Path, *more: str) -> tuple[list[dict], dict]:
    out = io.BytesIO()
    assert run_manifest([str(manifest), "--config", str(config), "--protocol", "--allow-custom-code", *more],
                        out=out) == 0
    messages = [orjson.loads(line) for line in out.getvalue().splitlines()]
    states = [m["state"] for m in messages if m["type"] == "STATE"]
    return [m["record"]["data"] for m in messages if m["type"] == "RECORD"], states[-1]


def key(row: dict) -> tuple:
    return (row["account_id"], row["order_id"], row["line"], row["sku"], row["quantity"], row["status"])


def test_line_items_of_the_named_accounts_read_twice_with_state_per_account(connector, api, tmp_path):
    manifest, config = connector
    rows, state = protocol(manifest, config)
    assert rows and {r["account_id"] for r in rows} <= {1, 2, 3, 7}
    assert all(r["line"] >= 1 and r["sku"] and r["quantity"] >= 1 for r in rows)
    partitions = [s["partition"] for s in state["stream"]["stream_state"]["states"]]
    assert sorted(p["account_id"] for p in partitions) == sorted({r["account_id"] for r in rows})

    (tmp_path / "state.json").write_text(json.dumps([state]))
    again, _ = protocol(manifest, config, "--state", str(tmp_path / "state.json"))
    newest = {p["account_id"]: s["cursor"]["updated_at"] for s in state["stream"]["stream_state"]["states"]
              for p in [s["partition"]]}
    assert all(r["updated_at"] >= newest[r["account_id"]] for r in again)  # nothing older than the state
    assert len(again) < len(rows)


@pytest.mark.spark
def test_spark_lands_the_same_rows_with_components_py_shipped_to_the_executors(connector, spark, tmp_path):
    import pyarrow.parquet as pq

    from framework.engine.connector import open_connector
    from framework.engine.selection import select_streams
    from framework.models.destination import DestinationSettings
    from framework.spark.pipeline import run_pipeline

    manifest, config = connector
    expected, _ = protocol(manifest, config)

    opened = open_connector(str(manifest), json.loads(config.read_text()), allow_custom_code=True)
    assert set(opened.shipped_files) == {"shop_plugins/components.py"}
    (manifest.parent / "components.py").unlink()  # executors must use the driver's copy
    out = tmp_path / "out"
    settings = DestinationSettings.model_validate({"output": str(out), "format": {"format_type": "Parquet"}})
    result = run_pipeline(opened, str(manifest), select_streams(opened.streams, None), settings, spark)
    assert not result.failed, [s.error for s in result.streams]
    files = [p for p in (out / "line_items").iterdir() if p.suffix == ".parquet" and not p.name.startswith(".")]
    rows = [row for path in files for row in pq.read_table(path).to_pylist()]
    assert sorted(map(key, rows)) == sorted(map(key, expected))
