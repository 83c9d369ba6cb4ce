"""The channel a Spark Connect URL opens, and whether a sync's secrets may travel on it.

pyspark's Connect client reads ``sc://host:port/;name=value;...`` (the
parameters after a slash) and opens one of three gRPC channels:

* ``use_ssl=true``: TLS (grpc's ``ssl_channel_credentials``; the trusted roots
  are grpc's own, or the PEM file ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`` names);
* ``token=...``: a bearer token in every call's ``authorization`` header, which
  the server checks against its ``spark.connect.authenticate.token`` (or
  ``SPARK_CONNECT_AUTHENTICATE_TOKEN``). A token makes the channel TLS too,
  except to the host written ``localhost``, where grpc's local credentials
  carry it (loopback connections only, not encrypted). With no ``token`` in
  the URL, ``SPARK_CONNECT_AUTHENTICATE_TOKEN`` in the client's environment is
  the token (and so keeps it out of the process list);
* neither: plaintext HTTP/2.

Everything a sync sends the server travels on that channel: the plan holds
the task functions, pickled with the manifest, the config (its secrets
included), the custom components' code and the destination's settings. So a
sync whose config holds secrets (fields ``airbyte_secret: true`` in the spec)
or a destination with S3 keys is refused on a plaintext channel to another
machine (:func:`plaintext_refusal`) unless ``--allow-plaintext`` says the
network is private; a loopback address (the server on this machine, or an SSH
tunnel's end) is no other machine.
"""

from __future__ import annotations

import contextlib
import importlib.util
import ipaddress
import os
import re
import socket
import ssl
import urllib.parse
from collections.abc import Mapping, Sequence

from msgspec import Struct

from framework.errors import ConfigError

#: The environment variable pyspark's client takes the token from when the URL has none (the server reads it too).
TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
#: Where grpc finds the certificates it trusts for TLS (a PEM file), instead of its own roots.
ROOTS_VARIABLE = "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"
_DEFAULT_PORT = 15002
_TOKEN_PARAM = re.compile(r"(;\s*token\s*=)[^;]*", re.IGNORECASE)


class ConnectChannel(Struct, frozen=True):
    """What the Connect client opens for a URL: the host and port, whether the channel is TLS, whether calls
    carry a bearer token, and whether the host is this machine (a loopback address or ``localhost``)."""

    host: str
    port: int
    tls: bool
    token: bool
    loopback: bool


def connect_channel(url: str, environ: Mapping[str, str] | None = None) -> ConnectChannel:
    """The channel pyspark's client opens for ``url`` (as its ``ChannelBuilder`` reads it); ``local...`` (a
    server pyspark starts itself) is loopback. A URL the client would refuse is a :class:`ConfigError`."""
    environ = os.environ if environ is None else environ
    if not url.startswith("sc://"):
        return ConnectChannel("localhost", _DEFAULT_PORT, tls=False, token=bool(environ.get(TOKEN_VARIABLE)),
                              loopback=True)
    parsed = urllib.parse.urlparse("http" + url[2:])
    fix = "write it as sc://host:port/;name=value (a slash before the parameters, each name=value)"
    if ";" in parsed.netloc or parsed.path not in ("", "/"):
        raise ConfigError(f"the Spark Connect URL {shown_url(url)} has its parameters in the wrong place; {fix}")
    params: dict[str, str] = {}
    for part in parsed.params.split(";") if parsed.params else ():
        pair = part.split("=")
        if len(pair) != 2:
            raise ConfigError(f"the Spark Connect URL {shown_url(url)} has a parameter that is not name=value; {fix}")
        params[pair[0]] = urllib.parse.unquote(pair[1])
    try:
        host, port = parsed.hostname, parsed.port
    except ValueError:
        host, port = None, None
    if not host:
        raise ConfigError(f"the Spark Connect URL {shown_url(url)} has no host, or a port that is not a number; "
                          "give sc://host:port (15002 is the server's default port)")
    token = params.get("token", environ.get(TOKEN_VARIABLE))
    use_ssl = params.get("use_ssl", "").lower() == "true"
    # pyspark's ChannelBuilder.toChannel: TLS when use_ssl, or a token to any host but one written `localhost`
    tls = use_ssl or (token is not None and host != "localhost")
    return ConnectChannel(host, port or _DEFAULT_PORT, tls=tls, token=token is not None, loopback=_loopback(host))


def shown_url(url: str) -> str:
    """``url`` as messages show it: a ``token`` parameter's value replaced by ``****``."""
    return _TOKEN_PARAM.sub(r"\1****", url)


