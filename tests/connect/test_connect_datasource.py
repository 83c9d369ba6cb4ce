"""``spark.read.format("manifest")`` over Spark Connect: ``read_stream`` sends the connector from the client.

The client runs in a subprocess (a Connect client switches pyspark into Connect
mode for its whole process, see conftest.py); the example shop API runs here, on
127.0.0.1, where the server's Python workers reach it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from connect.server import REPO
from connect.test_connect import _env

pytestmark = pytest.mark.spark

SHOP = REPO / "examples" / "shop"
sys.path.insert(0, str(SHOP))

from api import ShopApi  # noqa: E402

CLIENT = """
import json, shutil, sys
from pyspark.sql import SparkSession
from framework.spark.datasource import read_stream, register

url, folder, config, since = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
spark = SparkSession.builder.remote(url).getOrCreate()
frame = read_stream(spark, folder + "/manifest.yaml", config, "orders", partitions=3)
newer = read_stream(spark, folder + "/manifest.yaml", config, "accounts",
                    state={"updated_at": since})
everything = read_stream(spark, folder + "/manifest.yaml", config, "accounts")
shutil.rmtree(folder)  # nothing is read from the manifest's folder after read_stream: the server never sees it
out = {"types": dict(frame.dtypes), "ids": sorted(r["id"] for r in frame.select("id").collect()),
       "newer": newer.count(), "accounts": everything.count()}
register(spark)
try:
    spark.read.format("manifest").option("manifest", folder + "/manifest.yaml").option("stream", "orders") \\
        .option("config_json", json.dumps(config)).load().count()
except Exception as exc:
    out["by_path"] = str(exc)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def shop():
    with ShopApi(rate_limit=None) as api:
        yield api


def test_read_stream_over_connect_reads_every_record_without_the_servers_disk(connect_server, shop, tmp_path):
    folder = tmp_path / "shop"
    folder.mkdir()
    shutil.copy(SHOP / "manifest.yaml", folder / "manifest.yaml")
    shutil.copytree(SHOP / "schemas", folder / "schemas")
    config = {**json.loads((SHOP / "config.json").read_text()), "base_url": shop.url}

    since = sorted(account["updated_at"] for account in shop.shop.accounts)[len(shop.shop.accounts) // 2]
    done = subprocess.run([sys.executable, "-c", CLIENT, connect_server.url, str(folder), json.dumps(config), since],
                          capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=240)

    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["types"]["_airbyte_extracted_at"] == "timestamp" and out["types"]["id"] == "bigint"
    orders = sorted(order["id"] for orders in shop.shop.orders.values() for order in orders)
    assert out["ids"] == orders  # every order once, read in 3 partitions
    assert out["accounts"] == shop.shop.counts()["accounts"]
    assert out["newer"] == sum(account["updated_at"] >= since for account in shop.shop.accounts)  # from the state
    # the path options are read where Spark plans (the server): gone there, and the message says what to use
    assert "no such manifest" in out["by_path"] and "read_stream" in out["by_path"]
