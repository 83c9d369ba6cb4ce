"""``run-manifest --compact`` and ``"compact": true`` in the destination settings, as a user runs them: a stream's
small files merged after the sync, said in the JSON log's ``stream_done`` (``folder``), the records and the state
as without it."""

from __future__ import annotations

import io
import json
import re

import pyarrow.parquet as pq
import pytest
from spark.test_pipeline import MANIFEST, config_for, data_files, saved_state, serve

from framework.cli.run import main

pytestmark = pytest.mark.spark


@pytest.fixture
def run(spark, tmp_path, fake_api, capsys):
    """``run-manifest MANIFEST --config CONFIG --streams items --log-format json *args``: (exit code, the
    ``stream_done`` event of ``items``)."""
    shop = serve(fake_api)
    manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
    manifest.write_text(MANIFEST)
    config.write_text(json.dumps(config_for(shop)))

    def call(*args: str) -> tuple[int, dict]:
        capsys.readouterr()
        code = main([str(manifest), "--config", str(config), "--streams", "items", "--log-format", "json",
                     "--wait-for-spark", *args], out=io.BytesIO())
        events = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
        return code, next(e for e in events if e["event"] == "stream_done")

    return call


def test_compact_merges_the_files_of_a_sync_and_says_so(run, tmp_path):
    plain, compacted = tmp_path / "plain", tmp_path / "compacted"
    code, done = run("--output", str(plain))
    assert code == 0 and done["files"] > 1  # one a task (--wait-for-spark: every group on Spark)
    assert done["folder"] == {"files_before": done["files"], "files_after": done["files"], "unified": 0, "merged": 0}
    code, done = run("--output", str(compacted), "--compact")
    assert code == 0
    assert done["folder"] == {"files_before": done["files"], "files_after": 1, "unified": 0,
                              "merged": done["files"] - 1}
    assert len(data_files(compacted, "items")) == 1
    assert sorted(pq.read_table(str(compacted / "items")).column("id").to_pylist()) == list(range(1, 9))
    assert saved_state(compacted)["streams"] == saved_state(plain)["streams"]


def test_the_text_summary_says_what_was_merged(spark, tmp_path, fake_api, capsys):
    shop = serve(fake_api)
    manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
    manifest.write_text(MANIFEST)
    config.write_text(json.dumps(config_for(shop)))
    code = main([str(manifest), "--config", str(config), "--streams", "items", "--wait-for-spark", "--compact",
                 "--output", str(tmp_path / "out")], out=io.BytesIO())
    err = capsys.readouterr().err
    assert code == 0
    assert re.search(r"^items: \d+ files merged into 1$", err, re.MULTILINE), err


def test_the_destination_setting_compacts_too(run, tmp_path):
    destination = tmp_path / "destination.json"
    destination.write_text(json.dumps({"output": str(tmp_path / "out"), "format": {"format_type": "Parquet"},
                                       "compact": True}))
    code, done = run("--destination", str(destination))
    assert code == 0 and done["folder"]["files_after"] == 1
    assert len(data_files(tmp_path / "out", "items")) == 1
