"""Custom components for the example shop API (examples/shop), written for this framework (no airbyte-cdk).

* :class:`AccountRanges` (``CustomPartitionRouter``) reads the accounts the
  config names as ranges (``"accounts": "1-3,7"``): one partition per account.
* :class:`LineItemsExtractor` (``CustomRecordExtractor``) turns each order of a
  page into its line items, each with its order's id, status and update time.

manifest.yaml beside this file uses both; they run only when allowed
(``run-manifest --allow-custom-code``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import requests


@dataclass
class AccountRanges:
    """One partition ``{partition_field: id}`` per account id in ``config[config_key]`` ("1-3,7")."""

    config: Mapping[str, Any]
    config_key: str = "accounts"
    partition_field: str = "account_id"

    def stream_slices(self) -> Iterator[dict]:
        for part in str(self.config[self.config_key]).split(","):
            low, _, high = part.strip().partition("-")
            for account in range(int(low), int(high or low) + 1):
                yield {self.partition_field: account}


@dataclass
class LineItemsExtractor:
    """The line items of each order in ``response.json()[orders_field]``, numbered from 1 within their order."""

    orders_field: str = "data"

    def extract_records(self, response: requests.Response) -> Iterator[dict]:
        for order in response.json()[self.orders_field]:
            for line, item in enumerate(order.get("line_items") or [], start=1):
                yield {"order_id": order["id"], "line": line, "status": order["status"],
                       "updated_at": order["updated_at"], **item}
