"""A local S3-compatible server for the example, with the bucket of ``destination-s3.json`` made.

``python examples/shop/local_s3.py [--port 9000] [--destination examples/shop/destination-s3.json]``
starts moto's S3 server (installed with the test extras: ``make setup``) on
127.0.0.1, creates the bucket the destination config names, prints its
address and serves until Ctrl-C. Any S3 endpoint works the same way (MinIO,
Ceph, AWS): change ``s3_endpoint``, the keys and the bucket in the config.

Then, in another terminal, with the shop API running (``python examples/shop/api.py``)::

    run-manifest examples/shop/manifest.yaml --config examples/shop/config.json \\
        --destination examples/shop/destination-s3.json

moto keeps objects in memory: they are gone when the server stops.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent


class LocalS3:
    """moto's S3 server in a background thread, with the destination's bucket created::

        with LocalS3(destination) as s3:
            s3.endpoint  # http://127.0.0.1:<port>
    """

    def __init__(self, destination: dict[str, Any], port: int = 0):
        from moto.server import ThreadedMotoServer

        self.destination = destination
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.endpoint = ""

    def __enter__(self) -> LocalS3:
        import boto3

        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        client = boto3.client("s3", endpoint_url=self.endpoint,
                              region_name=self.destination.get("s3_bucket_region") or "us-east-1",
                              aws_access_key_id=self.destination.get("access_key_id"),
                              aws_secret_access_key=self.destination.get("secret_access_key"))
        client.create_bucket(Bucket=self.destination["s3_bucket_name"])
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a local S3 (moto) with the example's bucket.")
    parser.add_argument("--port", type=int, default=9000, help="port to listen on (default 9000)")
    parser.add_argument("--destination", default=str(HERE / "destination-s3.json"),
                        help="destination config whose bucket is created (default: the example's)")
    args = parser.parse_args(argv)
    destination = orjson.loads(Path(args.destination).read_bytes())
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with LocalS3(destination, args.port) as s3:
            print(f"S3 at {s3.endpoint}, bucket `{destination['s3_bucket_name']}` ready; Ctrl-C stops it",
                  flush=True)
            stop.wait()
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"local_s3.py: cannot listen on 127.0.0.1:{args.port} ({exc}); pick another with --port and "
              "change `s3_endpoint` in the destination config to match", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
