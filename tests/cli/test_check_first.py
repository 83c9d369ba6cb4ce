"""Spark mode checks the connection before Spark starts: a bad token fails in a second, not after Spark's start."""

from __future__ import annotations

import json

import pytest
from fakes.api_server import ApiError, FakeApi

import framework.spark.session as session
from framework.cli.run import main

MANIFEST = """\
version: 6.0.0
type: DeclarativeSource
check: {{type: CheckStream, stream_names: [tickets]}}
spec:
  type: Spec
  connection_specification:
    type: object
    required: [api_token]
    properties:
      api_token: {{type: string, airbyte_secret: true}}
streams:
  - type: DeclarativeStream
    name: tickets
    primary_key: id
    schema_loader: {{type: InlineSchemaLoader, schema: {{type: object, properties: {{id: {{type: integer}}}}}}}}
    retriever:
      type: SimpleRetriever
      requester:
        type: HttpRequester
        url_base: {url}
        path: /tickets
        authenticator: {{type: BearerAuthenticator, api_token: "{{{{ config['api_token'] }}}}"}}
      record_selector: {{type: RecordSelector, extractor: {{type: DpathExtractor, field_path: [tickets]}}}}
"""


def _tickets(request):
    if request.headers.get("Authorization") != "Bearer right-token":
        raise ApiError(401, "invalid token")
    return {"tickets": [{"id": 1}]}


@pytest.fixture()
def files(tmp_path):
    with FakeApi() as api:
        api.route("GET", "/tickets", _tickets)
        manifest = tmp_path / "manifest.yaml"
        manifest.write_text(MANIFEST.format(url=api.url))
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"api_token": "wrong-token"}))
        yield api, str(manifest), str(config)


def test_a_bad_token_fails_before_spark_starts(files, tmp_path, monkeypatch, capsys):
    api, manifest, config = files

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(session, "spark_session", no_spark)
    code = main([manifest, "--config", config, "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "the connection check failed, so nothing was read" in err and "401" in err
    assert "wrong-token" not in err
    assert len(api.received("/tickets")) == 1


def test_no_check_goes_straight_to_spark(files, tmp_path, monkeypatch, capsys):
    api, manifest, config = files

    class Started(Exception):
        pass

    def spark_started(*args, **kwargs):
        raise Started

    monkeypatch.setattr(session, "spark_session", spark_started)
    with pytest.raises(Started):
        main([manifest, "--config", config, "--output", str(tmp_path / "out"), "--no-check", "--wait-for-spark"])
    assert api.received("/tickets") == []
    # by default a local session starts in the background first, and the driver reads while it starts
    monkeypatch.setattr(session, "SessionStart", spark_started)
    with pytest.raises(Started):
        main([manifest, "--config", config, "--output", str(tmp_path / "out"), "--no-check"])
    assert api.received("/tickets") == []


def test_a_check_stream_the_manifest_lacks_leaves_the_others_checked(files, tmp_path, monkeypatch, capsys):
    """zendesk-support's check names a stream that does not exist (validate-manifest warns; airbyte-cdk fails
    only at --check): the check before Spark leaves that name out and still checks the others."""
    api, manifest, config = files
    with open(manifest) as handle:
        text = handle.read()
    with open(manifest, "w") as handle:
        handle.write(text.replace("stream_names: [tickets]", "stream_names: [tickets, gone]"))

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(session, "spark_session", no_spark)
    code = main([manifest, "--config", config, "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and "the connection check failed, so nothing was read" in err and "401" in err, err
    assert len(api.received("/tickets")) == 1
