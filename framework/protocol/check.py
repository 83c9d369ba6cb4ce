"""The connection check: read the first page of each check stream."""

from __future__ import annotations

from collections.abc import Sequence

from framework.engine.connector import Connector
from framework.engine.plan import open_sync
from framework.protocol.read import describe_failure


def check_connection(connector: Connector, names: Sequence[str] | None = None) -> tuple[bool, str | None]:
    """(True, None) when every check stream (or each of ``names``) returns a first page (even an empty one),
    else (False, reason)."""
    if not connector.streams:  # a CheckDynamicStream whose resolvers made nothing, say
        return False, "the source has no streams to connect to"
    try:
        names = connector.check_streams if names is None else tuple(names)
    except Exception as exc:  # noqa: BLE001 - a check reports, it does not crash
        return False, connector.mask(str(exc))
    for name in names:
        try:
            stream = connector.stream(name)
            sync = open_sync(connector, stream, None, incremental=False)
            units = sync.plan()
            if units:
                for _records in sync.read(units[0]):
                    break
        except Exception as exc:  # noqa: BLE001 - a check reports, it does not crash
            return False, connector.mask(describe_failure(exc, name))
    return True, None


__all__ = ["check_connection"]
