"""One root per kind of table, and sync modes per stream, as a user sees them after ``run-manifest``.

After syncs with ``--normalize``: ``out/**/*.parquet`` is the raw streams' rows only (DuckDB and pyarrow
count them), the normalized tables are in ``out_normalized/<table>/``; a full-refresh stream synced three
times holds one copy of its rows (it overwrites by default); ``--dedup`` gives one row per primary key.
"""

from __future__ import annotations

import io
import json

import duckdb
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from spark.test_pipeline import MANIFEST, config_for, data_files, item, saved_state, serve

from framework.cli.run import main

pytestmark = pytest.mark.spark


@pytest.fixture
def shop(fake_api):
    shop = serve(fake_api)
    yield shop
    shop.release.set()


#: notes with the fields its primary key needs for normalization (the pipeline's manifest leaves them out)
NOTES = MANIFEST.replace("schema_loader: {type: InlineSchemaLoader, schema: {type: object}}",
                         "schema_loader: {type: InlineSchemaLoader, schema: {type: object, properties: "
                         "{id: {type: integer}, text: {type: string}}}}")


@pytest.fixture
def run(spark, tmp_path, shop, capsys):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(NOTES)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(config_for(shop)))

    def call(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        code = main([str(manifest), "--config", str(config), "--quiet", *args], out=io.BytesIO())
        return code, capsys.readouterr().err

    return call


def rows(root, stream) -> int:
    return sum(pq.ParquetFile(path).metadata.num_rows for path in data_files(root, stream))


def test_three_syncs_with_normalize_keep_raw_normalized_and_internal_files_apart(run, tmp_path, shop):
    out = tmp_path / "out"
    for _ in range(3):
        code, err = run("--output", str(out), "--streams", "items,notes", "--normalize")
        assert code == 0, err
    # notes has no incremental_sync: each sync overwrote it, so its folder holds one copy of its 5 records
    assert rows(out, "notes") == 5
    assert sorted(r["id"] for r in pq.read_table(out / "notes").to_pylist()) == [0, 1, 2, 3, 4]
    items = rows(out, "items")
    assert items >= 8  # incremental: appended, each sync from the saved cursor
    catalog = json.loads((out / "_airbyte_state" / "catalog.json").read_text())["streams"]
    assert {e["stream"]["name"]: e["destination_sync_mode"] for e in catalog} == {"items": "append",
                                                                                  "notes": "overwrite"}

    # the raw glob is raw rows only: no normalized table, no staged or internal file
    glob = f"{out}/**/*.parquet"
    counted = duckdb.sql(f"SELECT count(*) FROM read_parquet('{glob}', union_by_name=true)").fetchall()[0][0]
    assert counted == items + 5
    files = duckdb.sql(f"SELECT DISTINCT filename FROM read_parquet('{glob}', union_by_name=true, "
                       "filename=true)").fetchall()
    assert all(name.split("/")[-2] in ("items", "notes") for (name,) in files)
    assert ds.dataset(str(out), format="parquet").count_rows() == items + 5
    assert not [p for p in out.rglob("*.parquet") if p.parent.name not in ("items", "notes")]

    # the normalized tables are where the docs say: beside the output
    normalized = tmp_path / "out_normalized"
    assert (normalized / "notes").is_dir() and (normalized / "items").is_dir()
    assert pq.read_table(normalized / "notes").num_rows == 5  # overwritten too: one row per note
    assert not (out / "normalized").exists() and not (out / "_airbyte_normalization").exists()
    assert saved_state(out)["sync_id"] == 3


def test_dedup_keeps_one_row_per_primary_key(run, tmp_path, shop):
    out = tmp_path / "out"
    code, err = run("--output", str(out), "--streams", "items", "--dedup", "--normalize")
    assert code == 0, err
    shop.items.append(item(1, 4, 20, name="renamed"))  # a newer version of item 1, past the saved cursor
    code, err = run("--output", str(out), "--streams", "items", "--dedup", "--normalize")
    assert code == 0, err
    raw = [r["id"] for path in data_files(out, "items") for r in pq.read_table(path).to_pylist()]
    assert raw.count(1) == 2  # landed twice: dedup appends raw rows
    final = pq.read_table(tmp_path / "out_normalized" / "items").to_pylist()
    assert sorted(r["id"] for r in final) == sorted(set(raw))  # one row per primary key
    assert next(r["name"] for r in final if r["id"] == 1) == "renamed"  # the latest version


def test_a_stream_name_that_collides_is_refused_before_anything_runs(run, tmp_path, capsys):
    manifest = tmp_path / "clash.yaml"
    manifest.write_text(MANIFEST.replace("name: notes", "name: _airbyte_state"))
    out = io.BytesIO()
    code = main([str(manifest), "--config", str(tmp_path / "config.json"), "--output", str(tmp_path / "o")],
                out=out)
    err = capsys.readouterr().err
    assert code == 2 and "_airbyte_state" in err and "reserved" in err
    assert not (tmp_path / "o").exists()
