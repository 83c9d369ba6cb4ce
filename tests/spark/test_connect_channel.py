"""The channel a Spark Connect URL opens (as pyspark's client reads it), the plaintext rule, and the TLS probe."""

from __future__ import annotations

import os

import pytest
from connect.tls_proxy import Relay, self_signed
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from framework.errors import ConfigError
from framework.spark.connect_channel import (
    ROOTS_VARIABLE,
    TOKEN_VARIABLE,
    ConnectChannel,
    connect_channel,
    plaintext_refusal,
    shown_url,
    tls_mismatch,
)


@pytest.mark.parametrize(("url", "environ", "expected"), [
    ("sc://127.0.0.1:15002", {}, ConnectChannel("127.0.0.1", 15002, tls=False, token=False, loopback=True)),
    ("sc://localhost", {}, ConnectChannel("localhost", 15002, tls=False, token=False, loopback=True)),
    ("sc://[::1]:9000", {}, ConnectChannel("::1", 9000, tls=False, token=False, loopback=True)),
    ("sc://spark.example:15002", {}, ConnectChannel("spark.example", 15002, tls=False, token=False, loopback=False)),
    ("sc://spark.example:443/;use_ssl=true", {},
     ConnectChannel("spark.example", 443, tls=True, token=False, loopback=False)),
    ("sc://spark.example:443/;use_ssl=TRUE;session_id=x", {},
     ConnectChannel("spark.example", 443, tls=True, token=False, loopback=False)),
    ("sc://spark.example:443/;use_ssl=false", {},
     ConnectChannel("spark.example", 443, tls=False, token=False, loopback=False)),
    # a token makes the channel TLS (pyspark's ChannelBuilder), but to `localhost` grpc's local credentials carry it
    ("sc://10.1.2.3:15002/;token=abc", {}, ConnectChannel("10.1.2.3", 15002, tls=True, token=True, loopback=False)),
    ("sc://localhost:15002/;token=abc", {}, ConnectChannel("localhost", 15002, tls=False, token=True, loopback=True)),
    ("sc://127.0.0.1:15002/;token=abc", {}, ConnectChannel("127.0.0.1", 15002, tls=True, token=True, loopback=True)),
    # the token in the environment counts as the URL's
    ("sc://spark.example:15002", {TOKEN_VARIABLE: "abc"},
     ConnectChannel("spark.example", 15002, tls=True, token=True, loopback=False)),
    ("local", {}, ConnectChannel("localhost", 15002, tls=False, token=False, loopback=True)),
])
def test_the_channel_of_a_url(url, environ, expected):
    assert connect_channel(url, environ) == expected


@pytest.mark.parametrize("url", ["sc://spark.example:15002;use_ssl=true", "sc://spark.example:15002/;use_ssl",
                                 "sc://spark.example:port", "sc://:15002", "sc://spark.example/path"])
def test_a_url_the_client_would_refuse_is_refused_with_the_form_it_takes(url):
    with pytest.raises(ConfigError, match=r"sc://host:port"):
        connect_channel(url, {})


_hosts = st.sampled_from(["localhost", "127.0.0.1", "127.0.0.2", "[::1]", "10.0.0.7", "192.0.2.2", "spark.example",
                          "spark-connect", "[2001:db8::1]", "LOCALHOST"])
_values = st.text(alphabet="abcdefXYZ0123456789-_.%", min_size=0, max_size=12)
_params = st.lists(st.tuples(st.sampled_from(["use_ssl", "token", "session_id", "user_id", "x-custom"]),
                             st.one_of(st.sampled_from(["true", "TRUE", "false", ""]), _values)),
                   max_size=4, unique_by=lambda pair: pair[0])


@st.composite
def connect_urls(draw):
    host, port, params = draw(_hosts), draw(st.one_of(st.none(), st.integers(1, 65535))), draw(_params)
    url = f"sc://{host}" + (f":{port}" if port is not None else "")
    if params:
        url += "/;" + ";".join(f"{name}={value}" for name, value in params)
    return url


