"""``spark.read.format("manifest")`` against the example shop API: the stream as a typed DataFrame."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from framework.spark.datasource import register

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "examples" / "shop"
sys.path.insert(0, str(SHOP))

from api import ShopApi  # noqa: E402


@pytest.fixture(scope="module")
def shop():
    with ShopApi(rate_limit=None) as api:
        yield api


def _reader(spark, shop, stream: str, **options: str):
    register(spark)
    config = {**json.loads((SHOP / "config.json").read_text()), "base_url": shop.url}
    reader = (spark.read.format("manifest").option("manifest", str(SHOP / "manifest.yaml"))
              .option("config_json", json.dumps(config)).option("stream", stream))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def test_a_substream_reads_every_record_typed_across_partitions(spark, shop):
    frame = _reader(spark, shop, "orders", partitions="3").load()
    types = dict(frame.dtypes)
    assert types["_airbyte_extracted_at"] == "timestamp" and types["id"] in ("bigint", "string")
    assert frame.rdd.getNumPartitions() == 3  # units in 3 groups, read on the executors
    rows = frame.select("id").distinct().count()
    assert rows == shop.shop.counts()["orders"]


def test_a_state_reads_only_what_is_newer(spark, shop):
    everything = _reader(spark, shop, "accounts").load()
    latest = everything.agg({"updated_at": "max"}).collect()[0][0]
    newer = _reader(spark, shop, "accounts",
                    state=json.dumps({"updated_at": latest.strftime("%Y-%m-%dT%H:%M:%SZ")})).load()
    assert 0 < newer.count() < everything.count()


def test_a_missing_option_says_which_and_how(spark, shop):
    register(spark)
    with pytest.raises(Exception, match=r"needs the option\(s\) stream"):
        spark.read.format("manifest").option("manifest", str(SHOP / "manifest.yaml")).load()


def test_a_bad_partitions_option_says_what_to_give(spark, shop):
    with pytest.raises(Exception, match=r"`partitions` option is '0'; give a whole number"):
        _reader(spark, shop, "accounts", partitions="0").load()


def test_a_partitions_units_read_several_at_once_give_every_record(spark, shop):
    frame = _reader(spark, shop, "orders", partitions="2", readers="4").load()
    assert frame.select("id").distinct().count() == shop.shop.counts()["orders"]


def test_readers_default_to_the_connectors_concurrency(shop, monkeypatch):
    """Read where the query is planned: the option, else what the connector says (its concurrency_level)."""
    from pyspark.sql.types import StructType

    from framework.engine.connector import Connector
    from framework.spark.datasource import ManifestDataSource

    config = {**json.loads((SHOP / "config.json").read_text()), "base_url": shop.url}
    options = {"manifest": str(SHOP / "manifest.yaml"), "config_json": json.dumps(config), "stream": "accounts"}
    monkeypatch.setattr(Connector, "concurrency", lambda self, requested=None: 5)
    assert ManifestDataSource(options).reader(StructType()).source.readers == 5  # type: ignore[attr-defined]
    given = ManifestDataSource({**options, "readers": "2"}).reader(StructType())
    assert given.source.readers == 2  # type: ignore[attr-defined]
    with pytest.raises(Exception, match=r"`readers` option is 'none'; give a whole number, 1 or more"):
        ManifestDataSource({**options, "readers": "none"}).reader(StructType())
