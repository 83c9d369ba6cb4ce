"""Parity scenario (g), through the airbyte bridge: each class subclasses airbyte-cdk's and is built by its factory."""

from collections.abc import Iterable, Mapping
from dataclasses import InitVar, dataclass
from datetime import datetime, timezone
from typing import Any

from airbyte_cdk.sources.declarative.extractors import DpathExtractor
from airbyte_cdk.sources.declarative.extractors.record_filter import RecordFilter
from airbyte_cdk.sources.declarative.migrations.state_migration import StateMigration
from airbyte_cdk.sources.declarative.partition_routers.partition_router import PartitionRouter
from airbyte_cdk.sources.declarative.requesters.paginators.strategies.pagination_strategy import PaginationStrategy
from airbyte_cdk.sources.declarative.transformations import RecordTransformation
from airbyte_cdk.sources.types import StreamSlice


class Envelope(DpathExtractor):
    """The records under field_path, each marked with the page it came on."""

    def extract_records(self, response):
        page = response.json().get("page")
        for record in super().extract_records(response):
            yield {**record, "page": page}


@dataclass
class NotVoid(RecordFilter):
    status_field: str = "status"

    def filter_records(self, records, stream_state, stream_slice=None, next_page_token=None):
        return [r for r in records if r.get(self.status_field) != "void"]


@dataclass
class Cents(RecordTransformation):
    field: str
    config: Mapping[str, Any]

    def transform(self, record, config=None, stream_state=None, stream_slice=None):
        record[self.field + "_cents"] = round(record[self.field] * 100)
        record["tenant"] = self.config["tenant"]


@dataclass
class AfterLastId(PaginationStrategy):
    page_size: int
    config: Mapping[str, Any]
    parameters: InitVar[Mapping[str, Any]]

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
class DayStateMigration(StateMigration):
    cursor_field: str
    config: Mapping[str, Any]
    parameters: InitVar[Mapping[str, Any]]

    def should_migrate(self, stream_state: Mapping[str, Any]) -> bool:
        return "day" in stream_state

    def migrate(self, stream_state: Mapping[str, Any]) -> Mapping[str, Any]:
        day = datetime.strptime(stream_state["day"], "%Y-%m-%d").replace(tzinfo=timezone.utc)
        return {self.cursor_field: day.strftime("%Y-%m-%dT%H:%M:%SZ")}


@dataclass
class ConfiguredAccounts(PartitionRouter):
    accounts_key: str
    config: Mapping[str, Any]
    parameters: InitVar[Mapping[str, Any]]

    def stream_slices(self) -> Iterable[StreamSlice]:
        for account in self.config[self.accounts_key]:
            yield StreamSlice(partition={"account_id": account}, cursor_slice={})

    def get_request_params(self, *, stream_state=None, stream_slice=None, next_page_token=None):
        return {}

    def get_request_headers(self, *, stream_state=None, stream_slice=None, next_page_token=None):
        return {}

    def get_request_body_data(self, *, stream_state=None, stream_slice=None, next_page_token=None):
        return {}

    def get_request_body_json(self, *, stream_state=None, stream_slice=None, next_page_token=None):
        return {}

    def get_stream_state(self):
        return None
