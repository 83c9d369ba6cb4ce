"""Sync-wide services that the driver owns and the Spark tasks call: one token, one API budget.

An API's limits and tokens belong to the whole sync, not to one task: N tasks
that each refreshed their own OAuth token would invalidate each other's
rotating refresh tokens, and N per-task rate limiters would send N times the
allowed rate. So a component that needs sync-wide state offers a *service*
while it is built (:meth:`BuildContext.service <framework.components.context.BuildContext.service>`):
a named handler taking one picklable payload and returning one picklable
answer. On the driver (and in protocol mode, one process) the handler runs in
place. The Spark pipeline serves the driver connector's handlers from a
:class:`Coordinator` (a TCP listener on the driver, authenticated with a
random key per sync) and hands its :class:`CoordinatorAddress` to the tasks;
inside a task (:func:`attached`) the same component's service calls go to the
driver's handler instead of its own.

The wire is :mod:`multiprocessing.connection` (pickled messages, HMAC
challenge with the key), one connection per task process, reconnected once
when broken. Handlers run on the driver in one thread per connection: they
must be thread-safe.

Where the executors cannot reach the driver (Spark Connect: the "driver" is
the client, and its address may not be routable from the cluster), no
coordinator is attached and each task uses its own handler: the components
document what that means for them.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from framework.errors import FrameworkError

if TYPE_CHECKING:  # imported where used: protocol mode and validate-manifest never serve or call
    from multiprocessing.connection import Connection

log = logging.getLogger(__name__)

Handler = Callable[[Any], Any]

#: How long a task waits for the driver's answer before the call fails (seconds).
CALL_TIMEOUT = 120.0


class CoordinatorError(FrameworkError):
    """A call to a sync-wide service failed: the driver could not be reached, or its handler raised."""


class CoordinatorAddress(Struct, frozen=True):
    """Where the tasks reach the driver's services, and the key that proves they belong to the sync."""

    host: str
    port: int
    authkey: bytes

    def __repr__(self) -> str:  # the key stays out of logs and task descriptions
        return f"CoordinatorAddress({self.host!r}, {self.port})"


class Coordinator:
    """The driver's side: serves ``handlers`` (by name) to the tasks of one sync until closed."""

    def __init__(self, handlers: Mapping[str, Handler], host: str = "127.0.0.1", advertised: str | None = None):
        self._handlers = handlers
        self._key = secrets.token_bytes(32)
        from multiprocessing.connection import Listener

        self._listener = Listener((host, 0), authkey=self._key)
        bound_host, port = self._listener.address
        self.address = CoordinatorAddress(advertised or bound_host, int(port), self._key)
        self._closed = threading.Event()
        self._open: set[Connection] = set()
        self._open_lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="sync-coordinator", daemon=True)
        self._thread.start()

    def __enter__(self) -> Coordinator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        # Wake the accept loop with a connection of our own (Listener.close alone does not interrupt accept).
        with contextlib.suppress(OSError):
            socket.create_connection((self.address.host, self.address.port), timeout=1).close()
        self._listener.close()
        self._thread.join(timeout=5)
        with self._open_lock:
            for connection in list(self._open):
                with contextlib.suppress(OSError):
                    connection.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                connection = self._listener.accept()
            except (OSError, EOFError):  # a failed handshake (wrong key, our own wake-up), or closed
                continue
            except Exception as exc:  # noqa: BLE001 - multiprocessing raises AuthenticationError and friends
                log.debug("coordinator: a connection was refused: %s", exc)
                continue
            if self._closed.is_set():
                connection.close()
                break
            with self._open_lock:
                self._open.add(connection)
            threading.Thread(target=self._serve, args=(connection,), name="sync-coordinator-call",
                             daemon=True).start()

    def _serve(self, connection: Connection) -> None:
        try:
            self._answer(connection)
        finally:
            with self._open_lock:
                self._open.discard(connection)
            with contextlib.suppress(OSError):
                connection.close()
            self._gone(id(connection))

    def _gone(self, caller: int) -> None:
        """Tell the handlers that keep something per caller (``disconnected``) that ``caller``'s process left."""
        for handler in self._handlers.values():
            disconnected = getattr(handler, "disconnected", None)
            if disconnected is None:
                continue
            try:
                disconnected(caller)
            except Exception as exc:  # noqa: BLE001 - one handler's trouble must not stop the others' cleanup
                log.debug("coordinator: a handler's disconnect failed: %s", exc)

    def _answer(self, connection: Connection) -> None:
        _serving.active = True  # a handler's own service calls run in place here, even while a task is attached
        _serving.caller = id(connection)
        while not self._closed.is_set():
            try:
                name, payload = connection.recv()
            except (EOFError, OSError, TypeError):  # closed by the task, or by close() here (TypeError)
                return
            handler = self._handlers.get(name)
            try:
                if handler is None:
                    raise CoordinatorError(f"the driver has no service {name!r}")
                answer: tuple[str, Any] = ("ok", handler(payload))
            except Exception as exc:  # noqa: BLE001 - handed to the caller, which raises it
                answer = ("error", str(exc) if isinstance(exc, FrameworkError) else f"{type(exc).__name__}: {exc}")
            try:
                connection.send(answer)
            except (OSError, ValueError):
                return


