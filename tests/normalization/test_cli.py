"""``run-manifest ... --normalize`` against the fake API, then ``normalize-output --full-refresh``: same tables."""

from __future__ import annotations

import io
import json
import os

import pyarrow.parquet as pq
import pytest
from spark.test_pipeline import MANIFEST, config_for, serve

from framework.cli.normalize import main as normalize_main
from framework.cli.run import main as run_main

pytestmark = pytest.mark.spark

VOLATILE = {"_airbyte_normalized_at"}


def tables(output: str) -> dict[str, list]:
    folder = output.rstrip("/") + "_normalized"  # the normalized tables' root, beside the output
    found = {}
    for table in sorted(t for t in os.listdir(folder) if t != "_airbyte_normalization"):
        rows = [{k: v for k, v in row.items() if k not in VOLATILE}
                for row in pq.read_table(os.path.join(folder, table)).to_pylist()]
        found[table] = sorted(rows, key=lambda r: json.dumps(r, default=str, sort_keys=True))
    return found


def test_run_manifest_normalize_then_normalize_output_full_refresh(spark, fake_api, tmp_path, capsys):
    shop = serve(fake_api)
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(config_for(shop)))
    output = str(tmp_path / "out")

    code = run_main([str(manifest), "--config", str(config), "--output", output, "--streams", "items",
                     "--normalize"], out=io.BytesIO())
    err = capsys.readouterr().err
    assert code == 0, err
    assert "items: append, full" in err
    first = tables(output)
    assert {"items", "_airbyte_raw_items"} <= set(first) and len(first["items"]) == 8
    assert all(row["_airbyte_items_hashid"] for row in first["items"])

    assert normalize_main(["--output", output, "--full-refresh", "--quiet"]) == 0
    assert tables(output) == first
    assert normalize_main(["--output", output, "--streams", "nope"]) == 2
    assert "were not landed here" in capsys.readouterr().err
