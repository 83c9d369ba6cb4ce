"""A TCP proxy that injects faults on the wire between the framework and an API.

The fake API (:mod:`fakes.api_server`) answers well-formed HTTP; real networks
also cut bodies short, reset connections and stall. :class:`FaultProxy`
listens on 127.0.0.1, forwards each connection to the upstream address, and
applies the next queued :class:`Fault` to the response of that connection
(one fault per connection; connections without a queued fault pass through)::

    with FaultProxy(api.port) as proxy:
        proxy.inject(Fault("truncate", after_bytes=200))
        ...  # point the code under test at proxy.url

Kinds: ``truncate`` (forward ``after_bytes`` bytes of the response, then
close), ``reset`` (send ``after_bytes`` bytes, then reset the connection with
RST), ``stall`` (forward ``after_bytes`` bytes, then hold the connection open
and silent for ``seconds``), ``refuse`` (close the client's connection at
once, without a byte). Connections are served in threads; the proxy keeps
the faults it applied in :attr:`FaultProxy.applied`.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections import deque
from dataclasses import dataclass
from typing import Literal, Self


@dataclass(frozen=True)
class Fault:
    kind: Literal["truncate", "reset", "stall", "refuse"]
    after_bytes: int = 0
    seconds: float = 0.0


class FaultProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self._faults: deque[Fault] = deque()
        self.applied: list[Fault] = []
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True, name="fault-proxy")

    def inject(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        try:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accept() below (close alone does not)
        except OSError:
            pass
        self._server.close()
        self._thread.join(timeout=5)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                fault = self._faults.popleft() if self._faults else None
                if fault is not None:
                    self.applied.append(fault)
            threading.Thread(target=self._serve, args=(client, fault), daemon=True).start()

    def _serve(self, client: socket.socket, fault: Fault | None) -> None:
        if fault is not None and fault.kind == "refuse":
            _reset(client)
            return
        try:
            upstream = socket.create_connection(self.upstream, timeout=30)
        except OSError:
            _reset(client)
            return
        done = threading.Event()
        threading.Thread(target=_pump, args=(client, upstream, done), daemon=True).start()  # requests: as they are
        sent = 0
        try:
            while not done.is_set():
                data = upstream.recv(65536)
                if not data:
                    break
                if fault is not None and sent + len(data) > fault.after_bytes:
                    client.sendall(data[: max(0, fault.after_bytes - sent)])
                    if fault.kind == "stall":
                        self._stop.wait(fault.seconds)
                    if fault.kind == "reset":
                        try:  # wake the pump thread reading the client first, so the close below is the last use
                            client.shutdown(socket.SHUT_RD)
                        except OSError:
                            pass
                        done.wait(5)
                        _reset(client)
                        upstream.close()
                        return
                    break
                client.sendall(data)
                sent += len(data)
        except OSError:
            pass
        finally:
            for end in (client, upstream):
                try:  # shutdown first: it sends FIN and wakes the pump thread blocked reading this socket
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                try:
                    end.close()
                except OSError:
                    pass


def _pump(source: socket.socket, target: socket.socket, done: threading.Event) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        done.set()


def _reset(sock: socket.socket) -> None:
    """Close with RST instead of FIN (SO_LINGER with a zero timeout)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    except OSError:
        pass


__all__ = ["Fault", "FaultProxy"]
