"""Spark mode with a JwtAuthenticator: every task signs tokens the fake API verifies (PyJWT on the
executors, the key loaded there from the config), and the records of every partition land."""

from __future__ import annotations

import io
import json

import jwt
import pytest
from fakes.api_server import FakeApi, RecordedRequest, Reply
from fakes.jwt_keys import signing_key, verifying_key
from spark.test_pipeline import read_parquet

from framework.cli.run import main

pytestmark = pytest.mark.spark

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [orders]}
streams:
  - type: DeclarativeStream
    name: orders
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema: {type: object, properties: {id: {type: integer}, region: {type: string}}}
    retriever:
      type: SimpleRetriever
      partition_router:
        type: ListPartitionRouter
        cursor_field: region
        values: [eu, us, ap, sa]
        request_option: {type: RequestOption, inject_into: request_parameter, field_name: region}
      requester:
        type: HttpRequester
        url_base: "{{ config.base_url }}"
        path: /orders
        authenticator:
          type: JwtAuthenticator
          secret_key: "{{ config.private_key }}"
          algorithm: ES256
          token_duration: 300
          header_prefix: Bearer
          jwt_payload: {iss: "{{ config.issuer }}", aud: orders}
      record_selector:
        type: RecordSelector
        extractor: {type: DpathExtractor, field_path: [data]}
"""


def test_every_spark_task_sends_tokens_the_api_verifies(spark, fake_api: FakeApi, tmp_path, capsys):
    verified = []

    def orders(request: RecordedRequest):
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        try:
            claims = jwt.decode(token, verifying_key("ES256"), algorithms=["ES256"], audience="orders",
                                issuer="shop-7")
        except jwt.PyJWTError:
            return Reply(401, {"error": "unauthorized"})
        verified.append(claims)
        region = request.param("region")
        base = ["eu", "us", "ap", "sa"].index(region) * 10
        return {"data": [{"id": base + n, "region": region} for n in range(1, 4)]}

    fake_api.route("GET", "/orders", orders)
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": fake_api.url, "private_key": signing_key("ES256"),
                                  "issuer": "shop-7"}))
    out = tmp_path / "out"
    capsys.readouterr()
    code = main([str(manifest), "--config", str(config), "--output", str(out)], out=io.BytesIO())
    stderr = capsys.readouterr().err
    assert code == 0, stderr
    rows = read_parquet(out, "orders")
    assert [row["id"] for row in rows] == [1, 2, 3, 11, 12, 13, 21, 22, 23, 31, 32, 33]
    assert len(verified) == 4 and all(c["exp"] - c["iat"] == 300 for c in verified)
    assert "BEGIN PRIVATE KEY" not in stderr
