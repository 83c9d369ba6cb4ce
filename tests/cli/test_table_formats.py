"""run-manifest --format delta|iceberg: bad input refused with exit 2 before Spark starts and before any request
(framework/tables/preflight.py), nothing committed; the flag and the settings file agree."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spark.test_pipeline import MANIFEST, config_for, serve

pytest.importorskip("deltalake", reason="the tables extra (deltalake) is not installed: pip install '.[tables]'")

from framework.cli.run import main  # noqa: E402
from framework.cli.settings import destination_settings  # noqa: E402
from framework.models.destination import DeltaFormat, IcebergFormat, IcebergRestCatalog  # noqa: E402
from framework.tables.base import DataFile, TableCommit  # noqa: E402
from framework.tables.delta import DeltaLakeTable  # noqa: E402
from framework.tables.preflight import incompatible_columns, kind_of  # noqa: E402


@pytest.fixture
def run(tmp_path, fake_api, capsys):
    """``run-manifest MANIFEST --config CONFIG --streams items --format delta *args``: (exit code, stderr, the
    requests the API received)."""
    shop = serve(fake_api)
    manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
    manifest.write_text(MANIFEST)
    config.write_text(json.dumps(config_for(shop)))

    def call(*args: str) -> tuple[int, str, int]:
        capsys.readouterr()
        code = main([str(manifest), "--config", str(config), "--streams", "items", "--no-check", *args],
                    out=io.BytesIO())
        return code, capsys.readouterr().err, len(shop.requests("/items"))

    return call


def test_a_folder_of_parquet_files_is_not_taken_for_a_table(run, tmp_path):
    out = tmp_path / "out"
    (out / "items").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1]}), out / "items" / "2024_01_01_0.parquet")
    code, err, requests = run("--output", str(out), "--format", "delta")
    assert code == 2 and requests == 0
    assert "holds files but no delta table" in err and "choose another --output" in err
    assert not (out / "items" / "_delta_log").exists()


def test_a_table_of_another_schema_is_refused_naming_the_column(run, tmp_path):
    out = tmp_path / "out"
    table = DeltaLakeTable(str(out / "items"))
    Path(table.data_location()).mkdir(parents=True)
    path = f"{table.data_location()}/other.parquet"
    pq.write_table(pa.table({"id": ["a"]}), path)
    table.commit(TableCommit((DataFile(path, Path(path).stat().st_size, 1),), pa.schema([("id", pa.string())]),
                             "append", {}, "someone-else", 1))
    code, err, requests = run("--output", str(out), "--format", "delta")
    assert code == 2 and requests == 0
    assert "`id` is string in the table, integer in the stream's schema" in err and "primary key" in err
    assert len(table._open().history()) == 1  # nothing committed


def test_normalize_with_a_table_format_says_it_is_not_done(run, tmp_path):
    code, err, requests = run("--output", str(tmp_path / "out"), "--format", "delta", "--normalize")
    assert code == 2 and requests == 0 and "--normalize" in err and "--format parquet" in err


def test_the_format_flag_keeps_a_table_formats_settings_from_the_file(tmp_path):
    dest = tmp_path / "dest.json"
    dest.write_text(json.dumps({"output": str(tmp_path / "o"), "format": {
        "format_type": "iceberg", "catalog": {"type": "rest", "uri": "https://catalog.example", "token": "t0k"}}}))
    settings = destination_settings(str(dest), None, "iceberg")
    assert isinstance(settings.format, IcebergFormat) and isinstance(settings.format.catalog, IcebergRestCatalog)
    assert "t0k" not in repr(settings)  # a secret stays out of messages
    assert isinstance(destination_settings(str(dest), None, "delta").format, DeltaFormat)


def test_layout_settings_that_do_not_apply_to_tables_are_refused(tmp_path):
    from framework.errors import ConfigError

    dest = tmp_path / "dest.json"
    dest.write_text(json.dumps({"output": str(tmp_path / "o"), "s3_path_format": "${STREAM_NAME}/x/"}))
    with pytest.raises(ConfigError, match="`s3_path_format` do not apply to the `delta` format"):
        destination_settings(str(dest), None, "delta")


def test_column_kinds():
    assert kind_of(pa.int32()) == kind_of(pa.int64()) == "integer"
    assert kind_of(pa.list_(pa.timestamp("ms"))) == "list<timestamp>"
    table = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.timestamp("us", "UTC"))])
    stream = pa.schema([("a", pa.int32()), ("b", pa.float64()), ("c", pa.timestamp("ms", "UTC")), ("d", pa.bool_())])
    assert incompatible_columns(table, stream) == [("b", "string", "floating")]


def test_normalize_output_refuses_a_table_output_before_spark(tmp_path, capsys):
    from framework.cli.normalize import main as normalize_main

    dest = tmp_path / "dest.json"
    dest.write_text(json.dumps({"output": str(tmp_path / "o"), "format": {"format_type": "delta"}}))
    assert normalize_main(["--destination", str(dest)]) == 2
    assert "normalize-output reads landed files and does not read tables yet" in capsys.readouterr().err