# --- the tasks' side -------------------------------------------------------------------------------------------

_attached: CoordinatorAddress | None = None
# The driver runs tasks in place while Spark starts (framework.spark.scheduling): attached then holds its own
# coordinator, and a handler on a serving thread that calls another service must not call itself over TCP.
_serving = threading.local()
_connections: dict[CoordinatorAddress, Connection] = {}
_lock = threading.Lock()


@contextlib.contextmanager
def attached(address: CoordinatorAddress | None) -> Iterator[None]:
    """Within this block (a Spark task), service calls go to the driver at ``address`` (None: run in place)."""
    global _attached
    previous, _attached = _attached, address
    try:
        yield
    finally:
        _attached = previous


def current() -> CoordinatorAddress | None:
    """The driver's address that service calls go to in this process now, or None (they run in place)."""
    return _attached


def call(address: CoordinatorAddress, name: str, payload: Any, timeout: float = CALL_TIMEOUT) -> Any:
    """Call the driver's service ``name`` with ``payload``; its answer, or :class:`CoordinatorError`."""
    with _lock:  # one call at a time per process: the connection is shared by the task's threads
        for attempt in (1, 2):
            connection = _connection(address)
            try:
                connection.send((name, payload))
                if not connection.poll(timeout):
                    _drop(address)
                    raise CoordinatorError(f"the driver did not answer the {name!r} call within {timeout:.0f} s")
                status, answer = connection.recv()
                break
            except (EOFError, OSError) as exc:
                _drop(address)
                if attempt == 2:
                    raise CoordinatorError(f"the driver's {name!r} service could not be reached: {exc}") from exc
    if status != "ok":
        raise CoordinatorError(f"the driver's {name!r} service failed: {answer}")
    return answer


def caller() -> int | None:
    """Within a handler: which task connection the call came through (None: a call in place). A handler that
    keeps something per caller offers ``disconnected(caller)``, called when that connection ends."""
    return getattr(_serving, "caller", None)


def routed(name: str, handler: Handler) -> Handler:
    """``handler``, or (inside :func:`attached` with an address) a call of the driver's service ``name``."""

    def route(payload: Any) -> Any:
        address = _attached
        if address is None or getattr(_serving, "active", False):
            return handler(payload)
        return call(address, name, payload)

    return route


def _connection(address: CoordinatorAddress) -> Connection:
    found = _connections.get(address)
    if found is None or found.closed:
        try:
            from multiprocessing.connection import Client

            found = Client((address.host, address.port), authkey=address.authkey)
        except OSError as exc:
            raise CoordinatorError(f"the driver's services at {address.host}:{address.port} could not be reached "
                                   f"({exc}); on a cluster, spark.driver.host must be an address the executors "
                                   f"reach") from exc
        _connections[address] = found
    return found


def _drop(address: CoordinatorAddress) -> None:
    found = _connections.pop(address, None)
    if found is not None:
        with contextlib.suppress(OSError):
            found.close()


__all__ = ["CALL_TIMEOUT", "Coordinator", "CoordinatorAddress", "CoordinatorError", "attached", "call", "caller",
           "current", "routed"]
