"""Where a config changed during a run goes: the seam between the components and the command line.

A component that changes the connector's config while it runs (an OAuth
authenticator whose refresh token rotates, :mod:`framework.components.http.token_service`)
hands its changes to the :class:`ConfigSink` the command line built
(``BuildContext.config_sink``). The sink holds the config as last saved,
applies the changes to a copy and hands the whole config to its ``save``
function once. What ``save`` does is the front end's: a CONTROL message in
protocol mode (:func:`framework.protocol.control.control_message_sink`), the
``--config`` file rewritten in Spark mode
(:func:`framework.engine.config_sink.config_file_sink`).

Standard library only: components and front ends both stand on it.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: Changes to a config: the value to set at each path (a tuple of keys; missing objects are created).
Changes = Mapping[tuple[str, ...], Any]


class ConfigSink:
    """Saves the connector's config after changes; thread-safe (changes are applied and saved one at a time)."""

    def __init__(self, config: Mapping[str, Any], save: Callable[[dict[str, Any]], None]):
        self._config = copy.deepcopy(dict(config))
        self._save = save
        self._lock = threading.Lock()
        self.saves = 0  # how many times the config was saved (for reports and tests)

    @property
    def config(self) -> dict[str, Any]:
        """A copy of the config as last saved (or as given)."""
        with self._lock:
            return copy.deepcopy(self._config)

    def rebase(self, config: Mapping[str, Any]) -> None:
        """Start from ``config`` (the config migrations changed what the file holds)."""
        with self._lock:
            self._config = copy.deepcopy(dict(config))

    def update(self, changes: Changes) -> dict[str, Any]:
        """Apply ``changes`` and save the whole config once; the config saved."""
        with self._lock:
            updated = copy.deepcopy(self._config)
            for path, value in changes.items():
                set_path(updated, path, value)
            self._save(updated)
            self._config = updated
            self.saves += 1
            return copy.deepcopy(updated)


def set_path(config: dict[str, Any], path: Sequence[str], value: Any) -> None:
    """Set ``value`` at ``path`` in ``config``, creating the objects on the way (a non-object is replaced)."""
    node = config
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


def get_path(config: Mapping[str, Any], path: Sequence[str]) -> Any:
    """The value at ``path`` in ``config``, or None."""
    node: Any = config
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


__all__ = ["Changes", "ConfigSink", "get_path", "set_path"]