def plaintext_refusal(url: str, secrets: Sequence[str], *, allowed: bool,
                      environ: Mapping[str, str] | None = None) -> tuple[str, bool] | None:
    """What to say when ``secrets`` (where the sync's secrets are: config fields, the destination's keys)
    would go to another machine's Connect server in the clear: ``(text, refused)``; refused unless ``allowed``
    (``--allow-plaintext``), else a warning. None when the channel is TLS, the host is this machine, or
    there is no secret to send."""
    channel = connect_channel(url, environ)
    if channel.tls or channel.loopback or not secrets:
        return None
    shown = shown_url(url)
    what = (f"the Spark Connect server at {channel.host}:{channel.port} is reached without TLS, and every sync "
            f"sends it the plan with the config inside, so the secrets in {', '.join(secrets)} would cross the "
            "network in the clear")
    if allowed:
        return f"{what} (--allow-plaintext: the network is taken to be private)", False
    secure = f"sc://{channel.host}:{channel.port}/;use_ssl=true"
    return (f"{what}; give {secure} (a TLS-terminating proxy in front of the server, the bearer token in "
            f"{TOKEN_VARIABLE} or `;token=...`), or reach the server through an SSH tunnel "
            f"(sc://localhost:PORT), or pass --allow-plaintext if the network is private (--remote {shown}; "
            "docs/cluster.md, \"Securing the channel\")", True)


def tls_mismatch(url: str, environ: Mapping[str, str] | None = None, timeout: float = 10.0) -> str | None:
    """What is wrong between the URL's channel and what the server at its address speaks, found in one TLS
    handshake (and a second, verified, for a TLS channel), or None. The Connect client retries a failed
    handshake for minutes; this says at once that the server does not answer TLS (``use_ssl=true``, or a
    token, to a plaintext server), that it does (``use_ssl=true`` missing), or that its certificate is not
    trusted by the roots grpc uses (``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``, else grpc's own).
    A server that cannot be reached is the caller's to report."""
    environ = os.environ if environ is None else environ
    channel = connect_channel(url, environ)
    if not url.startswith("sc://") or (not channel.tls and channel.host == "localhost" and channel.token):
        return None  # a server pyspark starts, or grpc's local credentials (loopback)
    where = f"the Spark Connect server at {channel.host}:{channel.port}"
    unverified = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE
    speaks = _handshake(unverified, channel, timeout) is None
    if channel.tls and not speaks:
        why = "use_ssl=true" if "use_ssl=true" in url.lower() else "a token (which makes the channel TLS)"
        return (f"{where} does not answer TLS, but {shown_url(url)} asks for it ({why}); put a TLS-terminating "
                "proxy in front of the server and give its address, or reach the server on this machine "
                "(sc://localhost:PORT, through an SSH tunnel) without use_ssl")
    if not channel.tls and speaks:
        return (f"{where} answers TLS, but {shown_url(url)} asks for a plaintext channel; add use_ssl=true "
                f"(sc://{channel.host}:{channel.port}/;use_ssl=true)")
    if not channel.tls:
        return None
    roots = environ.get(ROOTS_VARIABLE) or _grpc_roots()
    if roots is None:
        return None
    try:
        verified = ssl.create_default_context(cafile=roots)
        verified.verify_flags &= ~ssl.VERIFY_X509_STRICT  # as lenient as grpc (Python 3.13 turns strict checks on)
    except (OSError, ssl.SSLError) as exc:
        return f"{ROOTS_VARIABLE}={roots} cannot be read as PEM certificates ({exc}); name the CA's PEM file"
    problem = _handshake(verified, channel, timeout)
    if isinstance(problem, ssl.SSLCertVerificationError):
        return (f"{where} answers TLS with a certificate that is not trusted for {channel.host} "
                f"({problem.verify_message}); name the CA that signed it in {ROOTS_VARIABLE} (a PEM file), or "
                "give the host name the certificate is made for")
    return None


def _handshake(context: ssl.SSLContext, channel: ConnectChannel, timeout: float) -> Exception | None:
    """The error of a TLS handshake with the server offering HTTP/2, or None when it completed."""
    context.set_alpn_protocols(["h2"])
    try:
        with socket.create_connection((channel.host.strip("[]"), channel.port), timeout=timeout) as raw:
            with context.wrap_socket(raw, server_hostname=channel.host.strip("[]")) as wrapped:
                with contextlib.suppress(OSError):
                    wrapped.unwrap()
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError; a reset or a closed socket too
        return exc
    return None


def _grpc_roots() -> str | None:
    """The PEM file of the roots grpc trusts by default (in its package), or None when it is not there."""
    spec = importlib.util.find_spec("grpc")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(next(iter(spec.submodule_search_locations)), "_cython", "_credentials", "roots.pem")
    return path if os.path.exists(path) else None


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


__all__ = ["ROOTS_VARIABLE", "TOKEN_VARIABLE", "ConnectChannel", "connect_channel", "plaintext_refusal",
           "shown_url", "tls_mismatch"]
