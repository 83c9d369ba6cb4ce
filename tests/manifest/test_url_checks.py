"""validate-manifest refuses a ``url_base`` that is no HTTP address (framework/manifest/url_checks.py)."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.manifest import check_manifest_text
from framework.manifest.url_checks import url_problem


def manifest(url_base: str) -> str:
    return textwrap.dedent(f"""\
        version: 6.7.0
        type: DeclarativeSource
        check: {{type: CheckStream, stream_names: [items]}}
        streams:
          - type: DeclarativeStream
            name: items
            schema_loader: {{type: InlineSchemaLoader, schema: {{type: object}}}}
            retriever:
              type: SimpleRetriever
              requester:
                type: HttpRequester
                url_base: "{url_base}"
                path: /items
              record_selector: {{type: RecordSelector, extractor: {{type: DpathExtractor, field_path: []}}}}
        """)


@pytest.mark.parametrize(("url_base", "said"), [
    ("file:///tmp/api", "`url_base` is a `file://` address; requests go over HTTP only"),
    ("ftp://{{ config.host }}/v1", "`url_base` is a `ftp://` address; requests go over HTTP only"),
    ("api.example.com/v1", "`url_base` 'api.example.com/v1' has no scheme"),
])
def test_a_url_base_that_is_no_http_address_is_an_error_at_its_place(url_base, said):
    (problem,) = check_manifest_text(manifest(url_base), "source.yaml").diagnostics
    assert (problem.code, problem.severity, problem.message) == ("bad-url-base", "error", said)
    assert (problem.file, problem.line) == ("source.yaml", 12)
    assert problem.format().startswith("source.yaml:12:")
    assert problem.fix == "write the API's address with http:// or https://"


@pytest.mark.parametrize("url_base", ["https://api.example.com/v1", "HTTP://host:8080", "{{ config.base_url }}",
                                      "https://{{ config.region }}.example.com", "{{ config.host }}/api/v2", "",
                                      "'https://{{ config.region }}.example.com'"])
def test_http_addresses_and_templated_ones_pass(url_base):
    assert [d.code for d in check_manifest_text(manifest(url_base)).diagnostics if d.severity == "error"] == []


@given(st.sampled_from(["http", "https", "HTTPS"]), st.text(alphabet="abcdefghij.-/:0123456789", max_size=30))
def test_every_http_address_passes(scheme, rest):
    assert url_problem(f"{scheme}://{rest}") is None


def test_credential_redirect_hosts_are_host_names():
    text = manifest("https://api.example.com").replace(
        "        path: /items\n",
        "        path: /items\n        credential_redirect_hosts: [cdn.example.com, 'https://cdn.example.com/x']\n")
    (problem,) = check_manifest_text(text, "source.yaml").diagnostics
    assert (problem.code, problem.line) == ("bad-redirect-host", 14)
    assert problem.message == "`credential_redirect_hosts` names 'https://cdn.example.com/x', which is not a host name"
