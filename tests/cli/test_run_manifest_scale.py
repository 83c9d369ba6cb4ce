"""``run-manifest`` in Spark mode over a substream of a few thousand partitions, planned as parent pages arrive.

The plan is bigger than the pipeline's look-ahead (``GROUP_UNITS`` is made
small), so its groups are made while parent pages are still being read and
run as Spark capacity frees: every record lands once, files never share a
part number, and the state holds every partition, so the next run reads only
what is new.
"""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest
from engine.incremental_kit import Shop, at, cursor, iso, parent, source, stream, substream, write
from spark.test_pipeline import DEFAULT_NAME, data_files, saved_state

import framework.engine.plan as plan_module
from framework.cli.run import main

pytestmark = pytest.mark.spark

ACCOUNTS = 3000


def _manifest(tmp_path) -> str:
    accounts = stream("accounts", "/accounts", paginate=True)
    orders = stream("orders", "/accounts/{{ stream_partition.account_id }}/orders",
                    incremental=cursor(step="P30D", end_datetime="2024-01-10T00:00:00Z"),
                    router=substream(parent(accounts)))
    orders["schema_loader"]["schema"] = {"type": "object", "properties": {
        "id": {"type": "string"}, "account": {"type": "integer"}, "updated_at": {"type": "string"}}}
    path = write(tmp_path, source(accounts, orders))
    with open(path, encoding="utf-8") as handle:
        text = handle.read().replace("page_size: 2", "page_size: 250")  # the kit pages by 2
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def test_thousands_of_partitions_stream_through_spark_in_small_groups(spark, fake_api, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(plan_module, "GROUP_UNITS", 100)  # 3,000 units: 30 groups, far past the look-ahead
    shop = Shop(page_size=250)
    for account in range(1, ACCOUNTS + 1):
        shop.add_account(account, at(0))
        shop.add_order(account, f"{account}-a", at(1, account % 24))
    shop.install(fake_api)
    manifest = _manifest(tmp_path)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": fake_api.url}))
    out = tmp_path / "out"

    def run() -> tuple[int, str]:
        capsys.readouterr()
        code = main([manifest, "--config", str(config), "--output", str(out), "--streams", "orders", "--no-check"],
                    out=io.BytesIO())
        return code, capsys.readouterr().err

    code, stderr = run()
    assert code == 0, stderr
    assert f"{ACCOUNTS}/{ACCOUNTS} partitions" in stderr
    files = data_files(out, "orders")
    ids = [row for f in files for row in pq.read_table(f).column("id").to_pylist()]
    assert len(ids) == ACCOUNTS and len(set(ids)) == ACCOUNTS  # every record once
    numbers = [int(DEFAULT_NAME.fullmatch(f.name).group("part")) for f in files]
    assert len(set(numbers)) == len(files)  # no two files share a part number
    state = saved_state(out)["streams"]["orders"]["state"]
    assert len(state["states"]) == ACCOUNTS  # every partition, in full (under MAX_PARTITION_STATES)

    shop.add_order(7, "7-b", at(5))
    before = len(fake_api.requests)
    code, stderr = run()
    assert code == 0, stderr
    files_after = data_files(out, "orders")
    new = [row for f in files_after if f not in files for row in pq.read_table(f).column("id").to_pylist()]
    # every partition resumed from its own cursor (inclusive: the record at that instant comes again)
    assert sorted(set(new) - set(ids)) == ["7-b"] and len(new) == ACCOUNTS + 1
    starts = {r.path.split("/")[2]: r.param("start") for r in fake_api.requests[before:] if r.path.endswith("/orders")}
    assert starts == {str(a): iso(at(1, a % 24)) for a in range(1, ACCOUNTS + 1)}