@settings(max_examples=300, deadline=None)
@given(connect_urls())
def test_the_channel_is_the_one_pyspark_opens(url):
    """The rule reads a URL as pyspark's own ChannelBuilder does: its host, port, token and whether it uses TLS."""
    pytest.importorskip("grpc")
    assume(TOKEN_VARIABLE not in os.environ)  # the builder would read it
    from pyspark.sql.connect.client.core import DefaultChannelBuilder

    builder = DefaultChannelBuilder(url)
    channel = connect_channel(url, {})
    assert (f"[{channel.host}]" if ":" in channel.host else channel.host) == builder.host
    assert channel.port == int(builder.endpoint.rsplit(":", 1)[1])
    params = dict(part.split("=") for part in url.partition("/;")[2].split(";") if part)
    assert channel.token == ("token" in params)
    # toChannel: insecure without use_ssl or a token; grpc's local credentials for a token to `localhost`; else TLS
    tls = builder.secure and not (not builder.use_ssl and builder.host == "localhost")
    assert channel.tls == tls


@settings(max_examples=300, deadline=None)
@given(connect_urls(), st.lists(st.sampled_from(["config field api_key", "config field credentials.secret",
                                                 "the destination's secret_access_key"]), unique=True),
       st.booleans())
def test_secrets_go_to_another_machine_only_over_tls_or_when_allowed(url, secrets, allowed):
    channel = connect_channel(url, {})
    found = plaintext_refusal(url, secrets, allowed=allowed, environ={})
    if channel.tls or channel.loopback or not secrets:
        assert found is None
        return
    assert found is not None
    text, refused = found
    assert refused is not allowed
    assert all(secret in text for secret in secrets)
    assert f"{channel.host}:{channel.port}" in text
    if refused:
        assert "use_ssl=true" in text and "--allow-plaintext" in text and "SSH tunnel" in text


def test_the_refusal_names_the_fixes():
    text, refused = plaintext_refusal("sc://spark.example:15002", ["config field api_key"], allowed=False,
                                      environ={})
    assert refused
    assert text.startswith("the Spark Connect server at spark.example:15002 is reached without TLS")
    assert "sc://spark.example:15002/;use_ssl=true" in text and TOKEN_VARIABLE in text
    assert "sc://localhost:PORT" in text and "--allow-plaintext" in text
    text, refused = plaintext_refusal("sc://spark.example:15002", ["config field api_key"], allowed=True,
                                      environ={})
    assert not refused and "--allow-plaintext" in text and "config field api_key" in text


@given(st.text(alphabet="abcdefghijkXYZ0123456789-_.~", min_size=4, max_size=40),
       st.sampled_from(["sc://h:1/;token={}", "sc://h:1/;use_ssl=true;token={};session_id=s", "sc://h/; token ={}"]))
def test_a_shown_url_never_holds_its_token(token, form):
    token = "tk" + token
    url = form.format(token)
    shown = shown_url(url)
    assert token not in shown
    assert "token" in shown and "****" in shown
    if "session_id" in url:
        assert shown.endswith(";session_id=s")


# The probe against real TLS and plaintext listeners on 127.0.0.1 (tests/connect/tls_proxy.py).

@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    return self_signed(tmp_path_factory.mktemp("tls"))


def test_a_tls_server_the_url_trusts_passes(certificate):
    with Relay(target=1, tls=certificate) as server:
        url = f"sc://127.0.0.1:{server.port}/;use_ssl=true"
        assert tls_mismatch(url, {ROOTS_VARIABLE: str(certificate[0])}, timeout=5) is None


def test_a_certificate_grpc_does_not_trust_is_named_with_the_variable_that_fixes_it(certificate):
    with Relay(target=1, tls=certificate) as server:
        problem = tls_mismatch(f"sc://127.0.0.1:{server.port}/;use_ssl=true", {}, timeout=5)  # grpc's own roots
    assert problem is not None
    assert "certificate that is not trusted for 127.0.0.1" in problem and ROOTS_VARIABLE in problem


def test_tls_asked_of_a_plaintext_server_fails_at_once(certificate):
    with Relay(target=1) as server:  # accepts, then closes: no TLS
        problem = tls_mismatch(f"sc://127.0.0.1:{server.port}/;token=tok-secret-1", {}, timeout=5)
    assert problem is not None
    assert "does not answer TLS" in problem and "a token" in problem
    assert "tok-secret-1" not in problem


def test_plaintext_asked_of_a_tls_server_says_to_add_use_ssl(certificate):
    with Relay(target=1, tls=certificate) as server:
        problem = tls_mismatch(f"sc://127.0.0.1:{server.port}", {}, timeout=5)
        assert problem is not None and f"sc://127.0.0.1:{server.port}/;use_ssl=true" in problem
        with Relay(target=1) as plain:
            assert tls_mismatch(f"sc://127.0.0.1:{plain.port}", {}, timeout=5) is None
