"""Airbyte's CONTROL message of type CONNECTOR_CONFIG, and the config sink that writes it.

In protocol mode a config changed during the run (a migrated config, rotated
OAuth tokens) reaches the platform as a CONTROL message on stdout, which the
platform persists in place of the config it started the connector with.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import IO, Any

from framework.components.config_sink import ConfigSink
from framework.protocol import messages


def control_message(config: Mapping[str, Any], emitted_at_ms: float) -> dict[str, Any]:
    """Airbyte's CONTROL message announcing a new connector config (``connectorConfig.config``)."""
    return {"type": "CONTROL", "control": {"type": "CONNECTOR_CONFIG", "emitted_at": float(emitted_at_ms),
                                           "connectorConfig": {"config": dict(config)}}}


def control_message_sink(config: Mapping[str, Any], out: IO[bytes],
                         now_ms: Callable[[], float] = lambda: time.time() * 1000) -> ConfigSink:
    """Protocol mode: each save is one CONTROL message (CONNECTOR_CONFIG) carrying the whole config.

    The message is written with one ``write`` call (a buffered stdout does not interleave it with
    the records other threads write) and flushed at once: the platform must get it even if the
    run dies right after.
    """

    def save(updated: dict[str, Any]) -> None:
        out.write(messages.encode(control_message(updated, now_ms())))
        out.flush()

    return ConfigSink(config, save)


__all__ = ["control_message", "control_message_sink"]
