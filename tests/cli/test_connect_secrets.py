"""``run-manifest --remote``: a sync's secrets never go to another machine's Spark Connect server in the clear
unless ``--allow-plaintext`` says the network is private; refused before any request or session."""

from __future__ import annotations

import io
import json

import pytest
from fakes.api_server import FakeApi

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
      api_token: {{type: string{secret}}}
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
TOKEN = "tok-5ecret-api-value"
KEY = "AKIAEXAMPLESECRETKEY9"


class Started(Exception):
    """The sync got as far as the Spark session."""


@pytest.fixture()
def api():
    with FakeApi() as api:
        api.route("GET", "/tickets", lambda request: {"tickets": [{"id": 1}]})
        yield api


@pytest.fixture()
def sync(api, tmp_path, monkeypatch, capsys):
    """``run(*flags, secret=True)``: run-manifest on Spark up to its session (which raises :class:`Started`);
    its exit code (None when it got there) and stderr."""

    def no_session(*args, **kwargs):
        raise Started

    monkeypatch.setattr(session, "spark_session", no_session)
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.delenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", raising=False)

    def run(*flags: str, secret: bool = True) -> tuple[int | None, str]:
        manifest = tmp_path / "manifest.yaml"
        manifest.write_text(MANIFEST.format(url=api.url, secret=", airbyte_secret: true" if secret else ""))
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"api_token": TOKEN}))
        try:
            code = main([str(manifest), "--config", str(config), "--output", str(tmp_path / "out"), *flags])
        except Started:
            code = None
        return code, capsys.readouterr().err

    return run


def test_secrets_to_another_machine_without_tls_are_refused_before_anything_is_sent(sync, api):
    code, err = sync("--remote", "sc://spark-connect.example:15002")
    assert code == 2, err
    assert "the Spark Connect server at spark-connect.example:15002 is reached without TLS" in err
    assert "config field api_token" in err
    assert "sc://spark-connect.example:15002/;use_ssl=true" in err and "--allow-plaintext" in err
    assert "SSH tunnel" in err
    assert TOKEN not in err
    assert api.received("/tickets") == []  # not even the check request went out


def test_spark_remote_is_held_to_the_same_rule(sync, api, monkeypatch):
    monkeypatch.setenv("SPARK_REMOTE", "sc://10.20.30.40:15002")
    code, err = sync()
    assert code == 2 and "10.20.30.40:15002 is reached without TLS" in err
    assert api.received("/tickets") == []


def test_allow_plaintext_warns_and_goes_on(sync):
    code, err = sync("--remote", "sc://spark-connect.example:15002", "--allow-plaintext", "--log-format", "json")
    assert code is None, err
    events = [json.loads(line) for line in err.splitlines()]
    warnings = [e for e in events if e["event"] == "warning"]
    assert len(warnings) == 1, events
    assert "config field api_token" in warnings[0]["message"] and "--allow-plaintext" in warnings[0]["message"]
    assert TOKEN not in err


@pytest.mark.parametrize("remote", [
    "sc://127.0.0.1:15002",  # the server on this machine
    "sc://localhost:15002",  # or an SSH tunnel's end
    "sc://[::1]:15002",
    "sc://spark-connect.example:443/;use_ssl=true",  # TLS
    "sc://spark-connect.example:443/;token=abc",  # a token makes the channel TLS
])
def test_loopback_or_tls_goes_on_without_a_word(sync, remote):
    code, err = sync("--remote", remote)
    assert code is None, err
    assert "without TLS" not in err


def test_a_config_without_secrets_goes_on(sync):
    code, err = sync("--remote", "sc://spark-connect.example:15002", secret=False)
    assert code is None, err
    assert "without TLS" not in err


def test_the_destinations_keys_count_as_secrets(sync, tmp_path):
    destination = tmp_path / "destination.json"
    destination.write_text(json.dumps({"s3_bucket_name": "bucket", "s3_bucket_path": "shop",
                                       "access_key_id": KEY, "secret_access_key": "s3cr3t/" + KEY,
                                       "format": {"format_type": "Parquet"}}))
    code, err = sync("--remote", "sc://spark-connect.example:15002", "--destination", str(destination),
                     secret=False)
    assert code == 2, err
    assert "the destination's access_key_id and secret_access_key" in err and "config field" not in err
    assert KEY not in err


def test_a_token_in_the_url_is_never_shown(sync):
    code, err = sync("--remote", "sc://spark-connect.example:15002/;token=tok-url-hidden", "--master", "local[1]")
    assert code == 2
    assert "tok-url-hidden" not in err and "token=****" in err


def test_normalize_output_holds_the_destinations_secrets_to_the_same_rule(tmp_path, monkeypatch):
    from framework.cli.normalize import main as normalize_main

    def no_session(*args, **kwargs):
        raise Started

    monkeypatch.setattr(session, "spark_session", no_session)
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.delenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", raising=False)
    destination = tmp_path / "destination.json"
    destination.write_text(json.dumps({"s3_bucket_name": "bucket", "s3_bucket_path": "shop",
                                       "access_key_id": KEY, "secret_access_key": "s3cr3t/" + KEY,
                                       "format": {"format_type": "Parquet"}}))
    err = io.StringIO()
    assert normalize_main(["--destination", str(destination), "--remote", "sc://10.1.2.3:15002"], err=err) == 2
    assert "the destination's access_key_id and secret_access_key" in err.getvalue() and KEY not in err.getvalue()
    err = io.StringIO()
    with pytest.raises(Started):
        normalize_main(["--destination", str(destination), "--remote", "sc://10.1.2.3:15002", "--allow-plaintext"],
                       err=err)
    assert "normalize-output: warning: the Spark Connect server at 10.1.2.3:15002 is reached without TLS" in \
        err.getvalue()
    with pytest.raises(Started):  # TLS: not a word
        normalize_main(["--destination", str(destination), "--remote", "sc://10.1.2.3:443/;use_ssl=true"], err=err)
