"""TLS in front of a Spark Connect server, for tests: a self-signed certificate and a TLS-terminating relay.

Spark's Connect server speaks plaintext HTTP/2 only (its one security option is
the bearer token, ``spark.connect.authenticate.token``); TLS is put in front of
it, as a load balancer or Envoy would in production. :class:`Relay` listens on
127.0.0.1 and copies bytes both ways to a target port: with ``tls`` it ends a
TLS session first (offering ALPN ``h2``, which gRPC clients insist on), and it
can keep a copy of what the client sent (``recorded``), so a test can look at
the bytes on the wire.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost (its own CA) and its key, as PEM files in ``folder``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "spark-connect-test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = folder / "server.pem", folder / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@dataclass
class Relay:
    """Copies bytes between clients on ``127.0.0.1:port`` and ``127.0.0.1:target``, in a thread of its own."""

    target: int
    tls: tuple[Path, Path] | None = None  # (certificate, key): end a TLS session before relaying
    record: bool = False  # keep what clients sent (after TLS, when ended here)
    port: int = 0
    recorded: bytearray = field(default_factory=bytearray, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> Relay:
        context = None
        if self.tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
            context.set_alpn_protocols(["h2"])
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        async def serve() -> None:
            server = await asyncio.start_server(self._client, "127.0.0.1", 0, ssl=context)
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            async with server:
                await server.serve_forever()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(serve())
            except (asyncio.CancelledError, RuntimeError):
                pass

        self._thread = threading.Thread(target=run, name="tls-relay", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the relay did not start")
        return self

    @property
    def url_host(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._pipe(reader, up_writer, self.record), self._pipe(up_reader, writer, False),
                             return_exceptions=True)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, record: bool) -> None:
        try:
            while chunk := await reader.read(65536):
                if record:
                    self.recorded.extend(chunk)
                writer.write(chunk)
                await writer.drain()
        finally:
            writer.close()

    def stop(self) -> None:
        if self._loop is None:
            return
        def cancel_all() -> None:
            for task in asyncio.all_tasks():
                task.cancel()

        self._loop.call_soon_threadsafe(cancel_all)
        if self._thread is not None:
            self._thread.join(5)
        self._loop = None

    def __enter__(self) -> Relay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
