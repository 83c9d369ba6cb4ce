"""Fixtures for tests that land on S3: a local S3 server (moto) started once per session, and buckets on it.

``s3_endpoint`` is the server's URL; ``s3_client`` a boto3 client for it;
``s3_bucket`` a fresh bucket per test; ``s3_settings(**more)`` makes
``DestinationSettings`` that write to that bucket.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

S3_KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
S3_REGION = "us-east-1"


@pytest.fixture(scope="session")
def s3_endpoint():
    """A moto S3 server on 127.0.0.1 and a free port, for the whole session."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="session")
def s3_endpoint_process():
    """A moto S3 server in a process of its own, for the whole session: for clients that hold the GIL while they
    wait for an answer (deltalake's object store), which would never let a server thread of this process answer."""
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"moto's S3 server did not start (exit {server.poll()})", pytrace=False)
                time.sleep(0.1)  # waiting for a real server process to listen
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def s3_client(s3_endpoint):
    import boto3

    return boto3.client("s3", endpoint_url=s3_endpoint, region_name=S3_REGION, **S3_KEYS)


@pytest.fixture
def s3_bucket(s3_client) -> str:
    name = f"test-{uuid.uuid4().hex[:16]}"
    s3_client.create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_settings(s3_endpoint, s3_bucket) -> Callable[..., Any]:
    """``DestinationSettings`` for the test's bucket; keyword arguments override or add settings."""
    from framework.models.destination import DestinationSettings

    def make(**more: Any) -> DestinationSettings:
        data = {"s3_bucket_name": s3_bucket, "s3_bucket_path": "data", "s3_bucket_region": S3_REGION,
                "s3_endpoint": s3_endpoint, "access_key_id": S3_KEYS["aws_access_key_id"],
                "secret_access_key": S3_KEYS["aws_secret_access_key"]}
        data.update(more)
        return DestinationSettings.model_validate(data)

    return make
