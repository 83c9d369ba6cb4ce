"""RateLimitedMultipleTokenAuthenticator on Spark: the tasks (other processes) take their tokens from the
driver's book, so a token's quota is spent once for the whole sync, and only the driver reads the quota endpoint.

A stream of 6 partitions read by Spark tasks (``driver_reads`` off, on the shared ``local[2]`` session)
against an API that counts each token's calls (tests/fakes/quota_api.py): token ``ta`` has 5 calls, ``tb``
plenty. With one book for the sync, ``ta`` is used exactly 5 times and the quota endpoint read once per
token; a book per task would read the endpoint in every task and spend ``ta`` in each.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from fakes.api_server import FakeApi
from fakes.quota_api import QuotaApi

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.models.destination import DestinationSettings
from framework.spark.pipeline import PipelineOptions, run_pipeline

pytestmark = pytest.mark.spark

MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [issues]}
streams:
  - type: DeclarativeStream
    name: issues
    primary_key: [repo, page]
    schema_loader:
      type: InlineSchemaLoader
      schema: {type: object, properties: {page: {type: integer}, path: {type: string}}}
    retriever:
      type: SimpleRetriever
      requester:
        type: HttpRequester
        url_base: "{{ config['base_url'] }}"
        path: /issues
        authenticator:
          type: RateLimitedMultipleTokenAuthenticator
          tokens: "{{ config['tokens'] }}"
          auth_method: token
          budget_reserve_fraction: 0
          budget_min_reserve: 0
          quota_status_source: {type: QuotaStatusSource, url: "{{ config['base_url'] }}/rate_limit"}
          quotas:
            - type: TokenQuota
              name: core
              remaining_path: [resources, core, remaining]
              reset_path: [resources, core, reset]
              remaining_header: X-RateLimit-Remaining
              exhaustion_status_codes: [429]
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: PageIncrement, page_size: 1, start_from_page: 1}
        page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
      partition_router:
        type: ListPartitionRouter
        values: [r1, r2, r3, r4, r5, r6]
        cursor_field: repo
        request_option: {type: RequestOption, inject_into: request_parameter, field_name: repo}
    transformations:
      - type: AddFields
        fields: [{path: [repo], value: "{{ stream_partition.repo }}"}]
"""


class _Clock:
    def now(self) -> datetime:
        return datetime.now(timezone.utc)


def test_spark_tasks_share_the_drivers_token_quotas(spark, write_manifest, tmp_path: Path) -> None:
    quota = QuotaApi(_Clock(), {"ta": 5, "tb": 1000})
    quota.pages = 2
    with FakeApi() as api:
        api.route("GET", "/rate_limit", quota.route)
        api.route("GET", "/issues", quota.route)
        manifest = write_manifest(MANIFEST)
        connector = open_connector(manifest, {"base_url": api.url, "tokens": "ta,tb"}, sleep=lambda seconds: None)
        settings = DestinationSettings.model_validate({"output": str(tmp_path / "out"),
                                                       "format": {"format_type": "JSONL"}})
        result = run_pipeline(connector, manifest, select_streams(connector.streams, None, None), settings, spark,
                              options=PipelineOptions(driver_reads=False))
    [stream] = result.streams
    assert stream.error is None and stream.records == 6 * 2
    sent = [token for path, token in quota.sent if path != "/rate_limit"]
    assert len(sent) == 6 * 3  # two pages and an empty third per partition, none refused
    assert sent.count("ta") == 5, sent
    assert quota.status_reads == 2  # once per token, by the driver's book
