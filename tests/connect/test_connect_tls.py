"""``run-manifest --remote "sc://host:port/;use_ssl=true;token=..."``: a sync over TLS with a bearer token.

Spark's Connect server (pyspark 4.3's) checks a bearer token
(``SPARK_CONNECT_AUTHENTICATE_TOKEN``, or ``spark.connect.authenticate.token``)
but speaks plaintext HTTP/2 only: TLS is ended in front of it, as a load
balancer would, by a relay of tests/connect/tls_proxy.py with a self-signed
certificate the client is told to trust (``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``).
Two more relays record what crosses the network: ``tap`` the client's bytes
before TLS ends, ``wire`` the same bytes after it (what a plaintext channel
would carry).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter

import pyarrow.parquet as pq
import pytest
from spark.test_pipeline import MANIFEST, SECRET, config_for, data_files, serve

from connect.server import ConnectServer
from connect.test_connect import _env, command
from connect.tls_proxy import Relay, self_signed

pytestmark = pytest.mark.spark

TOKEN = "spark-connect-token-7d1e2f"


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """A Connect server that wants TOKEN, behind TLS: ``(server, tap, tls, wire, certificate)``."""
    # no skip: make setup installs Java 17, and a server that cannot start fails here with its reason
    pytest.importorskip("grpc")
    root = tmp_path_factory.mktemp("spark-connect-tls")
    certificate = self_signed(root / "tls")
    with ConnectServer(root / "server", env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": TOKEN}) as server:
        port = int(server.url.rsplit(":", 1)[1])
        with Relay(port, record=True) as wire, Relay(wire.port, tls=certificate) as tls, \
                Relay(tls.port, record=True) as tap:
            yield server, tap, tls, wire, certificate


@pytest.fixture
def files(tmp_path, fake_api):
    """The shop's manifest and config (its ``api_key`` is ``SECRET``, an ``airbyte_secret``)."""
    shop = serve(fake_api)
    manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
    manifest.write_text(MANIFEST)
    config.write_text(json.dumps(config_for(shop)))
    yield str(manifest), str(config), shop
    shop.release.set()  # wake a handler left hanging


def run(*args: str, cwd, certificate, timeout: float = 240, **env: str) -> tuple[int, list[dict], str]:
    """``run-manifest *args --log-format json``, trusting ``certificate`` (None: grpc's own roots only): exit
    code, JSON events, stderr's other lines and stdout."""
    environ = {name: value for name, value in _env().items()
               if name not in ("SPARK_CONNECT_AUTHENTICATE_TOKEN", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH")}
    if certificate is not None:
        environ["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] = str(certificate[0])
    environ.update(env)
    done = subprocess.run(command("framework.cli.run", *args, "--log-format", "json"), capture_output=True, text=True,
                          cwd=cwd, env=environ, timeout=timeout)
    events, other = [], []
    for line in done.stderr.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            other.append(line)
    return done.returncode, events, "\n".join(other) + done.stdout


def test_a_sync_over_tls_with_a_token_lands_every_record_once_and_nothing_readable_crosses(tls_server, files,
                                                                                         tmp_path):
    server, tap, tls, wire, certificate = tls_server
    output = tmp_path / "out"
    tap.recorded.clear()
    wire.recorded.clear()
    code, events, other = run(files[0], "--config", files[1], "--remote",
                              f"sc://127.0.0.1:{tap.port}/;use_ssl=true;token={TOKEN}", "--output", str(output),
                              cwd=tmp_path, certificate=certificate)
    assert code == 0, (other, events)
    assert not [e for e in events if e["event"] in ("failure", "warning")], events
    summary = next(e for e in events if e["event"] == "summary")
    landed = {stream: [row for path in data_files(output, stream) for row in pq.read_table(path).to_pylist()]
              for stream in ("accounts", "items", "orders", "notes")}
    assert summary["ok"] and summary["records"] == sum(len(rows) for rows in landed.values()) > 0
    assert sorted(row["id"] for row in landed["items"]) == [1, 2, 3, 4, 5, 6, 7, 8]
    for stream in ("accounts", "items", "orders"):
        counts = Counter(row["id"] for row in landed[stream])
        assert counts and max(counts.values()) == 1, (stream, counts)  # every id exactly once
    assert len(landed["notes"]) == len(files[2].notes)  # a stream without a schema: its records as JSON text
    # the plan carried the config (its secret) to the server: readable behind the TLS end, not before it
    assert SECRET.encode() in wire.recorded
    assert len(tap.recorded) > 10_000
    assert SECRET.encode() not in tap.recorded and TOKEN.encode() not in tap.recorded
    assert b"api_key" not in tap.recorded and b"manifest" not in tap.recorded
    assert TOKEN not in other and SECRET not in other and TOKEN not in json.dumps(events)


def test_a_wrong_token_or_a_tls_mismatch_exits_2_at_once_naming_the_fix(tls_server, files, tmp_path):
    server, tap, tls, wire, certificate = tls_server
    began = time.monotonic()
    # a wrong token, from the environment (as a scheduler passes it, out of the process list)
    code, events, other = run(files[0], "--config", files[1], "--remote", f"sc://127.0.0.1:{tls.port}/;use_ssl=true",
                              "--output", str(tmp_path / "a"), "--no-check", cwd=tmp_path, certificate=certificate,
                              SPARK_CONNECT_AUTHENTICATE_TOKEN="not-the-token")
    assert code == 2, other
    failure = next(e for e in events if e["event"] == "failure")["error"]
    assert "refused the connection" in failure and "SPARK_CONNECT_AUTHENTICATE_TOKEN" in failure
    assert "not-the-token" not in failure
    # TLS asked of the plaintext server, and plaintext asked of the TLS end: said before the client's retries
    for remote, said in ((f"sc://127.0.0.1:{wire.port}/;token={TOKEN}", "does not answer TLS"),
                         (f"sc://127.0.0.1:{tls.port}", "answers TLS")):
        code, events, other = run(files[0], "--config", files[1], "--remote", remote, "--no-check",
                                  "--output", str(tmp_path / "b"), cwd=tmp_path, certificate=certificate)
        assert code == 2, other
        failure = next(e for e in events if e["event"] == "failure")["error"]
        assert said in failure and TOKEN not in failure, failure
    # a certificate the client does not trust (grpc's own roots only)
    code, events, other = run(files[0], "--config", files[1], "--remote", f"sc://127.0.0.1:{tls.port}/;use_ssl=true",
                              "--no-check", "--output", str(tmp_path / "c"), cwd=tmp_path, certificate=None)
    assert code == 2, other
    failure = next(e for e in events if e["event"] == "failure")["error"]
    assert "not trusted for 127.0.0.1" in failure and "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH" in failure
    assert time.monotonic() - began < 120
