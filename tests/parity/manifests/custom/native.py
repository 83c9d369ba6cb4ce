"""Parity scenario (g), natively: plain classes with Airbyte's method names, nothing imported from airbyte-cdk."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


@dataclass
class Envelope:
    field_path: list
    config: Mapping[str, Any]

    def extract_records(self, response):
        body = response.json()
        found = body
        for key in self.field_path:
            found = found.get(key, []) if isinstance(found, dict) else []
        for record in found:
            yield {**record, "page": body.get("page")}


@dataclass
class NotVoid:
    status_field: str = "status"

    def filter_records(self, records, stream_state, stream_slice=None, next_page_token=None):
        return [r for r in records if r.get(self.status_field) != "void"]


@dataclass
class Cents:
    field: str
    config: Mapping[str, Any] = field(default_factory=dict)

    def transform(self, record, config=None, stream_state=None, stream_slice=None):
        record[self.field + "_cents"] = round(record[self.field] * 100)
        record["tenant"] = self.config["tenant"]


@dataclass
class AfterLastId:
    page_size: int

    @property
    def initial_token(self) -> Any | None:
        return None

    def next_page_token(self, response, last_page_size, last_record, last_page_token_value=None):
        if not response.json().get("has_more") or last_record is None:
            return None
        return last_record["id"]

    def get_page_size(self) -> int | None:
        return self.page_size


@dataclass
class DayStateMigration:
    cursor_field: str

    def should_migrate(self, stream_state: Mapping[str, Any]) -> bool:
        return "day" in stream_state

    def migrate(self, stream_state: Mapping[str, Any]) -> Mapping[str, Any]:
        day = datetime.strptime(stream_state["day"], "%Y-%m-%d").replace(tzinfo=timezone.utc)
        return {self.cursor_field: day.strftime("%Y-%m-%dT%H:%M:%SZ")}


@dataclass
class ConfiguredAccounts:
    accounts_key: str
    config: Mapping[str, Any]

    def stream_slices(self):
        for account in self.config[self.accounts_key]:
            yield {"account_id": account}
